/* Readable names for C++ (Itanium ABI) and Rust (legacy and v0) symbols. */
#pragma once

#include <stddef.h>

/* Names longer than this are left as they are: the demangler's scratch space lies on the stack
 * and grows with the name, and an edited store may hold names of any length. */
#define DEMANGLE_NAME_MAX 4096

/* Writes the readable form of NAME into BUF (SIZE bytes, NUL-terminated): a C++ symbol
 * ("_ZN2at6native6matmulERKNS_6TensorES3_" -> "at::native::matmul(at::Tensor const&,
 * at::Tensor const&)"), a legacy Rust symbol without its "::h<16 hex digits>" hash, as perf
 * prints it, or a v0 Rust symbol ("_RNvCs1234_7mycrate3foo" -> "mycrate::foo"); a PLT stub's
 * name, "SYMBOL@plt", as SYMBOL's readable form and "@plt". Returns its
 * length (> 0); 0 if NAME is not a mangled name, is longer than DEMANGLE_NAME_MAX, or reads
 * longer than SIZE - 1 bytes: BUF then holds nothing to use. Allocates nothing; thread-safe. */
size_t demangle(const char *name, char *buf, size_t size);
