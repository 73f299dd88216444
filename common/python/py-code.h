/* Names a Python frame: a code object of a process (the address the kernel's walker recorded)
 * read with process_vm_readv, checked (its type is PyCode_Type, its strings are str, its line
 * table bytes, every length bounded), and cached per process, with the line of an instruction
 * from the code object's location table (PEP 626). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cleanup.h"
#include "py-process.h"

struct py_code_cache;

struct py_frame_name {
        const char *qualname; /* co_qualname, UTF-8; owned by the cache */
        const char *filename; /* co_filename, UTF-8; owned by the cache */
        uint32_t firstlineno; /* co_firstlineno */
        int32_t line;         /* of the instruction; firstlineno if not started; -1 if none */
        bool incomplete;      /* the frame has not run its first traceable instruction: CPython
                                 * leaves such frames out of tracebacks, and so should a profile */
};

struct py_code_cache *py_code_cache_new(void);
struct py_code_cache *py_code_cache_free(struct py_code_cache *c);
DEFINE_CLEANUP(struct py_code_cache *, py_code_cache_free);

/* Names the frame of code object CODE in process PID (described by P) whose instruction is INSTR
 * bytes past CODE (the walker's `instr`: the frame's instruction pointer minus the code object;
 * UINT32_MAX if unknown: the line is then -1). A code object is read once and kept until
 * py_code_cache_forget(); GLOBALS (the frame's f_globals, 0 if unknown) differing from the one
 * it was first seen with makes it read again (another object at a freed one's address).
 * Returns 0 and fills *ret (valid until the cache forgets PID or is freed); -EBADMSG if what is
 * at CODE is not a readable code object; -ESRCH if the process is gone; -ENOMEM. */
int py_code_cache_name(struct py_code_cache *c, pid_t pid, const struct py_process *p, uint64_t code,
                       uint32_t instr, uint64_t globals, struct py_frame_name *ret);

/* Forgets the code objects kept under KEY: a process's space (struct py_process), or its pid
 * where it has none (it exited, or exec'd). */
void py_code_cache_forget(struct py_code_cache *c, uint64_t key);

/* The line of code unit LASTI (-1: not started) in location table TABLE of N bytes, for a code
 * object whose first line is FIRSTLINENO: the line, or -1 for an instruction without one.
 * Exposed for tests. */
int32_t py_line_of(const uint8_t *table, size_t n, uint32_t firstlineno, int32_t lasti);
