/* Graphviz output worked by hand, the threshold, escaping, and (where graphviz is installed)
 * `dot -Tsvg` accepting all of it without a warning. */
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include "folded-tree.h"
#include "paper-examples.h"
#include "render.h"
#include "tap.h"

static char *dot(struct sample_tree *t, double threshold) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f || render_dot(f, t, threshold) < 0 || fclose(f) != 0)
                abort();
        return buf;
}

static struct sample_tree *small_tree(void) {
        struct sample_tree *t = tree_from_folded("main;f;g 2\nmain;h 1\n");

        if (sample_tree_set_resource(t, "cpu-time", "1 ms of CPU time") < 0)
                abort();
        t->info.period = 10;
        return t;
}

static void test_small(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = small_tree();
        _cleanup_free_ char *all = dot(t, 0), *some = dot(t, 0.5);

        /* Saturation is self over the largest self shown: g 2/2, h 1/2, callers 0. */
        ok(streq(all,
                 "digraph \"call graph\" {\n"
                 "        graph [label=\"Call graph for resource: cpu-time\\n3 hits, sampled "
                 "every 10 gticks (1 gtick = 1 ms of CPU time)\", labelloc=t];\n"
                 "        node [shape=box, style=filled];\n"
                 "        n0 [label=\"main\\ntotal 1.0000 [3]\\nself 0.0000 [0]\", "
                 "fillcolor=\"0.000 0.000 1.000\"];\n"
                 "        n1 [label=\"f\\ntotal 0.6667 [2]\\nself 0.0000 [0]\", "
                 "fillcolor=\"0.000 0.000 1.000\"];\n"
                 "        n2 [label=\"g\\ntotal 0.6667 [2]\\nself 0.6667 [2]\", "
                 "fillcolor=\"0.000 1.000 1.000\"];\n"
                 "        n3 [label=\"h\\ntotal 0.3333 [1]\\nself 0.3333 [1]\", "
                 "fillcolor=\"0.000 0.500 1.000\"];\n"
                 "        n1 -> n2 [label=\"2\"];\n"
                 "        n0 -> n1 [label=\"2\"];\n"
                 "        n0 -> n3 [label=\"1\"];\n"
                 "}\n"),
           "main;f;g 2, main;h 1: four functions by total, three calls by hits");
        ok(streq(some,
                 "digraph \"call graph\" {\n"
                 "        graph [label=\"Call graph for resource: cpu-time\\n3 hits, sampled "
                 "every 10 gticks (1 gtick = 1 ms of CPU time)\\n1 function below the threshold "
                 "0.5 not shown\", labelloc=t];\n"
                 "        node [shape=box, style=filled];\n"
                 "        n0 [label=\"main\\ntotal 1.0000 [3]\\nself 0.0000 [0]\", "
                 "fillcolor=\"0.000 0.000 1.000\"];\n"
                 "        n1 [label=\"f\\ntotal 0.6667 [2]\\nself 0.0000 [0]\", "
                 "fillcolor=\"0.000 0.000 1.000\"];\n"
                 "        n2 [label=\"g\\ntotal 0.6667 [2]\\nself 0.6667 [2]\", "
                 "fillcolor=\"0.000 1.000 1.000\"];\n"
                 "        n1 -> n2 [label=\"2\"];\n"
                 "        n0 -> n1 [label=\"2\"];\n"
                 "}\n"),
           "threshold 0.5: h (1/3) and its edge are left out, and counted");
}

static void test_forms(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded(forms_folded);
        _cleanup_free_ char *out = dot(t, 0.15);

        /* db_update_record's total is 84 of 614 (0.137); every other function's is over 105. */
        ok(!strstr(out, "db_update_record"), "forms at 0.15: db_update_record left out");
        ok(strstr(out, "\\n1 function below the threshold 0.15 not shown\""), "and counted");
        ok(strstr(out, "n2 -> n1 [label=\"530\"];"), "db_get_property -> db_read_record 530");
        ok(strstr(out, "n0 -> n4 [label=\"107\"];"), "main -> invoice 107");
        ok(!strstr(out, "n9"), "no edge into or out of db_update_record (n9)...");
        ok(strstr(out, "n6 -> n3 [label=\"84\"];"), "...while form_US_1040 -> address_information 84 stays");
}

static struct sample_tree *odd_names(void) {
        struct sample_tree *t = sample_tree_new(NULL);
        const char *names[] = { "main",      "say \"hi\"",    "C:\\path\\n", "two\nlines",
                                "tab\there", "bad \xff byte", "caf\xc3\xa9" };
        uint32_t s[2];

        s[0] = name_table_intern(t->names, names[0], strlen(names[0]));
        for (size_t i = 1; i < ELEMENTSOF(names); i++) {
                s[1] = name_table_intern(t->names, names[i], strlen(names[i]));
                sample_tree_add(t, s, 2, 1);
        }
        return t;
}

static void test_escaping(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = odd_names();
        _cleanup_free_ char *out = dot(t, 0);

        ok(strstr(out, "[label=\"say \\\"hi\\\"\\ntotal"), "quotes are escaped");
        ok(strstr(out, "[label=\"C:\\\\path\\\\n\\ntotal"), "backslashes are escaped");
        ok(strstr(out, "[label=\"two\\nlines\\ntotal"), "a line break is \\n");
        ok(strstr(out, "[label=\"tab?here\\ntotal"), "other control bytes are '?'");
        ok(strstr(out, "[label=\"bad ? byte\\ntotal"), "a byte that is not UTF-8 is '?'");
        ok(strstr(out, "[label=\"caf\xc3\xa9\\ntotal"), "UTF-8 passes through");
}

static void test_empty_and_errors(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_from_folded("");
        _cleanup_(sample_tree_freep) struct sample_tree *forms = tree_from_folded(forms_folded);
        _cleanup_fclose_ FILE *ro = fopen("/dev/null", "re");
        _cleanup_free_ char *out = dot(t, 0.01);

        ok(streq(out,
                 "digraph \"call graph\" {\n"
                 "        graph [label=\"Call graph for resource: \\n0 hits\", labelloc=t];\n"
                 "        node [shape=box, style=filled];\n"
                 "}\n"),
           "an empty tree: an empty graph");
        ok(ro && render_dot(ro, forms, 0) == -EIO, "a stream that cannot be written: -EIO");
}

/* Runs `dot -Tsvg` on TEXT: true if it exits 0 and prints nothing on stderr. */
static bool dot_accepts(const char *text) {
        char path[] = "/tmp/test-render-dot-XXXXXX", command[128], err[256];
        _cleanup_close_ int fd = mkstemp(path);
        size_t len = strlen(text), n;
        FILE *p;
        int status;

        if (fd < 0 || write(fd, text, len) != (ssize_t) len)
                return false;
        snprintf(command, sizeof command, "dot -Tsvg %s 2>&1 > /dev/null", path);
        p = popen(command, "re");
        if (!p)
                return false;
        n = fread(err, 1, sizeof err - 1, p);
        status = pclose(p);
        unlink(path);
        err[n] = '\0';
        if (n > 0)
                printf("# dot said: %s", err);
        return n == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void test_graphviz(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *forms = tree_from_folded(forms_folded);
        _cleanup_(sample_tree_freep) struct sample_tree *odd = odd_names();
        _cleanup_(sample_tree_freep) struct sample_tree *empty = tree_from_folded("");
        _cleanup_free_ char *a = dot(forms, 0), *b = dot(odd, 0), *c = dot(empty, 0);

        if (system("command -v dot > /dev/null 2>&1") != 0) {
                for (int i = 0; i < 3; i++)
                        printf("ok %u # SKIP dot is not installed (Debian: graphviz)\n", ++tap_n);
                return;
        }
        ok(dot_accepts(a), "dot -Tsvg accepts the forms graph");
        ok(dot_accepts(b), "and the odd names");
        ok(dot_accepts(c), "and the empty graph");
}

int main(void) {
        test_small();
        test_forms();
        test_escaping();
        test_empty_and_errors();
        test_graphviz();
        return tap_done();
}
