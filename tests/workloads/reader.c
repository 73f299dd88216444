/* reader: reads /dev/zero from two call paths in a known ratio, for the tests of syscall and
 * I/O resources.
 *
 *   main
 *     load_config -> read_chunks -> read(2)        3 * DATA_KIB KiB
 *     load_data   -> read_chunks -> read(2)        DATA_KIB KiB
 *
 * Both read in chunks of the same size, so bytes read and read(2) calls are both 3:1 between
 * (main load_config read_chunks) and (main load_data read_chunks). /dev/zero always returns a
 * full chunk, so the count of calls is exact, and the page cache plays no part.
 *
 * A walk of frame pointers alone loses read_chunks, in reader-fp too: glibc's read() makes no
 * frame of its own, so the walk from the syscall goes from read() straight to read_chunks's
 * caller. The default, 3 MiB and 1 MiB in chunks of 4 KiB, makes 768 and 256 calls within a few
 * milliseconds: enough for a ratio, and 8 MiB of samples for a profiler that copies 8 KiB of
 * stack per call, which its ring buffers must hold, since they fill faster than they drain.
 * Usage: reader [DATA_KIB [CHUNK_BYTES]], by default 1024 KiB in chunks of 4096 bytes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workload.h"

#define DATA_KIB_DEFAULT 1024
#define CHUNK_BYTES_DEFAULT 4096
#define CHUNK_BYTES_MAX (1024 * 1024)

static char buffer[CHUNK_BYTES_MAX];

/* Reads size bytes from fd in chunks of chunk bytes, each with one read(2) issued here. Returns 0
 * or a negative errno; -EIO if the file ends first. */
WORKLOAD_FUNCTION static int read_chunks(int fd, size_t size, size_t chunk) {
        while (size > 0) {
                ssize_t n = read(fd, buffer, size < chunk ? size : chunk);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -EIO;
                size -= (size_t) n;
        }
        return 0;
}

WORKLOAD_FUNCTION static int load_config(int fd, size_t size, size_t chunk) {
        int r = read_chunks(fd, 3 * size, chunk);

        call_barrier();
        return r;
}

WORKLOAD_FUNCTION static int load_data(int fd, size_t size, size_t chunk) {
        int r = read_chunks(fd, size, chunk);

        call_barrier();
        return r;
}

int main(int argc, char **argv) {
        unsigned long kib, chunk;
        int fd, r;

        workload_arg(argc, argv, 1, DATA_KIB_DEFAULT, &kib);
        workload_arg(argc, argv, 2, CHUNK_BYTES_DEFAULT, &chunk);
        if (chunk > CHUNK_BYTES_MAX) {
                fprintf(stderr, "%s: chunks are at most %d bytes\n", argv[0], CHUNK_BYTES_MAX);
                return EXIT_FAILURE;
        }

        fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "%s: cannot open /dev/zero: %m\n", argv[0]);
                return EXIT_FAILURE;
        }
        r = load_config(fd, kib << 10, chunk);
        if (r >= 0)
                r = load_data(fd, kib << 10, chunk);
        close(fd);
        if (r < 0) {
                fprintf(stderr, "%s: cannot read /dev/zero: %s\n", argv[0], strerror(-r));
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}
