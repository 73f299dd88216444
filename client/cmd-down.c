/* cppctl down: the downward call path profile (paper §4.3). */
#include "cppctl.h"

int cmd_down(int argc, char **argv) {
        return query_profile_command(argc, argv, "down",
                "Downward call path profile (paper §4.3): every call path that starts at the root\n"
                "function, with the fraction of all hits whose stacks contain it. Recursion is\n"
                "canonicalized as in the paper's appendix.", PROFILE_DOWN);
}
