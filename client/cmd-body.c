/* cppctl body: the body profile (paper §5.2). */
#include "cppctl.h"

int cmd_body(int argc, char **argv) {
        return query_profile_command(argc, argv, "body",
                "Body profile (paper §5.2): for each function, the fraction of hits in its own code,\n"
                "as prof(1) reports for time, for any resource.", PROFILE_BODY);
}
