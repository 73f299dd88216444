/* A profile as RFC 4180 CSV, for spreadsheets and data frames: a header record, then one record
 * per entry at or above the threshold, in the profile's order (by hits, most first):
 *
 *     fraction,hits,path
 *     1.000000,614,main
 *     0.863192,530,"main;std::map<int, int>::find"
 *
 * Records end in CRLF, as RFC 4180 §2.1 says. The path's names are joined by ';', as in folded
 * stacks; a field holding a comma, a quote or a line break (C++ names hold commas) is quoted,
 * its quotes doubled (§2.6, §2.7). CSV has no place for the facts the other formats put in a
 * header (resource, period, entries left out). */
#include "render.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

static bool path_needs_quotes(const struct sample_tree *t, const uint32_t *names, uint32_t len) {
        for (uint32_t i = 0; i < len; i++)
                if (strpbrk(sample_tree_name(t, names[i]), ",\"\r\n"))
                        return true;
        return false;
}

void csv_write_field(FILE *f, const char *s) {
        if (!strpbrk(s, ",\"\r\n")) {
                fputs(s, f);
                return;
        }
        fputc('"', f);
        for (; *s; s++) {
                if (*s == '"')
                        fputc('"', f);
                fputc(*s, f);
        }
        fputc('"', f);
}

void csv_write_path(FILE *f, const struct sample_tree *t, const uint32_t *names, uint32_t len) {
        bool quote = path_needs_quotes(t, names, len);

        if (quote)
                fputc('"', f);
        for (uint32_t i = 0; i < len; i++) {
                if (i > 0)
                        fputc(';', f);
                for (const char *s = sample_tree_name(t, names[i]); *s; s++) {
                        if (*s == '"')
                                fputc('"', f);
                        fputc(*s, f);
                }
        }
        if (quote)
                fputc('"', f);
}

int render_csv_profile(FILE *f, const struct profile *p, double threshold) {
        fputs("fraction,hits,path\r\n", f);
        for (size_t i = 0; i < p->n_entries; i++) {
                const struct profile_entry *e = &p->entries[i];
                double fraction = profile_fraction(p, e->hits);

                if (fraction < threshold)
                        continue;
                fprintf(f, "%.6f,%" PRIu64 ",", fraction, e->hits);
                csv_write_path(f, p->tree, profile_path(p, e), e->len);
                fputs("\r\n", f);
        }
        return ferror(f) ? -EIO : 0;
}
