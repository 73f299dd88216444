/* Where CPython keeps what a sample needs, per interpreter version: the offsets the kernel's
 * walker follows from a thread's pthread to its frames (doc/design/python-frames.md, §1), and
 * those user space reads to name a frame's code object. 3.11 is tested (Debian 12's python3 and
 * python3.11d); 3.12 and 3.13 are described from CPython's headers and checked once by hand
 * against pyenv builds, not in CI (marked `tested = false`). Any other version: no layout. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define PY_NO_FIELD UINT16_MAX

struct py_layout {
        const char *name; /* "3.11" */
        uint32_t version; /* 0x030b0000: major and minor of Py_Version */
        bool tested;      /* run by this project's tests */

        uint16_t runtime_tss_key; /* _PyRuntime → the {int initialized; int key} autoTSSkey */

        /* PyThreadState */
        uint16_t ts_cframe;          /* → _PyCFrame (3.11, 3.12), or PY_NO_FIELD */
        uint16_t ts_current_frame;   /* → _PyInterpreterFrame directly (3.13), or PY_NO_FIELD */
        uint16_t ts_thread_id;       /* pthread_self() of its thread */
        uint16_t ts_datastack_chunk; /* → its _PyStackChunk: its frames (3.11: 296; 3.12, 3.13: 232) */
        uint16_t cf_current_frame;   /* _PyCFrame → its innermost frame */
        uint16_t cf_previous;        /* _PyCFrame → the caller eval's _PyCFrame (3.11) */

        /* _PyInterpreterFrame */
        uint16_t fr_code; /* f_code / f_executable */
        uint16_t fr_previous;
        uint16_t fr_instr; /* prev_instr (3.11, 3.12) / instr_ptr (3.13) */
        uint16_t fr_globals;
        uint16_t fr_owner;    /* u8: 0 thread, 1 generator, 2 frame object, 3 C stack (3.12+) */
        uint16_t fr_is_entry; /* u8 is_entry (3.11), or PY_NO_FIELD */
        uint16_t fr_size;     /* bytes read per frame: past every field above */

        /* PyCodeObject */
        uint16_t co_size;        /* ob_size: code units */
        uint16_t co_firstlineno; /* int */
        uint16_t co_filename, co_qualname, co_linetable;
        uint16_t co_firsttraceable; /* int */
        uint16_t co_code_adaptive;  /* the bytecode; a frame's instruction is relative to the code
                                     * object, in bytes: (instr - co_code_adaptive) / 2 code units */

        /* str (compact) and bytes */
        uint16_t str_length, str_state, str_ascii_data, str_compact_data;
        uint16_t bytes_size, bytes_data;
};

/* The layout of the interpreter whose Py_Version is VERSION (PY_VERSION_HEX), or NULL. */
const struct py_layout *py_layout_find(uint32_t version);
