/* speedscope output worked by hand for two resources, then read by python3's json module, which
 * checks the schema's shape and that weights add up to each profile's hits times its period. */
#include <errno.h>
#include <sys/wait.h>

#include "folded-tree.h"
#include "paper-examples.h"
#include "render.h"
#include "tap.h"

static char *speedscope(struct sample_tree *const *trees, size_t n) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f || render_speedscope(f, trees, n) < 0 || fclose(f) != 0)
                abort();
        return buf;
}

static const char expected_two[] =
        "{\"$schema\": \"https://www.speedscope.app/file-format-schema.json\",\n"
        " \"shared\": {\"frames\": [\n"
        "   {\"name\": \"main\"},\n"
        "   {\"name\": \"f\"},\n"
        "   {\"name\": \"g\"},\n"
        "   {\"name\": \"h\"},\n"
        "   {\"name\": \"say \\\"hi\\\"\"}]},\n"
        " \"profiles\": [\n"
        "  {\"type\": \"sampled\", \"name\": \"cpu-time (1 ms of CPU time)\", \"unit\": \"none\",\n"
        "   \"startValue\": 0, \"endValue\": 30,\n"
        "   \"samples\": [[0, 1, 2], [0, 3]],\n"
        "   \"weights\": [20, 10]},\n"
        "  {\"type\": \"sampled\", \"name\": \"page-faults (1 page fault)\", \"unit\": \"none\",\n"
        "   \"startValue\": 0, \"endValue\": 4,\n"
        "   \"samples\": [[0, 3], [0, 4, 2]],\n"
        "   \"weights\": [3, 1]}],\n"
        " \"name\": \"cppd\", \"activeProfileIndex\": 0,"
        " \"exporter\": \"cppd@" CPPD_VERSION "\"}\n";

/* Reads the file with python3's json module and checks it against the schema's shape and the
 * example's numbers. 0 if all holds, 77 without python3. */
static int python_check(const char *text) {
        static const char script[] =
                "import json, sys\n"
                "d = json.load(sys.stdin)\n"
                "assert d[\"$schema\"] == \"https://www.speedscope.app/file-format-schema.json\"\n"
                "frames = [f[\"name\"] for f in d[\"shared\"][\"frames\"]]\n"
                "assert frames == [\"main\", \"f\", \"g\", \"h\", \"say \\\"hi\\\"\"], frames\n"
                "for p in d[\"profiles\"]:\n"
                "    assert p[\"type\"] == \"sampled\" and p[\"unit\"] == \"none\", p\n"
                "    assert len(p[\"samples\"]) == len(p[\"weights\"]), p\n"
                "    assert p[\"endValue\"] - p[\"startValue\"] == sum(p[\"weights\"]), p\n"
                "    assert all(0 <= i < len(frames) for s in p[\"samples\"] for i in s), p\n"
                "def stacks(p):\n"
                "    return {\";\".join(frames[i] for i in s): w for s, w in "
                "zip(p[\"samples\"], p[\"weights\"])}\n"
                "cpu, faults = d[\"profiles\"]\n"
                "assert stacks(cpu) == {\"main;f;g\": 20, \"main;h\": 10}, stacks(cpu)\n"
                "assert stacks(faults) == {\"main;h\": 3, \"main;say \\\"hi\\\";g\": 1}, "
                "stacks(faults)\n";
        char command[sizeof script + 64];
        FILE *p;
        int status;

        if (system("command -v python3 > /dev/null 2>&1") != 0)
                return 77;
        snprintf(command, sizeof command, "python3 -c '%s'", script);
        p = popen(command, "we");
        if (!p)
                return -errno;
        fputs(text, p);
        status = pclose(p);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_two_resources(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *cpu =
                tree_of_resource("main;f;g 2\nmain;h 1\n", "cpu-time", "1 ms of CPU time", 10);
        _cleanup_(sample_tree_freep) struct sample_tree *faults =
                tree_of_resource("main;say \"hi\";g 1\nmain;h 3\n", "page-faults", "1 page fault", 1);
        struct sample_tree *trees[] = { cpu, faults };
        _cleanup_free_ char *out = speedscope(trees, 2);
        int r;

        ok(streq(out, expected_two),
           "two resources: frames shared by name, weights in gticks (hits times the period)");
        r = python_check(out);
        if (r == 77)
                printf("ok %u # SKIP python3 is not installed\n", ++tap_n);
        else
                is_int(r, 0, "python3's json module reads it, and the numbers add up");
}

static void test_forms(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *a =
                tree_of_resource(forms_folded, "real-time", "1 ms", 20);
        _cleanup_(sample_tree_freep) struct sample_tree *b =
                tree_of_resource("main;db_update_record;db_read_record 84\n"
                                 "main;envelope;db_get_property;db_read_record 21\n"
                                 "main;invoice;db_get_property;db_read_record 22\n",
                                 "real-time", "1 ms", 20);
        _cleanup_free_ char *x = NULL, *y = NULL;

        x = speedscope(&a, 1);
        ok(strstr(x, "\"endValue\": 12280,"), "forms: 614 hits of 20 gticks end at 12280");
        ok(strstr(x, "\"weights\": [1680, 1700, 420, "), "weights follow the stacks' name order");
        y = speedscope(&b, 1);
        ok(strstr(y, "\"samples\": [[0, 1, 2], [0, 3, 4, 2], [0, 5, 4, 2]],"),
           "frames are numbered in the order the sorted walk first sees them");
}

static void test_empty_and_errors(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_of_resource("", "cpu-time", "", 0);
        _cleanup_(sample_tree_freep) struct sample_tree *forms =
                tree_of_resource(forms_folded, "cpu-time", "1 ms", 1);
        _cleanup_fclose_ FILE *ro = fopen("/dev/null", "re");
        _cleanup_free_ char *out = speedscope(&t, 1);

        ok(streq(out,
                 "{\"$schema\": \"https://www.speedscope.app/file-format-schema.json\",\n"
                 " \"shared\": {\"frames\": []},\n"
                 " \"profiles\": [\n"
                 "  {\"type\": \"sampled\", \"name\": \"cpu-time\", \"unit\": \"none\",\n"
                 "   \"startValue\": 0, \"endValue\": 0,\n"
                 "   \"samples\": [],\n"
                 "   \"weights\": []}],\n"
                 " \"name\": \"cppd\", \"activeProfileIndex\": 0,"
                 " \"exporter\": \"cppd@" CPPD_VERSION "\"}\n"),
           "an empty tree (and no unit): an empty profile");
        ok(ro && render_speedscope(ro, &forms, 1) == -EIO, "a stream that cannot be written: -EIO");
}

static void test_empty_stack(void) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = tree_of_resource("main 1\n", "cpu-time", "", 10);
        _cleanup_free_ char *out = NULL;

        sample_tree_add(t, NULL, 0, 2); /* samples whose stack was empty */
        out = speedscope(&t, 1);
        ok(strstr(out, "\"endValue\": 30,\n   \"samples\": [[], [0]],\n   \"weights\": [20, 10]}"),
           "hits at the root: an empty stack, first");
}

int main(void) {
        test_two_resources();
        test_forms();
        test_empty_and_errors();
        test_empty_stack();
        return tap_done();
}
