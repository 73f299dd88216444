/* Address spaces: mappings replacing what they overlap as mmap(2) does, lookups, and the
 * /proc/PID/maps line parser. */
#include <errno.h>
#include <string.h>

#include "proc-maps.h"
#include "tap.h"

static bool is(const struct proc_maps *m, size_t i, uint64_t start, uint64_t end, uint64_t pgoff,
               uint32_t module) {
        return i < m->n && m->mappings[i].start == start && m->mappings[i].end == end &&
                m->mappings[i].pgoff == pgoff && m->mappings[i].module == module;
}

static void test_add(void) {
        _cleanup_(proc_maps_freep) struct proc_maps *m = proc_maps_new();
        _cleanup_(proc_maps_freep) struct proc_maps *copy = NULL;

        ok(proc_maps_add(m, 0x1000, 0x5000, 0, 1) == 0 && proc_maps_add(m, 0x8000, 0x9000, 0, 2) == 0,
           "two mappings");
        ok(proc_maps_find(m, 0x1000)->module == 1 && proc_maps_find(m, 0x4fff)->module == 1,
           "found at both ends");
        ok(proc_maps_find(m, 0x5000) == NULL && proc_maps_find(m, 0x0fff) == NULL, "not outside");

        ok(proc_maps_add(m, 0x2000, 0x3000, 0x10, 3) == 0, "a mapping inside the first");
        ok(m->n == 4 && is(m, 0, 0x1000, 0x2000, 0, 1) && is(m, 1, 0x2000, 0x3000, 0x10, 3) &&
                   is(m, 2, 0x3000, 0x5000, 0x2000, 1) && is(m, 3, 0x8000, 0x9000, 0, 2),
           "splits it in two, the tail's file offset moved on");

        ok(proc_maps_add(m, 0x2800, 0x8800, 0, 4) == 0, "a mapping over several");
        ok(m->n == 4 && is(m, 0, 0x1000, 0x2000, 0, 1) && is(m, 1, 0x2000, 0x2800, 0x10, 3) &&
                   is(m, 2, 0x2800, 0x8800, 0, 4) && is(m, 3, 0x8800, 0x9000, 0x800, 2),
           "trims the first it overlaps, swallows the middle, cuts the head of the last");

        copy = proc_maps_copy(m);
        ok(copy && copy->n == 4 && is(copy, 2, 0x2800, 0x8800, 0, 4), "a copy (fork) has the same mappings");
        proc_maps_clear(m);
        ok(m->n == 0 && proc_maps_find(m, 0x1000) == NULL && copy->n == 4, "clearing (exec) leaves the copy");
        ok(proc_maps_add(m, 5, 5, 0, 1) == -EINVAL, "an empty range: -EINVAL");
}

/* Copies share the array until one of them changes. */
static void test_shared(void) {
        _cleanup_(proc_maps_freep) struct proc_maps *a = proc_maps_new(), *b = NULL, *c = NULL;

        ok(proc_maps_add(a, 0x1000, 0x2000, 0, 1) == 0 && proc_maps_add(a, 0x3000, 0x4000, 0, 2) == 0,
           "a space");
        b = proc_maps_copy(a);
        c = proc_maps_copy(b);
        ok(b && c && b->mappings == a->mappings && c->mappings == a->mappings, "two copies share its array");
        ok(proc_maps_add(b, 0x5000, 0x6000, 0, 3) == 0 && b->mappings != a->mappings && b->n == 3 &&
                   a->n == 2 && c->n == 2 && proc_maps_find(a, 0x5000) == NULL &&
                   proc_maps_find(c, 0x5000) == NULL,
           "a change to one copy is its own");
        ok(proc_maps_add(a, 0x1000, 0x1800, 0, 4) == 0 && proc_maps_find(a, 0x1000)->module == 4 &&
                   proc_maps_find(c, 0x1000)->module == 1 && proc_maps_find(b, 0x1000)->module == 1,
           "a change to the original leaves the copies");
        a = proc_maps_free(a);
        ok(c->n == 2 && proc_maps_find(c, 0x3000)->module == 2, "freed, the original's copies still read");
        proc_maps_clear(c);
        ok(c->n == 0 && proc_maps_add(c, 0x7000, 0x8000, 0, 5) == 0 &&
                   proc_maps_find(c, 0x7000)->module == 5 && b->n == 3,
           "cleared and mapped anew");
}

static void test_parse(void) {
        char line1[] =
                "7f2c4a000000-7f2c4a022000 r-xp 00028000 fe:01 1234567                    /usr/lib/x86_64-linux-gnu/libc.so.6\n";
        char line2[] = "7ffd1e5f2000-7ffd1e5f4000 r-xp 00000000 00:00 0                          [vdso]\n";
        char line3[] = "55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0 \n";
        char line4[] = "7f0000000000-7f0000001000 r-xp 00000000 08:02 42 /tmp/my prog (deleted)\n";
        char bad1[] = "not a maps line\n";
        char bad2[] = "2000-1000 r-xp 00000000 00:00 0 /x\n";
        struct proc_maps_line l;

        ok(proc_maps_parse_line(line1, &l) == 0, "a library line");
        ok(l.start == 0x7f2c4a000000 && l.end == 0x7f2c4a022000 && l.pgoff == 0x28000 && l.exec &&
                   l.dev_major == 0xfe && l.dev_minor == 1 && l.ino == 1234567,
           "its fields");
        ok(strcmp(l.path, "/usr/lib/x86_64-linux-gnu/libc.so.6") == 0 && !l.deleted, "its path");
        ok(proc_maps_parse_line(line2, &l) == 0 && strcmp(l.path, "[vdso]") == 0, "[vdso]");
        ok(proc_maps_parse_line(line3, &l) == 0 && !l.exec && l.path[0] == '\0',
           "an anonymous writable mapping");
        ok(proc_maps_parse_line(line4, &l) == 0 && l.deleted && strcmp(l.path, "/tmp/my prog") == 0,
           "a deleted file with a space in its name");
        ok(proc_maps_parse_line(bad1, &l) == -EBADMSG, "nonsense: -EBADMSG");
        ok(proc_maps_parse_line(bad2, &l) == -EBADMSG, "start after end: -EBADMSG");
}

/* Generations name contents: every change a new number, a copy the same. */
static void test_generation(void) {
        _cleanup_(proc_maps_freep) struct proc_maps *a = proc_maps_new(), *b = proc_maps_new(), *copy = NULL;
        uint64_t g;

        ok(a->generation != 0 && b->generation != 0 && a->generation != b->generation,
           "two new spaces: two generations");
        g = a->generation;
        ok(proc_maps_add(a, 0x1000, 0x2000, 0, 1) == 0 && a->generation != g &&
                   a->generation != b->generation,
           "a mapping added: a new one");
        copy = proc_maps_copy(a);
        ok(copy && copy->generation == a->generation, "a copy keeps it");
        g = copy->generation;
        proc_maps_clear(copy);
        ok(copy->generation != g && a->generation == g,
           "cleared: the copy gets a new one, the original keeps its");
}

int main(void) {
        test_add();
        test_shared();
        test_generation();
        test_parse();
        return tap_done();
}
