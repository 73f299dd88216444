/* Looking a verb up in a command table and running it: for main() (cppctl.c), and for the shell,
 * which runs the verbs of the table it is handed. */
#include "cppctl.h"

#include <string.h>

#include "log.h"

const struct verb *verb_find(const struct verb *table, const char *name) {
        for (const struct verb *v = table; v->name; v++)
                if (streq(name, v->name))
                        return v;
        return NULL;
}

int verb_run(const struct verb *table, const char *name, int argc, char **argv) {
        const struct verb *v = verb_find(table, name);

        if (v)
                return v->run(argc, argv, v);
        log_error("unknown command '%s'", name);
        return EXIT_USAGE;
}
