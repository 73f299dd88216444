/* Fuzz target: a CPython code object's location table (read from another process), its first
 * line in the input's first 4 bytes. Every instruction's line is looked up: no read past the
 * table, a line only where an entry covers the instruction. */
#include "fuzz.h"
#include "py-code.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint32_t firstlineno;

        if (size < sizeof firstlineno)
                return 0;
        memcpy(&firstlineno, data, sizeof firstlineno);
        data += sizeof firstlineno;
        size -= sizeof firstlineno;
        if (py_line_of(data, size, firstlineno, -1) != (int32_t) firstlineno)
                abort(); /* not begun: the first line */
        /* An entry covers 8 code units at most and takes a byte at least. */
        for (int32_t lasti = 0; lasti <= (int32_t) (8 * size + 1); lasti++)
                (void) py_line_of(data, size, firstlineno, lasti);
        if (py_line_of(data, 0, firstlineno, 0) != -1)
                abort(); /* an empty table has no lines */
        return 0;
}
