/* Folded output written out by hand, read back through the folded parser, and the names the
 * format cannot hold. */
#include <errno.h>

#include "folded-tree.h"
#include "paper-examples.h"
#include "render.h"
#include "tap.h"

static char *folded(struct sample_tree *t) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f || render_folded(f, t) < 0 || fclose(f) != 0)
                abort();
        return buf;
}

static void test_forms(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(forms_folded);
        _cleanup_free_ char *out = folded(t);

        ok(streq(out,
                 "main;db_update_record;db_read_record 84\n"
                 "main;envelope;address_information;db_get_property;db_read_record 85\n"
                 "main;envelope;db_get_property;db_read_record 21\n"
                 "main;form_NJ_1040;address_information;db_get_property;db_read_record 84\n"
                 "main;form_NJ_1040;db_get_property;db_read_record 21\n"
                 "main;form_US_1040;address_information;db_get_property;db_read_record 84\n"
                 "main;form_US_1040;db_get_property;db_read_record 22\n"
                 "main;invoice;address_information;db_get_property;db_read_record 85\n"
                 "main;invoice;db_get_property;db_read_record 22\n"
                 "main;loan_application;address_information;db_get_property;db_read_record 84\n"
                 "main;loan_application;db_get_property;db_read_record 22\n"),
           "forms: one line per stack, sorted by name frame by frame");
}

static void test_order(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *a =
                tree_from_folded("main;f 3\nmain 2\nmain;f;g 1\nmain;e 4\nmain;f;h 0\n");
        _cleanup_(sample_tree_freep) struct sample_tree *b =
                tree_from_folded("main;f;h 0\nmain;e 4\nmain;f;g 1\nmain 2\nmain;f 3\n");
        _cleanup_free_ char *x = folded(a), *y = folded(b);

        ok(streq(x, "main 2\nmain;e 4\nmain;f 3\nmain;f;g 1\n"),
           "a stack before its extensions; stacks without self hits have no line");
        ok(streq(x, y), "the same stacks in another order give the same bytes");
}

/* Reads TEXT back as a tree, line by line, as `cppctl import --folded` does. */
static struct sample_tree *parse_back(const char *text, size_t *ret_lines) {
        static struct folded_frame frames[FOLDED_MAX_FRAMES];
        struct sample_tree *t = sample_tree_new(NULL);
        uint32_t names[64];
        size_t lines = 0;

        for (const char *nl; t && *text; text = nl + 1) {
                size_t n;
                uint64_t count;

                nl = strchr(text, '\n');
                if (!nl || folded_parse_line(text, nl - text + 1, frames, &n, &count) != 1 ||
                    n > ELEMENTSOF(names))
                        return sample_tree_free(t);
                for (size_t i = 0; i < n; i++)
                        names[i] = name_table_intern(t->names, frames[i].name, frames[i].len);
                sample_tree_add(t, names, n, count);
                lines++;
        }
        *ret_lines = lines;
        return t;
}

static void test_round_trip(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(process_db);
        _cleanup_(sample_tree_freep) struct sample_tree *back = NULL;
        _cleanup_free_ char *out = folded(t), *again = NULL;
        size_t lines = 0;

        back = parse_back(out, &lines);
        ok(back, "process_db: every line parses with folded_parse_line()");
        if (!back)
                return;
        is_int(lines, 5, "five stacks (the one with 0 hits has no line)");
        sample_tree_weigh(back);
        is_int(back->total, t->total, "all %" PRIu64 " hits come back", t->total);
        again = folded(back);
        ok(streq(out, again), "and render to the same text");
}

static void test_names(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = sample_tree_new(NULL);
        _cleanup_free_ char *out = NULL;
        uint32_t s[3];

        s[0] = name_table_intern(t->names, "main", 4);
        s[1] = name_table_intern(t->names, "operator;(int, int)", 19);
        s[2] = name_table_intern(t->names, "two\nlines\r", 10);
        sample_tree_add(t, s, 3, 7);
        s[1] = name_table_intern(t->names, "", 0);
        sample_tree_add(t, s, 2, 1);
        sample_tree_add(t, NULL, 0, 5);
        out = folded(t);
        ok(streq(out, "main;[unknown] 1\nmain;operator:(int, int);two lines  7\n"),
           "';' becomes ':', line breaks spaces, an empty name [unknown]; the empty stack has "
           "no line");
}

static void test_empty_and_errors(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("");
        _cleanup_(sample_tree_freep) struct sample_tree *forms = tree_from_folded(forms_folded);
        _cleanup_free_ char *out = folded(t);
        _cleanup_fclose_ FILE *ro = fopen("/dev/null", "re");

        ok(streq(out, ""), "an empty tree: no lines");
        ok(ro && render_folded(ro, forms) == -EIO, "a stream that cannot be written: -EIO");
}

int main(void) {
        test_forms();
        test_order();
        test_round_trip();
        test_names();
        test_empty_and_errors();
        return tap_done();
}
