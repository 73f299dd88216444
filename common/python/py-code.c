/* Naming Python frames: code objects read from a process (process_vm_readv) the first time a
 * sample names them, checked before anything in them is believed (a code object's type is
 * PyCode_Type, its names are str, its line table bytes, every length bounded: what the kernel
 * recorded may be garbage, or another object at a freed one's address), and kept per process
 * with their line tables decoded into runs (doc/design/python-frames.md, §1.5, §3.5). */
#include "py-code.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "idmap.h"

#define MAX_NAME 4096           /* characters of a name or file */
#define MAX_LINETABLE (1 << 20) /* bytes of a location table */
#define MAX_CODES 65536         /* code objects kept per process, before it starts over */
#define HEAD_SIZE 256           /* bytes of a code object read: past every field a layout names */

struct line_run {
        uint32_t start, end; /* code units [start, end) */
        int32_t line;        /* -1: none */
};

struct code {
        uint64_t addr, globals;
        char *qualname, *filename;
        uint32_t firstlineno, firsttraceable, code_units;
        struct line_run *runs;
        size_t n_runs, cap_runs;
        bool bad; /* not a readable code object: -EBADMSG until read again */
};

struct process_codes {
        pid_t pid;
        struct idmap *by_addr; /* code object -> index in codes; NULL once forgotten */
        struct code *codes;
        size_t n, cap;
};

struct py_code_cache {
        struct idmap *by_pid; /* pid -> index in procs */
        struct process_codes *procs;
        size_t n, cap;
};

struct py_code_cache *py_code_cache_new(void) {
        struct py_code_cache *c = calloc(1, sizeof *c);

        if (c && !(c->by_pid = idmap_new()))
                c = mfree(c);
        return c;
}

static void code_clear(struct code *k) {
        free(k->qualname);
        free(k->filename);
        free(k->runs);
        *k = (struct code) {};
}

static void process_clear(struct process_codes *p) {
        for (size_t i = 0; i < p->n; i++)
                code_clear(&p->codes[i]);
        p->n = 0;
        if (p->by_addr)
                idmap_clear(p->by_addr);
}

struct py_code_cache *py_code_cache_free(struct py_code_cache *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n; i++) {
                process_clear(&c->procs[i]);
                idmap_free(c->procs[i].by_addr);
                free(c->procs[i].codes);
        }
        free(c->procs);
        idmap_free(c->by_pid);
        free(c);
        return NULL;
}

void py_code_cache_forget(struct py_code_cache *c, uint64_t key) {
        uint64_t *slot = idmap_get(c->by_pid, key);
        struct process_codes *p;

        if (!slot)
                return;
        /* A daemon sees many processes come and go: only the entry's few bytes stay behind. */
        p = &c->procs[*slot];
        process_clear(p);
        p->by_addr = idmap_free(p->by_addr);
        p->codes = mfree(p->codes);
        p->cap = 0;
}

static uint64_t u64_at(const uint8_t *b, uint16_t off) {
        uint64_t v;

        memcpy(&v, b + off, 8);
        return v;
}

static uint32_t u32_at(const uint8_t *b, uint16_t off) {
        uint32_t v;

        memcpy(&v, b + off, 4);
        return v;
}

/* Appends code point CP as UTF-8 to OUT at *N (room for 4 more). */
static void put_utf8(char *out, size_t *n, uint32_t cp) {
        if (cp >= 0xd800 && cp < 0xe000)
                cp = 0xfffd; /* a lone surrogate */
        if (cp < 0x80)
                out[(*n)++] = (char) cp;
        else if (cp < 0x800) {
                out[(*n)++] = (char) (0xc0 | cp >> 6);
                out[(*n)++] = (char) (0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
                out[(*n)++] = (char) (0xe0 | cp >> 12);
                out[(*n)++] = (char) (0x80 | (cp >> 6 & 0x3f));
                out[(*n)++] = (char) (0x80 | (cp & 0x3f));
        } else if (cp < 0x110000) {
                out[(*n)++] = (char) (0xf0 | cp >> 18);
                out[(*n)++] = (char) (0x80 | (cp >> 12 & 0x3f));
                out[(*n)++] = (char) (0x80 | (cp >> 6 & 0x3f));
                out[(*n)++] = (char) (0x80 | (cp & 0x3f));
        } else
                put_utf8(out, n, 0xfffd);
}

/* The str at ADDR of process PID, as UTF-8 (malloc()ed), or NULL: not a compact str of P's
 * PyUnicode_Type (where known), longer than MAX_NAME, or unreadable. */
static char *read_str(pid_t pid, const struct py_process *p, uint64_t addr) {
        const struct py_layout *l = p->layout;
        uint8_t head[80];
        uint64_t length;
        uint32_t state, kind;
        bool ascii, compact;
        _cleanup_free_ uint8_t *data = NULL;
        char *out;
        size_t n = 0;

        if (addr == 0 || py_read_memory(pid, addr, head, sizeof head) < 0)
                return NULL;
        if (p->unicode_type && u64_at(head, 8) != p->unicode_type)
                return NULL;
        length = u64_at(head, l->str_length);
        state = u32_at(head, l->str_state);
        kind = state >> 2 & 7;
        compact = state >> 5 & 1;
        ascii = state >> 6 & 1;
        if (!compact || length > MAX_NAME || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1))
                return NULL;
        data = malloc(length * kind + 1);
        out = malloc(length * 4 + 1);
        if (!data || !out ||
            py_read_memory(pid, addr + (ascii ? l->str_ascii_data : l->str_compact_data), data,
                           length * kind) < 0) {
                free(out);
                return NULL;
        }
        for (uint64_t i = 0; i < length; i++) {
                uint32_t cp;

                if (kind == 1)
                        cp = data[i];
                else if (kind == 2)
                        cp = (uint32_t) data[2 * i] | (uint32_t) data[2 * i + 1] << 8;
                else
                        memcpy(&cp, data + 4 * i, 4);
                if (ascii && cp >= 0x80)
                        cp = 0xfffd;
                put_utf8(out, &n, cp);
        }
        out[n] = '\0';
        return out;
}

/* Varints of the location table (Objects/locations.md): 6 bits a byte, low first, 0x40 = more. */
static bool varint(const uint8_t *t, size_t n, size_t *i, uint32_t *ret) {
        uint32_t v = 0;

        for (unsigned shift = 0; *i < n && shift < 32; shift += 6) {
                uint8_t b = t[(*i)++];

                v |= (uint32_t) (b & 0x3f) << shift;
                if (!(b & 0x40)) {
                        *ret = v;
                        return true;
                }
        }
        return false;
}

static bool svarint(const uint8_t *t, size_t n, size_t *i, int32_t *ret) {
        uint32_t v;

        if (!varint(t, n, i, &v))
                return false;
        *ret = v & 1 ? -(int32_t) (v >> 1) : (int32_t) (v >> 1);
        return true;
}

/* Calls EACH for every entry of TABLE: its code units [start, end) and its line (-1: none).
 * False if the table does not add up. */
static bool walk_table(const uint8_t *table, size_t n, uint32_t firstlineno,
                       bool (*each)(void *userdata, uint32_t start, uint32_t end, int32_t line),
                       void *userdata) {
        int64_t line = firstlineno;
        uint32_t start = 0;
        size_t i = 0;

        while (i < n) {
                uint8_t b = table[i++];
                unsigned code = b >> 3 & 15, len = (b & 7) + 1;
                int32_t delta = 0;
                uint32_t skip;
                bool has_line = true;

                if (!(b & 0x80))
                        return false; /* every entry starts with bit 7 set */
                if (code == 15)
                        has_line = false;
                else if (code == 14) { /* long form: line delta, end line, columns */
                        if (!svarint(table, n, &i, &delta) || !varint(table, n, &i, &skip) ||
                            !varint(table, n, &i, &skip) || !varint(table, n, &i, &skip))
                                return false;
                } else if (code == 13) { /* no column */
                        if (!svarint(table, n, &i, &delta))
                                return false;
                } else if (code >= 10) { /* one line: delta code - 10, two bytes of columns */
                        delta = (int32_t) code - 10;
                        i += 2;
                } else /* short form: same line, one byte of column */
                        i += 1;
                if (i > n)
                        return false;
                line += delta;
                if (!each(userdata, start, start + len, has_line ? (int32_t) line : -1))
                        return false;
                start += len;
        }
        return true;
}

struct line_of {
        int32_t lasti, line;
        bool found;
};

static bool find_line(void *userdata, uint32_t start, uint32_t end, int32_t line) {
        struct line_of *x = userdata;

        /* PyCode_Addr2Line: the first entry that ends past the instruction holds it. */
        if ((uint32_t) x->lasti >= start && (uint32_t) x->lasti < end) {
                x->line = line;
                x->found = true;
                return false;
        }
        return true;
}

int32_t py_line_of(const uint8_t *table, size_t n, uint32_t firstlineno, int32_t lasti) {
        struct line_of x = { .lasti = lasti, .line = -1 };

        if (lasti < 0)
                return (int32_t) firstlineno;
        (void) walk_table(table, n, firstlineno, find_line, &x);
        return x.found ? x.line : -1;
}

static bool add_run(void *userdata, uint32_t start, uint32_t end, int32_t line) {
        struct code *k = userdata;

        if (k->n_runs > 0 && k->runs[k->n_runs - 1].line == line && k->runs[k->n_runs - 1].end == start) {
                k->runs[k->n_runs - 1].end = end;
                return true;
        }
        if (GROW(k->runs, k->cap_runs, k->n_runs + 1) < 0)
                return false;
        k->runs[k->n_runs++] = (struct line_run) { .start = start, .end = end, .line = line };
        return true;
}

/* Reads code object ADDR of PID into K. Returns 0, -EBADMSG (not a code object), -ESRCH. */
static int read_code(pid_t pid, const struct py_process *p, uint64_t addr, uint64_t globals, struct code *k) {
        const struct py_layout *l = p->layout;
        uint8_t head[HEAD_SIZE], bytes[48];
        uint64_t table_addr, table_size;
        _cleanup_free_ uint8_t *table = NULL;
        int r;

        *k = (struct code) { .addr = addr, .globals = globals };
        r = py_read_memory(pid, addr, head, sizeof head);
        if (r == -ESRCH)
                return r;
        if (r < 0 || (p->code_type && u64_at(head, 8) != p->code_type))
                goto bad;
        k->code_units = (uint32_t) u64_at(head, l->co_size);
        k->firstlineno = u32_at(head, l->co_firstlineno);
        k->firsttraceable = u32_at(head, l->co_firsttraceable);
        k->qualname = read_str(pid, p, u64_at(head, l->co_qualname));
        k->filename = read_str(pid, p, u64_at(head, l->co_filename));
        if (!k->qualname || !k->filename)
                goto bad;
        table_addr = u64_at(head, l->co_linetable);
        if (py_read_memory(pid, table_addr, bytes, sizeof bytes) < 0 ||
            (p->bytes_type && u64_at(bytes, 8) != p->bytes_type))
                goto bad;
        table_size = u64_at(bytes, l->bytes_size);
        if (table_size > MAX_LINETABLE || !(table = malloc(table_size + 1)) ||
            py_read_memory(pid, table_addr + l->bytes_data, table, table_size) < 0 ||
            !walk_table(table, table_size, k->firstlineno, add_run, k))
                goto bad;
        return 0;
bad:
        code_clear(k);
        k->addr = addr;
        k->globals = globals;
        k->bad = true;
        return -EBADMSG;
}

static struct process_codes *process_of(struct py_code_cache *c, uint64_t key, pid_t pid) {
        uint64_t *slot = idmap_get(c->by_pid, key);

        if (slot) {
                struct process_codes *p = &c->procs[*slot];

                if (!p->by_addr && !(p->by_addr = idmap_new())) /* forgotten, and seen again */
                        return NULL;
                return p;
        }
        if (GROW(c->procs, c->cap, c->n + 1) < 0)
                return NULL;
        c->procs[c->n] = (struct process_codes) { .pid = pid, .by_addr = idmap_new() };
        if (!c->procs[c->n].by_addr || idmap_put(c->by_pid, key, c->n, &slot) < 0) {
                idmap_free(c->procs[c->n].by_addr);
                return NULL;
        }
        return &c->procs[c->n++];
}

int py_code_cache_name(struct py_code_cache *c, pid_t pid, const struct py_process *p, uint64_t code,
                       uint32_t instr, uint64_t globals, struct py_frame_name *ret) {
        const struct py_layout *l = p->layout;
        struct process_codes *pc = process_of(c, p->space ? p->space : (uint64_t) pid, pid);
        struct code *k;
        uint64_t *slot;
        int32_t lasti;
        int r;

        if (!pc)
                return -ENOMEM;
        slot = idmap_get(pc->by_addr, code);
        if (slot && (globals == 0 || pc->codes[*slot].globals == globals || pc->codes[*slot].globals == 0))
                k = &pc->codes[*slot];
        else {
                struct code fresh;

                r = read_code(pid, p, code, globals, &fresh);
                if (r == -ESRCH)
                        return r;
                if (slot) { /* another object where one was: it replaces it */
                        k = &pc->codes[*slot];
                        code_clear(k);
                } else {
                        if (pc->n >= MAX_CODES)
                                process_clear(pc);
                        if (GROW(pc->codes, pc->cap, pc->n + 1) < 0 ||
                            idmap_put(pc->by_addr, code, pc->n, &slot) < 0) {
                                code_clear(&fresh);
                                return -ENOMEM;
                        }
                        k = &pc->codes[pc->n++];
                }
                *k = fresh;
        }
        if (k->bad)
                return -EBADMSG;
        /* The instruction: (instr - co_code_adaptive) / 2 code units; before the first, not begun. */
        if (instr == UINT32_MAX)
                lasti = INT32_MAX;
        else if (instr < l->co_code_adaptive)
                lasti = -1;
        else
                lasti = (int32_t) ((instr - l->co_code_adaptive) / 2);
        *ret = (struct py_frame_name) {
                .qualname = k->qualname,
                .filename = k->filename,
                .firstlineno = k->firstlineno,
                .line = -1,
                .incomplete = instr != UINT32_MAX && (lasti < 0 || (uint32_t) lasti < k->firsttraceable),
        };
        if (lasti == INT32_MAX)
                return 0;
        if (lasti < 0) {
                ret->line = (int32_t) k->firstlineno;
                return 0;
        }
        {
                size_t lo = 0, hi = k->n_runs;

                while (lo < hi) {
                        size_t mid = (lo + hi) / 2;

                        if ((uint32_t) lasti >= k->runs[mid].end)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
                if (lo < k->n_runs && (uint32_t) lasti >= k->runs[lo].start)
                        ret->line = k->runs[lo].line;
        }
        return 0;
}
