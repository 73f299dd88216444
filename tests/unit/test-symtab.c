/* Symbol tables: aliases, sized and unsized symbols, kallsyms and perf maps. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kallsyms.h"
#include "perf-map.h"
#include "symtab.h"
#include "tap.h"

static const char *name_at(struct symtab *t, uint64_t addr) {
        const struct symtab_entry *e = symtab_lookup(t, addr);

        return e ? name_table_get(t->names, e->name) : "(none)";
}

static void test_symtab(void) {
        _cleanup_(name_table_freep) struct name_table *names = name_table_new();
        _cleanup_(symtab_freep) struct symtab *t = symtab_new(names);

        symtab_add(t, 0x2000, 0x100, "__qsort_r", 9, 0);
        symtab_add(t, 0x2000, 0x100, "qsort_r", 7, 0);
        symtab_add(t, 0x2000, 0, "qsort_r_local", 13, 2);
        symtab_add(t, 0x1000, 0x10, "small", 5, 0);
        symtab_add(t, 0x3000, 0, "unsized", 7, 1);
        symtab_add(t, 0x3100, 0x10, "next", 4, 0);
        symtab_sort(t);
        ok(t->n == 4, "aliases at one address collapse to one entry");
        ok(strcmp(name_at(t, 0x2000), "qsort_r") == 0, "the global name without underscores wins");
        ok(strcmp(name_at(t, 0x1000), "small") == 0 && strcmp(name_at(t, 0x100f), "small") == 0,
           "a sized symbol covers its size");
        ok(strcmp(name_at(t, 0x1010), "(none)") == 0, "and no more");
        ok(strcmp(name_at(t, 0x30ff), "unsized") == 0, "an unsized symbol runs to the next one");
        ok(strcmp(name_at(t, 0x0fff), "(none)") == 0, "nothing below the first");
        ok(strcmp(name_at(t, 0x3100 + 0x10 + 5), "(none)") == 0, "nothing after the last sized one");
}

/* ld.so's entry: _start and _dl_start_user are unsized labels before the sized _dl_start (every
 * program's first frames); an assembler's label inside a sized function must not take its tail. */
static void test_labels(void) {
        _cleanup_(name_table_freep) struct name_table *names = name_table_new();
        _cleanup_(symtab_freep) struct symtab *t = symtab_new(names);

        symtab_add(t, 0x1ab70, 0, "_start", 6, 5);
        symtab_add(t, 0x1ab78, 0, "_dl_start_user", 14, 5);
        symtab_add(t, 0x1abb0, 0x50, "dlmopen_doit", 12, 2);
        symtab_add(t, 0x1b770, 1862, "_dl_start", 9, 2);
        symtab_add(t, 0x1b800, 0, "inner_label", 11, 5);
        symtab_add(t, 0x1b770, 0, "_dl_start_alias", 15, 5);
        symtab_sort(t);
        ok(strcmp(name_at(t, 0x1ab77), "_start") == 0, "ld.so+0x1ab77 is _start, as perf names it");
        ok(strcmp(name_at(t, 0x1ab9f), "_dl_start_user") == 0, "an unsized label runs to the next symbol");
        ok(strcmp(name_at(t, 0x1b770), "_dl_start") == 0, "a sized function outranks a label at its address");
        ok(strcmp(name_at(t, 0x1b900), "_dl_start") == 0, "a label inside a sized function is dropped");
        ok(t->n == 4, "leaving four symbols");
}

static FILE *text(const char *s) {
        return fmemopen((void *) s, strlen(s), "r");
}

static void test_kallsyms(void) {
        _cleanup_(name_table_freep) struct name_table *names = name_table_new();
        struct symtab *t = NULL;
        FILE *f;

        f = text("ffffffff81000000 T _stext\n"
                 "ffffffff81000100 t helper\n"
                 "ffffffff81000200 D some_data\n"
                 "ffffffff81000300 T schedule\n"
                 "ffffffffc0000000 t mod_fn\t[kvm]\n");
        ok(kallsyms_load(f, names, &t) == 0, "kallsyms loads");
        fclose(f);
        ok(strcmp(name_at(t, 0xffffffff81000150), "helper") == 0, "a local text symbol");
        ok(strcmp(name_at(t, 0xffffffff81000250), "helper") == 0, "data symbols are not functions");
        ok(strcmp(name_at(t, 0xffffffffc0000010), "mod_fn") == 0, "a module's symbol, without [module]");
        t = symtab_free(t);

        f = text("0000000000000000 T _stext\n0000000000000000 t helper\n");
        ok(kallsyms_load(f, names, &t) == -EACCES, "all addresses hidden: -EACCES");
        fclose(f);
        f = text("zzz\n");
        ok(kallsyms_load(f, names, &t) == -EBADMSG, "nonsense: -EBADMSG");
        fclose(f);
}

static void test_perf_map(void) {
        _cleanup_(name_table_freep) struct name_table *names = name_table_new();
        struct symtab *t = NULL;
        FILE *f;

        f = text("7f0000001000 40 LazyCompile:~foo bar.js:1\n7f0000002000 10 py::main:/x.py\n");
        ok(perf_map_load(f, names, &t) == 0, "a perf map loads");
        fclose(f);
        ok(strcmp(name_at(t, 0x7f0000001020), "LazyCompile:~foo bar.js:1") == 0,
           "names keep spaces and colons");
        ok(strcmp(name_at(t, 0x7f0000001040), "(none)") == 0, "sizes are respected");
        t = symtab_free(t);
        f = text("7f0000001000\n");
        ok(perf_map_load(f, names, &t) == -EBADMSG, "a line without size and name: -EBADMSG");
        fclose(f);
}

int main(void) {
        test_symtab();
        test_labels();
        test_kallsyms();
        test_perf_map();
        return tap_done();
}
