/* Upward profiles worked by hand: the paper's forms example (§4.4) and recursion, which the
 * paper leaves to "straightforward extension" and cppd defines by symmetry (profile-up.c). */
#include <errno.h>

#include "folded-tree.h"
#include "paper-examples.h"
#include "profile.h"
#include "tap.h"

static void test_forms(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(forms_folded);
        _cleanup_(profile_freep) struct profile *p = NULL;

        ok(profile_up(t, "db_read_record", 0, &p) == 0, "forms: upward to db_read_record");
        is_int(profile_hits(p, "db_read_record"), 614, "(db_read_record) [614]");
        is_int(profile_hits(p, "db_get_property db_read_record"), 530,
               "(db_get_property db_read_record) [530]");
        is_int(profile_hits(p, "address_information db_get_property db_read_record"), 422,
               "(address_information db_get_property db_read_record) [422]");
        is_int(profile_hits(p, "envelope address_information db_get_property db_read_record"), 85,
               "(envelope address_information ...) [85]");
        is_int(profile_hits(p, "invoice address_information db_get_property db_read_record"), 85,
               "(invoice address_information ...) [85]");
        is_int(profile_hits(p, "db_update_record db_read_record"), 84,
               "(db_update_record db_read_record) [84]");
        is_int(p->entries[0].hits, 614, "sorted: the root's own entry first");
        ok(p->entries[3].len == 4 &&
                   profile_hits(p, "envelope address_information db_get_property db_read_record") ==
                           (int64_t) p->entries[3].hits,
           "ties in name order: envelope before invoice, as in the paper");
}

static void test_process_db(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(process_db);
        _cleanup_(profile_freep) struct profile *p = NULL;

        ok(profile_up(t, "qsort", 0, &p) == 0, "process_db: who pays for qsort");
        is_int(profile_hits(p, "qsort"), 1820, "(qsort) [1820]");
        is_int(profile_hits(p, "uniquify_db qsort"), 1820, "(uniquify_db qsort) [1820]");
        is_int(profile_hits(p, "main uniquify_db qsort"), 1820, "(main uniquify_db qsort) [1820]");
        is_int(profile_hits(p, "print_salary_list qsort"), 0, "(print_salary_list qsort) [0]");
}

static void test_mutual_recursion(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("main;a;b;a;b;c 1\n"
                                                                              "main;a;c 1\n");
        _cleanup_(profile_freep) struct profile *p = NULL;

        ok(profile_up(t, "c", 0, &p) == 0, "upward to c through mutual recursion");
        is_int(profile_hits(p, "c"), 2, "(c) [2]");
        is_int(profile_hits(p, "b c"), 1, "(b c) [1]");
        is_int(profile_hits(p, "a b c"), 1, "(a b c) [1]");
        is_int(profile_hits(p, "b a b c"), 1, "(b a b c) [1]: the way back to b is kept");
        is_int(profile_hits(p, "main a b c"), 1, "(main a b a b c) canonicalized to (main a b c)");
        is_int(profile_hits(p, "a c"), 1, "(a c) [1]");
        is_int(profile_hits(p, "main a c"), 1, "(main a c) [1]");
        is_int(profile_n_paths(p), 7, "seven paths");
}

static void test_root_twice(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("main;f;x;f;y 3\n");
        _cleanup_(profile_freep) struct profile *p = NULL;

        ok(profile_up(t, "f", 0, &p) == 0, "f twice on one stack");
        is_int(profile_hits(p, "f"), 3, "(f) [3], once per sample");
        is_int(profile_hits(p, "x f"), 3, "(x f) [3]");
        is_int(profile_hits(p, "f x f"), 3, "(f x f) [3]");
        is_int(profile_hits(p, "main f"), 3, "(main f x f) canonicalized to (main f)");
        is_int(profile_n_paths(p), 4, "four paths");
        p = profile_free(p);
        ok(profile_up(t, "y", 0, &p) == 0, "upward to the leaf y");
        is_int(profile_hits(p, "f x f y"), 3, "(f x f y) [3]");
        is_int(profile_hits(p, "main f y"), 3,
               "(main f x f y) canonicalized at f to (main f y), "
               "as (f x f y) is to (f y) downward");
        is_int(profile_hits(p, "main f x f y"), -1, "so there is no (main f x f y)");
}

static void test_absent_and_empty(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("main;f 1\n");
        _cleanup_(sample_tree_freep) struct sample_tree *e = tree_from_folded("# nothing\n\n");
        _cleanup_(profile_freep) struct profile *p = NULL;

        ok(profile_up(t, "g", 0, &p) == -ENOENT, "a root in no sample: -ENOENT");
        ok(profile_up(e, "g", 0, &p) == -ENOENT, "empty input: -ENOENT");
        ok(profile_up(t, "main", 0, &p) == 0 && profile_n_paths(p) == 1 && profile_hits(p, "main") == 1,
           "upward to the outermost frame: just (main)");
}

int main(void) {
        test_forms();
        test_process_db();
        test_mutual_recursion();
        test_root_twice();
        test_absent_and_empty();
        return tap_done();
}
