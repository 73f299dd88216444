/* cppctl tree: the sample tree profile (paper §7.2), pruned at --threshold. */
#include "cppctl.h"

#include <errno.h>

#include "log.h"

int cmd_tree(int argc, char **argv) {
        _cleanup_(sample_tree_freep) struct sample_tree *t = NULL;
        struct query_args q;
        int r;

        r = query_args_parse(&q, argc, argv, "tree",
                             "Sample tree profile (paper §7.2): every distinct stack as an indented tree,\n"
                             "each node with the fraction and hits at or below it.", 0);
        if (r <= 0)
                return exit_status(r);
        r = query_load(&q, &t);
        if (r < 0)
                return exit_status(r);
        r = q.format == RENDER_JSON ? render_json_tree(stdout, t, q.threshold) :
                                      render_text_tree(stdout, t, q.threshold);
        if (r >= 0 && fflush(stdout) != 0)
                r = -errno;
        if (r < 0) {
                log_error_errno(r, "Cannot write the tree: %m");
                return EXIT_FAILURE_;
        }
        return EXIT_OK;
}
