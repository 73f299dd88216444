/* cppctl up: the upward call path profile (paper §4.3). */
#include "cppctl.h"

int cmd_up(int argc, char **argv) {
        return query_profile_command(argc, argv, "up",
                "Upward call path profile (paper §4.3): every call path that ends at the root\n"
                "function, i.e. which chains of callers incur its cost.", PROFILE_UP);
}
