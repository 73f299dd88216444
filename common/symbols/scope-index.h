/* The scopes of one compilation unit by address: which functions, and which functions inlined
 * into them, hold an instruction. dwarf_getscopes() answers that by walking the CU's DIEs from
 * the start for every address; this walks them once and then answers by binary search. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>

#include "cleanup.h"

/* Scopes of one CU past which the index stops learning (hostile or huge DWARF): addresses in the
 * rest resolve by symbol only. */
#define SCOPE_INDEX_MAX_SCOPES (1u << 20)

struct scope_index;

/* Walks CU (a compilation unit DIE of a Dwarf that outlives the index) once, following imported
 * units, and indexes every DW_TAG_subprogram and DW_TAG_inlined_subroutine with code (a subtree
 * libdw cannot read is left out). Returns 0 and sets *ret, or -ENOMEM. */
int scope_index_build(Dwarf_Die *cu, struct scope_index **ret);
struct scope_index *scope_index_free(struct scope_index *x);
DEFINE_CLEANUP(struct scope_index *, scope_index_free);

/* The scopes holding address PC (the CU's own addresses, as dwarf_haspc() takes them), innermost
 * first, up to and including the first subprogram: points RET[0..n) at DIEs the index owns
 * (valid while it lives) and returns n, 0 if none holds PC. Past MAX, outer inlined levels are
 * left out, never the subprogram. */
size_t scope_index_lookup(const struct scope_index *x, uint64_t pc, Dwarf_Die **ret, size_t max);
