/* The resource table. One row per resource; the collector, the importer and every report take
 * names, units and default periods from here and nowhere else. */
#include "resource.h"

#include <ctype.h>
#include <string.h>

#include "cleanup.h"

const struct resource resource_table[] = {
        { "cpu-time", "1 ms of CPU time", "time on a CPU, user and kernel", 10 },
        { "real-time", "1 ms of real time", "time on or off a CPU: CPU time plus time blocked", 10 },
        { "page-faults", "1 page fault", "minor and major page faults", 64 },
        { "minor-faults", "1 minor fault", "page faults served without I/O", 64 },
        { "major-faults", "1 major fault", "page faults that waited for I/O", 1 },
        { "context-switches", "1 context switch", "times the task left a CPU", 16 },
        { "syscalls", "1 system call", "system calls entered", 100 },
        { "bytes-read", "1 byte read", "bytes returned by the read family of system calls", 65536 },
        { "bytes-written", "1 byte written", "bytes accepted by the write family of system calls", 65536 },
        { "fp-assists", "1 FP assist", "floating-point assists (microcode), a hardware event", 1000 },
};

const unsigned n_resource_table = ELEMENTSOF(resource_table);

const struct resource *resource_find(const char *name) {
        for (unsigned i = 0; i < n_resource_table; i++)
                if (streq(resource_table[i].name, name))
                        return &resource_table[i];
        return NULL;
}

bool resource_name_valid(const char *name) {
        size_t n = strlen(name);

        if (n == 0 || n > 128)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) name[i]) && !strchr(":_.-", name[i]))
                        return false;
        return true;
}
