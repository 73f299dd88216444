/* Fuzz target: /proc/PID/maps lines, and the address space built from what parses. */
#include "fuzz.h"
#include "proc-maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct proc_maps *m = proc_maps_new(), *copy;
        char *text = malloc(size + 1), *save = NULL;

        if (!m || !text)
                abort();
        memcpy(text, data, size);
        text[size] = '\0';
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                struct proc_maps_line l;

                if (proc_maps_parse_line(line, &l) == 0 &&
                    proc_maps_add(m, l.start, l.end, l.pgoff, 1) == 0 && proc_maps_find(m, l.start) == NULL)
                        abort(); /* a mapping just added is not found */
        }
        for (size_t i = 1; i < m->n; i++)
                if (m->mappings[i - 1].end > m->mappings[i].start)
                        abort(); /* overlapping or unsorted */
        /* A fork's copy holds the same mappings; an exec's clear holds none. */
        copy = proc_maps_copy(m);
        if (!copy || copy->n != m->n ||
            (m->n && memcmp(copy->mappings, m->mappings, m->n * sizeof *m->mappings)))
                abort();
        proc_maps_clear(copy);
        if (copy->n != 0 || (m->n && proc_maps_find(copy, m->mappings[0].start)))
                abort();
        proc_maps_free(copy);
        proc_maps_free(m);
        free(text);
        return 0;
}
