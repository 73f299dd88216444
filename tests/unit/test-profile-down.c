/* Downward profiles worked by hand from the paper's examples and the appendix's algorithm. */
#include <errno.h>
#include <math.h>

#include "folded-tree.h"
#include "paper-examples.h"
#include "profile.h"
#include "tap.h"

static void test_process_db(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(process_db);
        _cleanup_(profile_freep) struct profile *p = NULL;

        ok(profile_down(t, "main", 0, &p) == 0, "process_db: profile rooted at main");
        is_int(t->total, 2676, "2676 samples, as in the paper");
        is_int(profile_hits(p, "main"), 2676, "(main) [2676]");
        is_int(profile_hits(p, "main uniquify_db"), 2355, "(main uniquify_db) [2355]");
        is_int(profile_hits(p, "main uniquify_db qsort"), 1820, "(main uniquify_db qsort) [1820]");
        is_int(profile_hits(p, "main print_salary_list"), 303, "(main print_salary_list) [303]");
        is_int(profile_hits(p, "main print_salary_list qsort"), 0, "(main print_salary_list qsort) [0]");
        ok(fabs(profile_fraction(p, 1820) - 0.68012) < 0.000005,
           "0.68012 of the time, as printed in the paper");
        ok(fabs(profile_fraction(p, 2355) - 0.88004) < 0.000005, "0.88004 for (main uniquify_db)");
        is_int(p->entries[0].hits, 2676, "sorted by hits: (main) first");
        ok(p->entries[0].len == 1, "and it is the one-name path");
        is_int(profile_n_paths(p), 11, "one entry per distinct call path below main");
}

static void test_forms_mid_stack_root(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(forms_folded);
        _cleanup_(profile_freep) struct profile *p = NULL;

        is_int(t->total, 614, "forms: 614 samples");
        ok(profile_down(t, "db_get_property", 0, &p) == 0, "forms: rooted mid-stack at db_get_property");
        is_int(profile_hits(p, "db_get_property"), 530, "(db_get_property) [530]");
        is_int(profile_hits(p, "db_get_property db_read_record"), 530,
               "(db_get_property db_read_record) [530]");
        is_int(profile_n_paths(p), 2, "only the two paths below it");
        p = profile_free(p);

        ok(profile_down(t, "address_information", 0, &p) == 0, "rooted at address_information");
        is_int(profile_hits(p, "address_information"), 422,
               "(address_information) [422], summed over 5 callers");
}

static void test_direct_recursion(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("main;f;f;g 2\n"
                                                                              "main;g 1\n");
        _cleanup_(profile_freep) struct profile *p = NULL;

        ok(profile_down(t, "f", 0, &p) == 0, "profile rooted at f");
        is_int(profile_hits(p, "f"), 2, "(f): 2 of 3 samples pass through f");
        is_int(profile_hits(p, "f f"), 2, "(f f): f calls itself");
        is_int(profile_hits(p, "f g"), 2, "(f f g) is canonicalized to (f g)");
        is_int(profile_hits(p, "f f g"), -1, "and there is no path (f f g)");
        is_int(profile_n_paths(p), 3, "three paths in all");
        ok(fabs(profile_fraction(p, 2) - 2.0 / 3.0) < 1e-12, "fractions are of all 3 hits");
}

static void test_deep_direct_recursion(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("main;f;f;f;f;g 5\n");
        _cleanup_(profile_freep) struct profile *p = NULL;

        ok(profile_down(t, "f", 0, &p) == 0, "f recursing four deep");
        is_int(profile_hits(p, "f"), 5, "(f) counted once per sample, not four times");
        is_int(profile_hits(p, "f f"), 5, "(f f) once too: its record is locked while inside it");
        is_int(profile_hits(p, "f g"), 5, "(f g)");
        is_int(profile_n_paths(p), 3, "no longer paths appear");
}

static void test_mutual_recursion(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("main;a;b;a;b;c 1\n"
                                                                              "main;a;c 1\n");
        _cleanup_(profile_freep) struct profile *p = NULL;

        ok(profile_down(t, "a", 0, &p) == 0, "a and b call each other");
        is_int(profile_hits(p, "a"), 2, "(a) [2]");
        is_int(profile_hits(p, "a b"), 1, "(a b) [1]");
        is_int(profile_hits(p, "a b a"), 1, "(a b a) [1]: the path back to a is kept");
        is_int(profile_hits(p, "a b c"), 1, "(a b a b c) is canonicalized to (a b c)");
        is_int(profile_hits(p, "a c"), 1, "(a c) [1]");
        is_int(profile_n_paths(p), 5, "five paths");
}

static void test_lock(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("f;g;f;g 1\n");
        _cleanup_(profile_freep) struct profile *p = NULL;

        ok(profile_down(t, "f", 0, &p) == 0, "f g f g");
        is_int(profile_hits(p, "f g"), 1, "(f g) reached twice on one stack, counted once");
        is_int(profile_hits(p, "f g f"), 1, "(f g f) [1]");
        is_int(profile_n_paths(p), 3, "(f), (f g), (f g f)");
}

static void test_root_twice(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("main;f;x;f;y 3\n"
                                                                              "main;a;f;b 1\n");
        _cleanup_(profile_freep) struct profile *p = NULL;

        ok(profile_down(t, "f", 0, &p) == 0, "f twice on one stack, and mid-stack on another");
        is_int(profile_hits(p, "f"), 4, "(f) [4]: each sample once");
        is_int(profile_hits(p, "f x"), 3, "(f x) [3]");
        is_int(profile_hits(p, "f x f"), 3, "(f x f) [3]");
        is_int(profile_hits(p, "f y"), 3, "(f x f y) canonicalized to (f y)");
        is_int(profile_hits(p, "f b"), 1, "(f b) [1] under the other caller");
        is_int(profile_n_paths(p), 5, "five paths");
}

static void test_one_frame_and_absent(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("main 5\nother 3\n");
        _cleanup_(profile_freep) struct profile *p = NULL;

        ok(profile_down(t, "main", 0, &p) == 0, "one-frame stacks");
        is_int(profile_hits(p, "main"), 5, "(main) [5]");
        ok(fabs(profile_fraction(p, 5) - 0.625) < 1e-12, "5 of 8 hits");
        is_int(profile_n_paths(p), 1, "one path");
        ok(profile_down(t, "nowhere", 0, &p) == -ENOENT, "a root in no sample: -ENOENT");
}

static void test_empty(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("");
        _cleanup_(profile_freep) struct profile *p = NULL;

        is_int(t->total, 0, "empty input: no hits");
        ok(profile_down(t, "main", 0, &p) == -ENOENT, "empty input: any root is absent");
        ok(p == NULL, "and nothing is returned");
}

int main(void) {
        test_process_db();
        test_forms_mid_stack_root();
        test_direct_recursion();
        test_deep_direct_recursion();
        test_mutual_recursion();
        test_lock();
        test_root_twice();
        test_one_frame_and_absent();
        test_empty();
        return tap_done();
}
