/* cppctl's exit status from the negative errno its helpers return: one rule for every command
 * (the codes are in report.h, cppctl --help and the README). */
#include "report.h"

#include <errno.h>

int exit_status(int r) {
        if (r >= 0)
                return EXIT_OK;
        if (r == -ENODATA)
                return EXIT_EMPTY;
        return r == -EINVAL ? EXIT_USAGE : EXIT_FAILURE_;
}
