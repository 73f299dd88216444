/* The collector's stacks against a model: random frame-pointer samples of three threads of one
 * process whose code is this very program (mapped by an MMAP2 record), each stack sharing a
 * random part of its thread's last one (the collector keeps the trie nodes of that part), with
 * addresses outside every mapping among them (frames that are not kept), and the program
 * exec'ing again now and then (new mappings, nothing kept may be used). The store must hold
 * exactly the stacks the model names, each with its hits. */
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector.h"
#include "folded-tree.h"
#include "store.h"
#include "tap.h"

#define PID 4194301u
#define N_FUNCTIONS 8
#define N_SAMPLES 20000
#define MAX_DEPTH 40

/* Functions of this program to name frames after: distinct bodies (never merged) of more than
 * the 5 bytes a return address lies past the start, never inlined. */
static volatile int sink;
#define FUNCTION(k) \
        __attribute__((noinline, used)) int fn##k(int x); \
        __attribute__((noinline, used)) int fn##k(int x) { \
                sink = x; \
                sink = x + k; \
                sink = x * (k + 3); \
                return sink + k; \
        }
FUNCTION(0)
FUNCTION(1)
FUNCTION(2)
FUNCTION(3)
FUNCTION(4)
FUNCTION(5)
FUNCTION(6)
FUNCTION(7)

static int (*const functions[N_FUNCTIONS])(int) = { fn0, fn1, fn2, fn3, fn4, fn5, fn6, fn7 };
static const char *const names[N_FUNCTIONS] = { "fn0", "fn1", "fn2", "fn3", "fn4", "fn5", "fn6", "fn7" };

static uint64_t record[1024];

/* The executable mapping of this program that holds fn0: its range, offset, file and inode. */
static struct {
        uint64_t start, end, pgoff, ino;
        unsigned maj, min;
        char path[512];
} self;

static bool find_self(void) {
        FILE *f = fopen("/proc/self/maps", "re");
        char line[1024];
        uint64_t at = (uint64_t) (uintptr_t) fn0;
        bool found = false;

        while (f && !found && fgets(line, sizeof line, f)) {
                char perms[8];
                int off = 0;

                if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &self.start, &self.end, perms, &self.pgoff,
                           &self.maj, &self.min, &self.ino, &off) >= 7 &&
                    perms[2] == 'x' && self.start <= at && at < self.end) {
                        snprintf(self.path, sizeof self.path, "%s", line + off);
                        self.path[strcspn(self.path, "\n")] = '\0';
                        found = true;
                }
        }
        if (f)
                fclose(f);
        return found;
}

static int feed_mmap(struct collector *c, uint64_t time) {
        struct perf_event_header *h = (void *) record;
        uint8_t *p = (uint8_t *) (h + 1);
        uint32_t ids[6] = { self.maj, self.min };
        size_t len = strlen(self.path) + 1;

        memcpy(p, &(uint32_t[2]) { PID, PID }, 8);
        memcpy(p + 8, &(uint64_t[3]) { self.start, self.end - self.start, self.pgoff }, 24);
        memcpy(ids + 2, &self.ino, 8);
        memcpy(p + 32, ids, 24);
        memcpy(p + 56, &(uint32_t[2]) { 5 /* r-x */, 2 /* MAP_PRIVATE */ }, 8);
        memcpy(p + 64, self.path, len);
        len = (64 + len + 7) & ~(size_t) 7;
        memcpy(p + len, &(uint64_t[3]) { (uint64_t) PID << 32 | PID, time, 0 }, 24); /* sample_id */
        *h = (struct perf_event_header) { .type = PERF_RECORD_MMAP2,
                                          .misc = PERF_RECORD_MISC_USER,
                                          .size = (uint16_t) (sizeof *h + len + 24) };
        return collector_feed(c, h, 0);
}

static int feed_exec(struct collector *c, uint64_t time) {
        struct perf_event_header *h = (void *) record;
        uint8_t *p = (uint8_t *) (h + 1);

        memcpy(p, &(uint32_t[2]) { PID, PID }, 8);
        memcpy(p + 8, "model\0\0\0", 8);
        memcpy(p + 16, &(uint64_t[3]) { (uint64_t) PID << 32 | PID, time, 0 }, 24);
        *h = (struct perf_event_header) { .type = PERF_RECORD_COMM,
                                          .misc = PERF_RECORD_MISC_COMM_EXEC,
                                          .size = sizeof *h + 40 };
        return collector_feed(c, h, 0);
}

/* Whether trees A and B hold the same stacks with the same hits, by names: node by node of A
 * found in B, and as many nodes. */
static bool same_trees(const struct sample_tree *a, struct sample_tree *b, char *why, size_t size) {
        uint32_t *map = calloc(a->n_nodes, sizeof *map);
        bool same = true;

        for (size_t i = 1; same && i < a->n_nodes; i++) {
                const struct sample_tree_node *n = &a->nodes[i];
                uint32_t name = name_table_find(b->names, sample_tree_name(a, n->name));
                int64_t m = name == NAME_NONE ? -1 : sample_tree_child(b, map[n->parent], name);

                if (m < 0 || (size_t) m >= b->n_nodes || b->nodes[m].self != n->self) {
                        uint32_t names_up[MAX_DEPTH + 1];
                        size_t k = sample_tree_stack(a, i, names_up), len;

                        len = (size_t) snprintf(why, size,
                                                "node %zu (%llu hits, %lld there) not so in the store:", i,
                                                (unsigned long long) n->self,
                                                m < 0 ? -1LL : (long long) b->nodes[m].self);
                        for (size_t j = 0; j < k && len < size; j++)
                                len += (size_t) snprintf(why + len, size - len, " %s",
                                                         sample_tree_name(a, names_up[j]));
                        same = false;
                        break;
                }
                map[i] = (uint32_t) m;
        }
        if (same && a->n_nodes != b->n_nodes) {
                snprintf(why, size, "%zu stacks' nodes in the model, %zu stored", a->n_nodes, b->n_nodes);
                same = false;
        }
        free(map);
        return same;
}

int main(void) {
        char dir[] = "/tmp/test-collector-stacks-XXXXXX", db[128], why[1024] = "";
        struct collector_config config = COLLECTOR_CONFIG_DEFAULT;
        _cleanup_(sample_tree_freep) struct sample_tree *model = sample_tree_new(NULL), *stored = NULL;
        struct store *s = NULL;
        struct collector *c = NULL;
        /* Per thread, its last stack outermost first: a function index, or -1 for an address
         * outside every mapping. */
        int last[3][MAX_DEPTH], depth[3] = { 0 };
        uint64_t id, time = 1000;
        unsigned execs = 0, unknown = 0;
        bool mapped = true, fed = true;

        if (!mkdtemp(dir) || !find_self())
                return 1;
        snprintf(db, sizeof db, "%s/s.db", dir);
        config.unwind = UNWIND_FP;
        ok(store_open(db, STORE_WRITE, &s) == 0 && collector_new(&config, s, &c) == 0 &&
                   collector_add_offline_resource(c, "cpu-clock", "1 ns of CPU time", "test", 1, &id) == 0 &&
                   collector_set_origin(c, NULL, 0, 0) == 0,
           "a collector over a store");
        ok(feed_mmap(c, time++) == 0, "this program mapped into process %u", PID);
        srand(7);
        for (unsigned i = 0; i < N_SAMPLES && fed; i++) {
                unsigned t = rand() % 3;
                uint64_t ips[MAX_DEPTH + 1];
                uint32_t path[MAX_DEPTH];
                struct record_sample rs;
                int *stack = last[t];

                /* An exec now and then: nothing mapped until its MMAP2, a while later. */
                if (rand() % 997 == 0) {
                        fed = feed_exec(c, time++) == 0;
                        mapped = false;
                        execs++;
                } else if (!mapped && rand() % 7 == 0) {
                        fed = feed_mmap(c, time++) == 0;
                        mapped = true;
                }
                /* Keep a random part of the thread's last stack, then grow it anew. */
                depth[t] = rand() % (depth[t] + 1);
                for (int d = depth[t], to = 1 + rand() % MAX_DEPTH; d < to; d++)
                        stack[depth[t]++] = rand() % 13 == 0 ? -1 : rand() % N_FUNCTIONS;
                if (depth[t] == 0)
                        stack[depth[t]++] = 0;
                ips[0] = PERF_CONTEXT_USER;
                for (int d = 0; d < depth[t]; d++) {
                        int f = stack[depth[t] - 1 - d]; /* innermost first */
                        const char *name = f >= 0 && mapped ? names[f] : "[unknown]";

                        /* Return addresses: the collector looks up the byte before each. */
                        ips[1 + d] =
                                f >= 0 ? (uint64_t) (uintptr_t) functions[f] + 5 : 0x10 + 16 * (uint64_t) d;
                        path[depth[t] - 1 - d] =
                                (uint32_t) name_table_intern(model->names, name, strlen(name));
                        unknown += f < 0 || !mapped;
                }
                sample_tree_add(model, path, depth[t], 1);
                rs = (struct record_sample) {
                        .id = id,
                        .ip = ips[1],
                        .pid = PID,
                        .tid = PID + t,
                        .time = time++,
                        .nr = depth[t] + 1,
                        .ips = ips,
                };
                fed = collector_feed_sample(c, &rs, 1) == 0;
        }
        ok(fed, "%d samples fed, %u execs, %u frames outside every mapping", N_SAMPLES, execs, unknown);
        ok(collector_flush(c, true) == 0, "and stored");
        c = collector_free(c);
        ok(store_load_tree(s, &(struct store_filter) { .resource = "cpu-clock" }, &stored) == 0,
           "the tree loads");
        ok(stored && same_trees(model, stored, why, sizeof why),
           "the stored stacks are the model's, hits and all");
        if (why[0])
                diag(why);
        store_close(s);
        unlink(db);
        rmdir(dir);
        return tap_done();
}
