/* Scope indexes.
 *
 * Building walks the CU's DIE tree once in preorder (an explicit stack: hostile DWARF nests
 * deep), entering the partial units that DW_TAG_imported_unit brings in where they are imported
 * (dwz moves shared DIEs there), and keeps each subprogram and inlined subroutine that has code
 * as a scope: a copy of its DIE and the index of the nearest enclosing scope. Each of its
 * address ranges goes into one list with the scope's depth. One sweep over the ranges' starts
 * and ends in address order, with a max-heap by depth of the ranges open at each point, turns
 * them into contiguous segments that each name the innermost scope holding them (scopes nest,
 * so the deepest open range holds the point). A lookup is a binary search over the segments,
 * then the parent links.
 *
 * Building reads every DIE, as one dwarf_getscopes() call does (it walks from the CU's start
 * to the address, reading every sibling on the way); after that each address of the CU costs a
 * search. A long-running profiler meets the same few CUs of hot code again and again as new
 * addresses come in: libc's msort.c, say, is walked once instead of once per address. */
#include "scope-index.h"

#include <dwarf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "grow.h"

#define NONE UINT32_MAX
#define MAX_DEPTH 256 /* DIE nesting followed; deeper subtrees are left out */
#define MAX_IMPORTS 8 /* imported units entered within imported units */

struct scope {
        Dwarf_Die die;
        uint32_t parent; /* the enclosing scope, or NONE */
        bool subprogram; /* else an inlined subroutine */
};

struct range {
        uint64_t low, high; /* [low, high) */
        uint32_t scope, depth;
};

struct segment {
        uint64_t start; /* the segment runs to the next one's start */
        uint32_t scope; /* the innermost scope holding it, or NONE */
};

struct scope_index {
        struct scope *scopes;
        size_t n_scopes;
        struct segment *segments;
        size_t n_segments;
};

/* The walk's work list: per level, the next DIE to visit, the scope its DIEs lie in and how
 * deep they nest (the stack reuses a level's slot for its last DIE's children: its index is not
 * their depth). */
struct level {
        Dwarf_Die die;
        uint32_t scope;
        uint32_t depth;
        uint32_t imports; /* imported units entered above this level */
};

struct builder {
        struct scope *scopes;
        size_t n_scopes, cap_scopes;
        struct range *ranges;
        size_t n_ranges, cap_ranges;
};

static void builder_done(struct builder *b) {
        free(b->scopes);
        free(b->ranges);
}

/* Adds DIE as a scope inside PARENT at DEPTH if it has code. Returns its index, NONE if it has
 * none (or the index is full), or -ENOMEM. */
static int64_t add_scope(struct builder *b, Dwarf_Die *die, bool subprogram, uint32_t parent,
                         uint32_t depth) {
        Dwarf_Addr base, low, high;
        size_t first = b->n_ranges;
        ptrdiff_t off = 0;

        if (b->n_scopes >= SCOPE_INDEX_MAX_SCOPES)
                return NONE;
        while ((off = dwarf_ranges(die, off, &base, &low, &high)) > 0) {
                if (low >= high)
                        continue;
                if (GROW(b->ranges, b->cap_ranges, b->n_ranges + 1) < 0)
                        return -ENOMEM;
                b->ranges[b->n_ranges++] = (struct range) {
                        .low = low,
                        .high = high,
                        .scope = b->n_scopes,
                        .depth = depth,
                };
        }
        if (b->n_ranges == first)
                return NONE;
        if (GROW(b->scopes, b->cap_scopes, b->n_scopes + 1) < 0)
                return -ENOMEM;
        b->scopes[b->n_scopes] = (struct scope) { .die = *die, .parent = parent, .subprogram = subprogram };
        return b->n_scopes++;
}

static int walk(struct builder *b, Dwarf_Die *cu) {
        struct level stack[MAX_DEPTH];
        size_t top = 0;
        Dwarf_Die child;

        if (dwarf_child(cu, &child) != 0)
                return 0;
        stack[top++] = (struct level) { .die = child, .scope = NONE, .depth = 1 };
        while (top > 0) {
                struct level *l = &stack[top - 1];
                Dwarf_Die die = l->die, next;
                uint32_t scope = l->scope, nest = l->depth, imports = l->imports;
                int tag = dwarf_tag(&die);

                /* Move this level on first: once it is done, its slot takes the pushes below. */
                if (dwarf_siblingof(&die, &next) == 0)
                        l->die = next;
                else
                        top--;

                if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
                        int64_t s = add_scope(b, &die, tag == DW_TAG_subprogram, scope, nest);

                        if (s < 0)
                                return s;
                        if (s != NONE)
                                scope = s;
                } else if (tag == DW_TAG_imported_unit && imports < MAX_IMPORTS) {
                        Dwarf_Attribute a;
                        Dwarf_Die unit;

                        if (dwarf_attr(&die, DW_AT_import, &a) && dwarf_formref_die(&a, &unit) &&
                            dwarf_child(&unit, &child) == 0 && top < MAX_DEPTH)
                                stack[top++] = (struct level) {
                                        .die = child,
                                        .scope = scope,
                                        .depth = nest + 1,
                                        .imports = imports + 1,
                                };
                        continue;
                }
                if (dwarf_haschildren(&die) > 0 && top < MAX_DEPTH && dwarf_child(&die, &child) == 0)
                        stack[top++] = (struct level) {
                                .die = child,
                                .scope = scope,
                                .depth = nest + 1,
                                .imports = imports,
                        };
        }
        return 0;
}

static int range_cmp(const void *a, const void *b) {
        const struct range *x = a, *y = b;

        return x->low < y->low ? -1 : x->low > y->low;
}

static int u64_cmp(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* The max-heap of open ranges (indexes into R), by depth. */
static void heap_push(uint32_t *heap, size_t *n, const struct range *r, uint32_t v) {
        size_t i = (*n)++;

        while (i > 0 && r[heap[(i - 1) / 2]].depth < r[v].depth) {
                heap[i] = heap[(i - 1) / 2];
                i = (i - 1) / 2;
        }
        heap[i] = v;
}

static void heap_pop(uint32_t *heap, size_t *n, const struct range *r) {
        uint32_t v = heap[--*n];
        size_t i = 0;

        for (;;) {
                size_t c = 2 * i + 1;

                if (c >= *n)
                        break;
                if (c + 1 < *n && r[heap[c + 1]].depth > r[heap[c]].depth)
                        c++;
                if (r[heap[c]].depth <= r[v].depth)
                        break;
                heap[i] = heap[c];
                i = c;
        }
        if (*n > 0)
                heap[i] = v;
}

/* The sweep: B's ranges into X's segments. */
static int sweep(struct builder *b, struct scope_index *x) {
        _cleanup_free_ uint64_t *points = malloc((2 * b->n_ranges + 1) * sizeof *points);
        _cleanup_free_ uint32_t *heap = malloc((b->n_ranges + 1) * sizeof *heap);
        size_t n_points = 0, n_heap = 0, next = 0;

        x->segments = malloc((2 * b->n_ranges + 1) * sizeof *x->segments);
        if (!points || !heap || !x->segments)
                return -ENOMEM;
        if (b->n_ranges == 0)
                return 0; /* a CU with no code: no segments (qsort may not be given NULL) */
        qsort(b->ranges, b->n_ranges, sizeof *b->ranges, range_cmp);
        for (size_t i = 0; i < b->n_ranges; i++) {
                points[n_points++] = b->ranges[i].low;
                points[n_points++] = b->ranges[i].high;
        }
        qsort(points, n_points, sizeof *points, u64_cmp);
        for (size_t i = 0; i < n_points; i++) {
                uint64_t p = points[i];
                uint32_t scope;

                if (i > 0 && p == points[i - 1])
                        continue;
                while (next < b->n_ranges && b->ranges[next].low <= p)
                        heap_push(heap, &n_heap, b->ranges, next++);
                /* Ranges that ended are dropped once they come to the top; below a live top they
                 * are shallower than it and cannot be the innermost. */
                while (n_heap > 0 && b->ranges[heap[0]].high <= p)
                        heap_pop(heap, &n_heap, b->ranges);
                scope = n_heap > 0 ? b->ranges[heap[0]].scope : NONE;
                if (x->n_segments == 0 || x->segments[x->n_segments - 1].scope != scope)
                        x->segments[x->n_segments++] = (struct segment) { .start = p, .scope = scope };
        }
        return 0;
}

int scope_index_build(Dwarf_Die *cu, struct scope_index **ret) {
        _cleanup_(builder_done) struct builder b = {};
        _cleanup_(scope_index_freep) struct scope_index *x = calloc(1, sizeof *x);
        int r;

        if (!x)
                return -ENOMEM;
        r = walk(&b, cu);
        if (r < 0)
                return r;
        r = sweep(&b, x);
        if (r < 0)
                return r;
        x->scopes = take_ptr(&b.scopes);
        x->n_scopes = b.n_scopes;
        *ret = take_ptr(&x);
        return 0;
}

struct scope_index *scope_index_free(struct scope_index *x) {
        if (!x)
                return NULL;
        free(x->scopes);
        free(x->segments);
        free(x);
        return NULL;
}

size_t scope_index_lookup(const struct scope_index *x, uint64_t pc, Dwarf_Die **ret, size_t max) {
        size_t lo = 0, hi = x->n_segments, n = 0;
        uint32_t s;

        /* The first segment starting after PC; the one before it holds PC. */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (x->segments[mid].start <= pc)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == 0 || max == 0)
                return 0;
        for (s = x->segments[lo - 1].scope; s != NONE; s = x->scopes[s].parent) {
                /* Past MAX, the outer inlined levels are left out, never the function. */
                if (n < max - 1 || x->scopes[s].subprogram)
                        ret[n++] = &x->scopes[s].die;
                if (x->scopes[s].subprogram || n == max)
                        break;
        }
        return n;
}
