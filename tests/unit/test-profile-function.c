/* Function (body + descendants) and body profiles worked by hand, and profile_compute()'s
 * mapping of each kind to its function. */
#include <errno.h>
#include <string.h>

#include "folded-tree.h"
#include "paper-examples.h"
#include "profile.h"
#include "tap.h"

static int64_t hits(struct profile *p, const char *name) {
        return profile_hits(p, name);
}

static void test_forms(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(forms_folded);
        _cleanup_(profile_freep) struct profile *p = NULL;

        ok(profile_function(t, 0, &p) == 0, "forms: function profile");
        /* The paper's §4.4 listing, line by line. */
        is_int(hits(p, "main"), 614, "main [614]");
        is_int(hits(p, "db_read_record"), 614, "db_read_record [614]");
        is_int(hits(p, "db_get_property"), 530, "db_get_property [530]");
        is_int(hits(p, "address_information"), 422, "address_information [422]");
        is_int(hits(p, "invoice"), 107, "invoice [107]");
        is_int(hits(p, "form_US_1040"), 106, "form_US_1040 [106]");
        is_int(hits(p, "envelope"), 106, "envelope [106]");
        is_int(hits(p, "loan_application"), 106, "loan_application [106]");
        is_int(hits(p, "form_NJ_1040"), 105, "form_NJ_1040 [105]");
        is_int(hits(p, "db_update_record"), 84, "db_update_record [84]");
        is_int(profile_n_paths(p), 10, "ten functions");
        ok(p->entries[0].hits == 614 && p->entries[1].hits == 614 && p->entries[2].hits == 530,
           "sorted by hits");
        p = profile_free(p);

        ok(profile_body(t, 0, &p) == 0, "forms: body profile");
        is_int(hits(p, "db_read_record"), 614, "all time is in db_read_record's body");
        is_int(profile_n_paths(p), 1, "and only there: callers have no body share to list");
}

static void test_recursion_once_per_sample(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("main;f;f;g 2\n"
                                                                              "main;g;f 1\n"
                                                                              "main 4\n");
        _cleanup_(profile_freep) struct profile *p = NULL;

        ok(profile_function(t, 0, &p) == 0, "function profile with recursion");
        is_int(hits(p, "main"), 7, "main [7]");
        is_int(hits(p, "f"), 3, "f [3]: f;f counts once per sample");
        is_int(hits(p, "g"), 3, "g [3]");
        p = profile_free(p);

        ok(profile_body(t, 0, &p) == 0, "body profile");
        is_int(hits(p, "main"), 4, "main's body [4]");
        is_int(hits(p, "g"), 2, "g's body [2]");
        is_int(hits(p, "f"), 1, "f's body [1]");
}

static void test_empty(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("");
        _cleanup_(profile_freep) struct profile *p = NULL, *b = NULL;

        ok(profile_function(t, 0, &p) == 0 && profile_n_paths(p) == 0, "empty input: empty function profile");
        ok(profile_body(t, 0, &b) == 0 && profile_n_paths(b) == 0, "empty input: empty body profile");
}

/* profile_compute() picks each kind's function: the same entries as calling it directly. */
static void test_compute(void) {
        static const struct {
                enum profile_kind kind;
                const char *name;
        } kinds[] = {
                { PROFILE_DOWN, "down" },
                { PROFILE_UP, "up" },
                { PROFILE_FUNCTION, "function" },
                { PROFILE_BODY, "body" },
        };
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("main;f;f;g 2\n"
                                                                              "main;g;f 1\n"
                                                                              "main 4\n");
        struct profile *p = NULL;

        for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                _cleanup_(profile_freep) struct profile *direct = NULL, *computed = NULL;
                int r = -1;

                switch (kinds[i].kind) {
                case PROFILE_DOWN:
                        r = profile_down(t, "f", 0, &direct);
                        break;
                case PROFILE_UP:
                        r = profile_up(t, "f", 0, &direct);
                        break;
                case PROFILE_FUNCTION:
                        r = profile_function(t, 0, &direct);
                        break;
                case PROFILE_BODY:
                        r = profile_body(t, 0, &direct);
                        break;
                }
                ok(r == 0 && profile_compute(t, kinds[i].kind, "f", 0, &computed) == 0 &&
                           computed->kind == kinds[i].kind &&
                           profile_n_paths(computed) == profile_n_paths(direct) &&
                           memcmp(computed->entries, direct->entries,
                                  direct->n_entries * sizeof *direct->entries) == 0,
                   "profile_compute(%s) is that kind's function", kinds[i].name);
        }
        is_int(profile_compute(t, PROFILE_DOWN, "nowhere", 0, &p), -ENOENT, "a root in no sample: -ENOENT");
        is_int(profile_compute(t, (enum profile_kind) 42, NULL, 0, &p), -EINVAL, "no such kind: -EINVAL");
        ok(!p, "and nothing is set");
}

int main(void) {
        test_compute();
        test_forms();
        test_recursion_once_per_sample();
        test_empty();
        return tap_done();
}
