/* cppctl functions: the function profile (paper §4.4). */
#include "cppctl.h"

int cmd_functions(int argc, char **argv) {
        return query_profile_command(argc, argv, "functions",
                "Function profile (paper §4.4): for each function, the fraction of hits spent in it\n"
                "and on its behalf (body + descendants), counted once per sample.", PROFILE_FUNCTION);
}
