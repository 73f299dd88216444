/* tests/unit/test-tree-load.c: the steps both tree loaders share (tree-load.c). The same frames,
 * stacks and sample rows go through them twice, once as store-read.c feeds them (a frame table
 * labelled in id order with a cache per function id, a trie of stacks mapped through a memo of
 * parents) and once as ch-read.c does (frames labelled at first sight, no function ids, each
 * stack pushed root first), and the two trees must read the same: stacks and hits, header,
 * every label's module and stored name. Labels and filters are also checked by hand. */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample-tree-walk.h"
#include "strv.h"
#include "tap.h"
#include "tree-load.h"

struct module {
        const char *path, *build_id;
};

struct frame {
        const char *name;
        uint32_t function; /* the SQLite store's function id */
        const char *file;
        int64_t line, address;
        int module; /* index in MODULES, -1: none */
        bool inlined, unknown;
};

static const struct module modules[] = {
        { "/usr/bin/app", "aa" },
        { "/usr/lib/libc.so.6", "cc" },
        { "[kernel.kallsyms]", "" },
        { "/opt/lib/libx.so", "" },
};

/* In frame-table order, which is not the order the stacks meet them in. */
static const struct frame frames[] = {
        /* 0 */ { "do_syscall_64", 7, NULL, 0, -1, 2, false, false },
        /* 1 */ { "main", 1, "/src/app/main.c", 12, 0x40, 0, false, false },
        /* 2 */ { "_ZN3foo3barEv", 2, "/src/app/foo.cc", 30, 0x80, 0, false, false },
        /* 3 */ { "_ZN3foo3barEv", 2, "/src/app/foo.cc", 31, 0x88, 0, false, false },
        /* 4 */ { "inl_helper", 3, "/src/app/foo.h", 5, -1, 0, true, false },
        /* 5 */ { "libx.so+0x1234", 4, NULL, 0, 0x1234, 3, false, true },
        /* 6 */ { "_Z7mangledv", 5, NULL, 0, 0x10, 3, false, true },
        /* 7 */ { "memcpy", 6, NULL, 0, -1, 1, false, false },
        /* 8 */ { "main", 8, "/src/other/main.c", 3, 0x10, 1, false, false },
        /* 9 */ { "write", 9, NULL, 0, -1, -1, false, false },
};

#define MAX_DEPTH 8
struct stack {
        int frames[MAX_DEPTH]; /* root first, -1 ends */
};

static const struct stack stacks[] = {
        { { 1, 2, 4, 7, -1 } }, { { 1, 3, 4, -1 } }, { { 1, 2, 5, 6, -1 } },
        { { 1, 9, 0, -1 } },    { { 8, 7, -1 } },    { { 1, 2, -1 } },
};
#define N_STACKS (sizeof stacks / sizeof *stacks)

struct row {
        int stack;
        uint64_t period, hits, samples;
        double squares;
};

static const struct row rows[] = {
        { 0, 1000, 5, 5, 5 }, { 1, 1000, 3, 2, 5 }, { 2, 2000, 4, 4, 4 }, { 3, 1000, 2, 1, 4 },
        { 4, 3000, 1, 1, 1 }, { 5, 1000, 6, 6, 6 }, { 0, 2000, 1, 1, 1 },
};
#define N_ROWS (sizeof rows / sizeof *rows)
#define GCD 1000

static struct tree_load_frame stored(const struct frame *fr, uint32_t function, uint32_t module_index) {
        return (struct tree_load_frame) {
                .name = fr->name,
                .function = function,
                .file = fr->file,
                .line = fr->line,
                .address = fr->address,
                .module = fr->module >= 0 ? modules[fr->module].path : NULL,
                .module_index = module_index,
                .inlined = fr->inlined,
                .unknown = fr->unknown,
        };
}

/* As store-read.c: modules and labels in frame-table order, function ids cached, labels no other
 * frame has marked, a trie of stack ids (parent's below child's) mapped through a memo of
 * parents. */
static struct sample_tree *load_as_sqlite(const struct store_filter *f) {
        struct sample_tree *tree = sample_tree_new(NULL);
        struct tree_load l;
        struct tree_load_label info[sizeof frames / sizeof *frames];
        uint32_t tree_module[sizeof modules / sizeof *modules];
        /* the stored trie: id 0 is the root */
        int parent[64], frame[64], n_ids = 1, id_of[N_STACKS];
        struct tree_load_stack memo[64];

        if (!tree || tree_load_init(&l, f, tree, 10) < 0)
                abort();
        l.g = GCD;
        for (size_t m = 0; m < sizeof modules / sizeof *modules; m++)
                tree_module[m] = SAMPLE_TREE_NONE;
        for (size_t i = 0; i < sizeof frames / sizeof *frames; i++) {
                const struct frame *fr = &frames[i];
                struct tree_load_frame sf;

                if (fr->module >= 0 && tree_module[fr->module] == SAMPLE_TREE_NONE)
                        tree_module[fr->module] = sample_tree_add_module(tree, modules[fr->module].path,
                                                                         modules[fr->module].build_id);
                sf = stored(fr, fr->function, fr->module >= 0 ? tree_module[fr->module] : SAMPLE_TREE_NONE);
                if (tree_load_label(&l, &sf, &info[i]) < 0)
                        abort();
        }
        /* The labels no other frame has, unless a frame is skipped: their nodes are added
         * without the map of children below nodes no other stack maps to. */
        for (size_t i = 0; i < sizeof frames / sizeof *frames; i++) {
                size_t uses = 0;
                bool skip = false;

                for (size_t j = 0; j < sizeof frames / sizeof *frames; j++) {
                        uses += info[j].label == info[i].label;
                        skip |= info[j].skip;
                }
                info[i].unique = !skip && uses == 1;
        }
        for (size_t s = 0; s < N_STACKS; s++) {
                int id = 0;

                for (int k = 0; stacks[s].frames[k] >= 0; k++) {
                        int child = -1;

                        for (int i = 1; i < n_ids && child < 0; i++)
                                if (parent[i] == id && frame[i] == stacks[s].frames[k])
                                        child = i;
                        if (child < 0) {
                                child = n_ids++;
                                parent[child] = id;
                                frame[child] = stacks[s].frames[k];
                        }
                        id = child;
                }
                id_of[s] = id;
        }
        for (int i = 0; i < n_ids; i++)
                memo[i] = (struct tree_load_stack) { .node = SAMPLE_TREE_NONE };
        memo[0].node = SAMPLE_TREE_ROOT;
        for (size_t r = 0; r < N_ROWS; r++) {
                int path[MAX_DEPTH], n = 0;

                for (int i = id_of[rows[r].stack]; memo[i].node == SAMPLE_TREE_NONE; i = parent[i])
                        path[n++] = i;
                while (n > 0) {
                        int i = path[--n];

                        if (tree_load_push(&l, &memo[parent[i]], &info[frame[i]], &memo[i]) < 0)
                                abort();
                }
                if (tree_load_add(&l, &memo[id_of[rows[r].stack]], rows[r].period, rows[r].hits,
                                  rows[r].samples, rows[r].squares) < 0)
                        abort();
        }
        tree_load_done(&l);
        sample_tree_weigh(tree);
        return tree;
}

/* As ch-read.c: no function ids; frames and modules at first sight in the stacks' order; each
 * stack pushed root first, and remembered by its index. */
static struct sample_tree *load_as_clickhouse(const struct store_filter *f) {
        struct sample_tree *tree = sample_tree_new(NULL);
        struct tree_load l;
        struct tree_load_label info[sizeof frames / sizeof *frames];
        bool seen[sizeof frames / sizeof *frames] = {};
        uint32_t tree_module[sizeof modules / sizeof *modules];
        struct tree_load_stack mapped[N_STACKS];

        if (!tree || tree_load_init(&l, f, tree, 0) < 0)
                abort();
        l.g = GCD;
        for (size_t m = 0; m < sizeof modules / sizeof *modules; m++)
                tree_module[m] = SAMPLE_TREE_NONE;
        for (size_t s = 0; s < N_STACKS; s++) {
                struct tree_load_stack cur = { .node = SAMPLE_TREE_ROOT };

                for (int k = 0; stacks[s].frames[k] >= 0; k++) {
                        int i = stacks[s].frames[k];
                        const struct frame *fr = &frames[i];

                        if (!seen[i]) {
                                struct tree_load_frame sf;

                                if (fr->module >= 0 && tree_module[fr->module] == SAMPLE_TREE_NONE)
                                        tree_module[fr->module] =
                                                sample_tree_add_module(tree, modules[fr->module].path,
                                                                       modules[fr->module].build_id);
                                sf = stored(fr, UINT32_MAX,
                                            fr->module >= 0 ? tree_module[fr->module] : SAMPLE_TREE_NONE);
                                if (tree_load_label(&l, &sf, &info[i]) < 0)
                                        abort();
                                seen[i] = true;
                        }
                        if (tree_load_push(&l, &cur, &info[i], &cur) < 0)
                                abort();
                }
                mapped[s] = cur;
        }
        for (size_t r = 0; r < N_ROWS; r++)
                if (tree_load_add(&l, &mapped[rows[r].stack], rows[r].period, rows[r].hits, rows[r].samples,
                                  rows[r].squares) < 0)
                        abort();
        tree_load_done(&l);
        sample_tree_weigh(tree);
        return tree;
}

static int print_stack(const struct sample_tree *t, uint32_t node, const uint32_t *path, size_t depth,
                       void *userdata) {
        char ***lines = userdata, *line = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&line, &len);

        if (!f)
                abort();
        for (size_t i = 0; i < depth; i++) {
                const struct sample_tree_module *m = sample_tree_label_module(t, path[i]);
                const char *raw = sample_tree_label_raw(t, path[i]);

                fprintf(f, "%s%s", i ? ";" : "", name_table_get(t->names, path[i]));
                if (m)
                        fprintf(f, "[%s %s]", m->path, m->build_id);
                if (raw)
                        fprintf(f, "{%s}", raw);
        }
        fprintf(f, " %llu", (unsigned long long) t->nodes[node].self);
        fclose(f);
        if (strv_extend(lines, line) < 0)
                abort();
        free(line);
        return 0;
}

/* The tree as text: each stack with its labels' modules and stored names, and the header. */
static char *tree_text(const struct sample_tree *t) {
        char **lines = NULL, *text = NULL, *s;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        if (!f || sample_tree_each_stack(t, print_stack, &lines) < 0)
                abort();
        for (char **l = lines; l && *l; l++)
                fprintf(f, "%s\n", *l);
        fprintf(f, "total %llu samples %llu squares %.1f frames %llu unsymbolized %llu\n",
                (unsigned long long) t->total, (unsigned long long) t->info.samples, t->info.hits_squared,
                (unsigned long long) t->info.frames, (unsigned long long) t->info.frames_unsymbolized);
        fclose(f);
        strv_free(lines);
        s = text;
        return s;
}

static regex_t *compile(regex_t *re, const char *pattern) {
        if (regcomp(re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
                abort();
        return re;
}

/* Loads the rows both ways under F and compares; returns the first way's text (freed by the
 * caller) for checks by hand. */
static char *both_ways(const struct store_filter *f, const char *what) {
        struct sample_tree *a = load_as_sqlite(f), *b = load_as_clickhouse(f);
        char *ta = tree_text(a), *tb = tree_text(b);

        if (!ok(streq(ta, tb), "%s: the same tree both ways", what))
                printf("# as store-read.c:\n%s# as ch-read.c:\n%s", ta, tb);
        free(tb);
        sample_tree_free(a);
        sample_tree_free(b);
        return ta;
}

static bool has_line(const char *text, const char *line) {
        size_t n = strlen(line);

        for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
                        return true;
        return false;
}

static void check(const char *text, const char *line) {
        if (!ok(has_line(text, line), "has %s", line))
                printf("# in:\n%s", text);
}

int main(void) {
        regex_t focus, ignore, hide;
        char *t;

        t = both_ways(&(struct store_filter) { .by = STORE_BY_FUNCTION }, "by function");
        check(t,
              "main[/usr/bin/app aa];foo::bar()[/usr/bin/app aa]{_ZN3foo3barEv};inl_helper[/usr/bin/app aa];"
              "memcpy[/usr/lib/libc.so.6 cc] 7");
        check(t,
              "main[/usr/bin/app aa];foo::bar()[/usr/bin/app aa]{_ZN3foo3barEv};libx.so+0x1234[/opt/lib/libx.so ];"
              "_Z7mangledv[/opt/lib/libx.so ] 8");
        check(t, "main[/usr/bin/app aa];write;do_syscall_64[[kernel.kallsyms] ] 2");
        check(t, "total 29 samples 20 squares 49.0 frames 93 unsymbolized 16");
        free(t);

        t = both_ways(&(struct store_filter) { .by = STORE_BY_FUNCTION, .raw_names = true }, "raw names");
        check(t, "main[/usr/bin/app aa];_ZN3foo3barEv[/usr/bin/app aa] 6");
        free(t);

        t = both_ways(&(struct store_filter) { .by = STORE_BY_LINE }, "by line");
        check(t,
              "main (main.c:12)[/usr/bin/app aa];foo::bar() (foo.cc:31)[/usr/bin/app aa];"
              "inl_helper (foo.h:5)[/usr/bin/app aa] 3");
        check(t,
              "main (main.c:12)[/usr/bin/app aa];foo::bar() (foo.cc:30)[/usr/bin/app aa];"
              "libx.so+0x1234 (+0x1234)[/opt/lib/libx.so ];_Z7mangledv (+0x10)[/opt/lib/libx.so ] 8");
        check(t, "main (main.c:3)[/usr/lib/libc.so.6 cc];memcpy[/usr/lib/libc.so.6 cc] 3");
        free(t);

        t = both_ways(&(struct store_filter) { .by = STORE_BY_MODULE }, "by module");
        check(t, "app[/usr/bin/app aa];[unknown];[kernel.kallsyms][[kernel.kallsyms] ] 2");
        free(t);

        t = both_ways(&(struct store_filter) { .by = STORE_BY_FUNCTION, .fold_inline = true },
                      "inline folded");
        check(t, "main[/usr/bin/app aa];foo::bar()[/usr/bin/app aa]{_ZN3foo3barEv} 9");
        check(t,
              "main[/usr/bin/app aa];foo::bar()[/usr/bin/app aa]{_ZN3foo3barEv};memcpy[/usr/lib/libc.so.6 cc] 7");
        free(t);

        t = both_ways(&(struct store_filter) { .by = STORE_BY_FUNCTION, .focus = compile(&focus, "^foo::") },
                      "focus");
        check(t, "total 24 samples 18 squares 36.0 frames 81 unsymbolized 16");
        free(t);
        t = both_ways(&(struct store_filter) { .by = STORE_BY_FUNCTION,
                                               .ignore = compile(&ignore, "memcpy") },
                      "ignore");
        check(t, "total 19 samples 13 squares 31.0 frames 59 unsymbolized 16");
        free(t);
        t = both_ways(&(struct store_filter) { .by = STORE_BY_LINE, .hide = compile(&hide, "^main ") },
                      "hide");
        check(t, "memcpy[/usr/lib/libc.so.6 cc] 3");
        free(t);
        regfree(&focus);
        regfree(&ignore);
        regfree(&hide);

        /* A row past 2^63 gticks is refused. */
        {
                struct sample_tree *tree = sample_tree_new(NULL);
                struct store_filter f = { .by = STORE_BY_FUNCTION };
                struct tree_load_stack root = { .node = SAMPLE_TREE_ROOT };
                struct tree_load l;

                if (!tree || tree_load_init(&l, &f, tree, 0) < 0)
                        abort();
                is_int(tree_load_add(&l, &root, 2, INT64_MAX / 2, 1, 0), 1, "2^63 - 2 gticks fit");
                is_int(tree_load_add(&l, &root, 2, 1, 1, 0), -EOVERFLOW, "2 more do not");
                tree_load_done(&l);
                sample_tree_free(tree);
        }
        return tap_done();
}
