/* Fuzz target: symbol names, which come from the ELF files of whatever ran and from an edited
 * store, demangled: the answer is NUL-terminated within the buffer, or there is none. */
#include <string.h>

#include "demangle.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char name[DEMANGLE_NAME_MAX + 64], buf[256];
        size_t n;

        if (size >= sizeof name)
                size = sizeof name - 1;
        memcpy(name, data, size);
        name[size] = '\0';
        n = demangle(name, buf, sizeof buf);
        if (n >= sizeof buf || (n > 0 && strlen(buf) != n))
                abort();
        return 0;
}
