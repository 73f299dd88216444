/* Fuzz target: /proc/kallsyms text, then lookups in the table it gives. */
#include "fuzz.h"
#include "kallsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct name_table *names = name_table_new();
        struct symtab *t = NULL;
        FILE *f = fmemopen((void *) data, size, "r");

        if (!names || (size > 0 && !f))
                abort();
        if (f && kallsyms_load(f, names, &t) == 0) {
                for (size_t i = 0; i < t->n; i++)
                        if (symtab_lookup(t, t->entries[i].start) != &t->entries[i])
                                abort(); /* a symbol does not cover its own start */
                symtab_free(t);
        }
        if (f)
                fclose(f);
        name_table_free(names);
        return 0;
}
