/* CSV output worked by hand from the paper's process_db example, and RFC 4180 quoting. */
#include <errno.h>

#include "folded-tree.h"
#include "paper-examples.h"
#include "render.h"
#include "tap.h"

static char *csv(const struct profile *p, double threshold) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f || render_csv_profile(f, p, threshold) < 0 || fclose(f) != 0)
                abort();
        return buf;
}

static void test_process_db(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(process_db);
        _cleanup_(profile_freep) struct profile *down = NULL, *functions = NULL;
        _cleanup_free_ char *a = NULL, *b = NULL;

        ok(profile_down(t, "main", 0, &down) == 0, "process_db: downward profile of main");
        a = csv(down, 0.1);
        /* uniquify_db: 1820 + 300 + 235 = 2355 of 2676 hits; merge_adjacent_records (235) and
         * read_db (18) are under 10%. */
        ok(streq(a,
                 "fraction,hits,path\r\n"
                 "1.000000,2676,main\r\n"
                 "0.880045,2355,main;uniquify_db\r\n"
                 "0.680120,1820,main;uniquify_db;qsort\r\n"
                 "0.680120,1820,main;uniquify_db;qsort;name_field_lt\r\n"
                 "0.113229,303,main;print_salary_list\r\n"
                 "0.113229,303,main;print_salary_list;extract_salary_fields\r\n"
                 "0.112108,300,main;uniquify_db;build_db_ptrs\r\n"),
           "rows at or above the threshold 0.1, by hits, CRLF-terminated");

        ok(profile_function(t, 0, &functions) == 0, "process_db: function profile");
        b = csv(functions, 0.5);
        ok(streq(b,
                 "fraction,hits,path\r\n"
                 "1.000000,2676,main\r\n"
                 "0.880045,2355,uniquify_db\r\n"
                 "0.680120,1820,name_field_lt\r\n"
                 "0.680120,1820,qsort\r\n"),
           "a function profile: one name per path");
}

static void test_quoting(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t =
                tree_from_folded("main;std::map<int, int>::find 3\n"
                                 "main;say \"hi\" 2\n"
                                 "main;plain 1\n");
        _cleanup_(profile_freep) struct profile *p = NULL;
        _cleanup_free_ char *out = NULL;
        uint32_t s[2];

        s[0] = name_table_find(t->names, "main");
        s[1] = name_table_intern(t->names, "two\nlines", 9);
        sample_tree_add(t, s, 2, 1);
        ok(profile_down(t, "main", 0, &p) == 0, "names with a comma, quotes and a line break");
        out = csv(p, 0);
        ok(streq(out,
                 "fraction,hits,path\r\n"
                 "1.000000,7,main\r\n"
                 "0.428571,3,\"main;std::map<int, int>::find\"\r\n"
                 "0.285714,2,\"main;say \"\"hi\"\"\"\r\n"
                 "0.142857,1,main;plain\r\n"
                 "0.142857,1,\"main;two\nlines\"\r\n"),
           "fields with ',', '\"' or a line break are quoted, quotes doubled; others are not");
}

static void test_empty_and_errors(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("");
        _cleanup_(sample_tree_freep) struct sample_tree *forms = tree_from_folded(forms_folded);
        _cleanup_(profile_freep) struct profile *p = NULL, *q = NULL;
        _cleanup_fclose_ FILE *ro = fopen("/dev/null", "re");
        _cleanup_free_ char *out = NULL;

        ok(profile_body(t, 0, &p) == 0, "an empty tree: body profile");
        out = csv(p, 0);
        ok(streq(out, "fraction,hits,path\r\n"), "the header alone");
        ok(profile_body(forms, 0, &q) == 0 && ro && render_csv_profile(ro, q, 0) == -EIO,
           "a stream that cannot be written: -EIO");
}

int main(void) {
        test_process_db();
        test_quoting();
        test_empty_and_errors();
        return tap_done();
}
