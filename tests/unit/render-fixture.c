/* render-fixture DIR: writes DIR/flame.svg (the paper's forms example), DIR/icicle.svg (its
 * inverted tree, the callers of db_read_record) and DIR/report.html (forms as cpu-time and
 * process_db with a C++ frame as page-faults), for tests/integration/test-flame-chromium.sh to
 * open in a browser. Exits 0, or 1 with a message. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "folded-tree.h"
#include "paper-examples.h"
#include "render.h"

static int write_svg(const char *dir, const char *file, struct sample_tree *t, bool icicle,
                     const char *title) {
        _cleanup_fclose_ FILE *f = NULL;
        char path[4096];
        int r;

        snprintf(path, sizeof path, "%s/%s", dir, file);
        f = fopen(path, "we");
        if (!f)
                return -errno;
        r = render_flame_svg(f, t, icicle, 0, title);
        if (r < 0)
                return r;
        return fflush(f) == 0 ? 0 : -EIO;
}

int main(int argc, char **argv) {
        _cleanup_(sample_tree_freep) struct sample_tree *forms = tree_from_folded(forms_folded);
        _cleanup_(sample_tree_freep) struct sample_tree *faults =
                tree_from_folded("main;read_db 18\n"
                                 "main;uniquify_db;qsort;name_field_lt 1820\n"
                                 "main;uniquify_db;std::map<int, int>::find& 300\n");
        _cleanup_(sample_tree_freep) struct sample_tree *inv = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        char path[4096];
        int r;

        if (argc != 2) {
                fprintf(stderr, "Usage: render-fixture DIR\n");
                return 1;
        }
        if (sample_tree_set_resource(forms, "cpu-time", "1 ms of CPU time") < 0 ||
            sample_tree_set_resource(faults, "page-faults", "1 page fault") < 0 ||
            sample_tree_invert(forms, &inv) < 0)
                return 1;
        forms->info.period = 10;
        faults->info.period = 10;

        r = write_svg(argv[1], "flame.svg", forms, false, "forms");
        if (r >= 0)
                r = write_svg(argv[1], "icicle.svg", inv, true, "forms, upward");
        if (r >= 0) {
                snprintf(path, sizeof path, "%s/report.html", argv[1]);
                f = fopen(path, "we");
                r = f ? render_html_report(f, (struct sample_tree *[]) { forms, faults }, 2, "fixture") :
                        -errno;
                if (r >= 0 && fflush(f) != 0)
                        r = -EIO;
        }
        if (r < 0) {
                fprintf(stderr, "render-fixture: %s\n", strerror(-r));
                return 1;
        }
        return 0;
}
