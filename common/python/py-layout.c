/* CPython's layouts, x86-64, GIL builds. 3.11: read from Debian 12's python3.11 (3.11.2) with its
 * debug info and checked by walking live processes (doc/design/python-frames.md, §1 and Appendix
 * A); python3.11d has the same. 3.12 and 3.13: from CPython's headers, checked once against
 * pyenv's 3.12.1 and 3.13.0 by the same walk (3.13's against its own _Py_DebugOffsets too), never
 * by this project's tests: `tested` says so. The key's offset in _PyRuntime (3.12, 3.13) is that
 * of those releases; py-process.c checks what it finds there before trusting it. */
#include "py-layout.h"

#include <stddef.h>

static const struct py_layout layouts[] = {
        {
                .name = "3.11",
                .version = 0x030b0000,
                .tested = true,
                .runtime_tss_key = 592,
                .ts_cframe = 56,
                .ts_current_frame = PY_NO_FIELD,
                .ts_thread_id = 152,
                .ts_datastack_chunk = 296,
                .cf_current_frame = 8,
                .cf_previous = 16,
                .fr_code = 32,
                .fr_previous = 48,
                .fr_instr = 56,
                .fr_globals = 8,
                .fr_owner = 69,
                .fr_is_entry = 68,
                .fr_size = 72,
                .co_size = 16,
                .co_firstlineno = 72,
                .co_filename = 112,
                .co_qualname = 128,
                .co_linetable = 136,
                .co_firsttraceable = 168,
                .co_code_adaptive = 184,
                .str_length = 16,
                .str_state = 32,
                .str_ascii_data = 48,
                .str_compact_data = 72,
                .bytes_size = 16,
                .bytes_data = 32,
        },
        {
                .name = "3.12",
                .version = 0x030c0000,
                .tested = false,
                .runtime_tss_key = 1548,
                .ts_cframe = 56,
                .ts_current_frame = PY_NO_FIELD,
                .ts_thread_id = 136,
                .ts_datastack_chunk = 232,
                .cf_current_frame = 0,
                .cf_previous = 8,
                .fr_code = 0,
                .fr_previous = 8,
                .fr_instr = 56,
                .fr_globals = 24,
                .fr_owner = 70,
                .fr_is_entry = PY_NO_FIELD, /* runs begin at shim frames (owner 3) */
                .fr_size = 72,
                .co_size = 16,
                .co_firstlineno = 68,
                .co_filename = 112,
                .co_qualname = 128,
                .co_linetable = 136,
                .co_firsttraceable = 176,
                .co_code_adaptive = 192,
                .str_length = 16,
                .str_state = 32,
                .str_ascii_data = 40,
                .str_compact_data = 56,
                .bytes_size = 16,
                .bytes_data = 32,
        },
        {
                .name = "3.13",
                .version = 0x030d0000,
                .tested = false,
                .runtime_tss_key = 2164,
                .ts_cframe = PY_NO_FIELD, /* gone: the thread state points at its frame */
                .ts_current_frame = 72,
                .ts_thread_id = 152,
                .ts_datastack_chunk = 232,
                .cf_current_frame = PY_NO_FIELD,
                .cf_previous = PY_NO_FIELD,
                .fr_code = 0, /* f_executable: checked to be a code object before it is read */
                .fr_previous = 8,
                .fr_instr = 56, /* instr_ptr: the current instruction */
                .fr_globals = 24,
                .fr_owner = 70,
                .fr_is_entry = PY_NO_FIELD,
                .fr_size = 80,
                .co_size = 16,
                .co_firstlineno = 68,
                .co_filename = 112,
                .co_qualname = 128,
                .co_linetable = 136,
                .co_firsttraceable = 184,
                .co_code_adaptive = 200,
                .str_length = 16,
                .str_state = 32,
                .str_ascii_data = 40,
                .str_compact_data = 56,
                .bytes_size = 16,
                .bytes_data = 32,
        },
};

const struct py_layout *py_layout_find(uint32_t version) {
        for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
                if ((version & 0xffff0000u) == layouts[i].version)
                        return &layouts[i];
        return NULL;
}
