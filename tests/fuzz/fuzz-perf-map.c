/* Fuzz target: /tmp/perf-PID.map text, which any process may write. */
#include "fuzz.h"
#include "perf-map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct name_table *names = name_table_new();
        struct symtab *t = NULL;
        FILE *f = fmemopen((void *) data, size, "r");

        if (!names || (size > 0 && !f))
                abort();
        if (f && perf_map_load(f, names, &t) == 0) {
                for (size_t i = 1; i < t->n; i++)
                        if (t->entries[i - 1].start >= t->entries[i].start)
                                abort(); /* not sorted, or an alias left */
                symtab_free(t);
        }
        if (f)
                fclose(f);
        name_table_free(names);
        return 0;
}
