/* The fuzz targets' common half: each fuzz-<input>.c defines LLVMFuzzerTestOneInput(); built
 * with clang -fsanitize=fuzzer it is a libFuzzer target, and built normally (every test run) this
 * main() replays every file of the corpus directories given as arguments through it, so that
 * what fuzzing once found stays fixed. */
#pragma once

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Makes a directory of its own for a target that must give its input as a file: in $TMPDIR,
 * else /dev/shm (memory: SQLite's fsync()s cost nothing there), else /tmp. Aborts if it cannot:
 * the harness could not do its job, which is not a finding. */
static inline void fuzz_make_dir(char *dir, size_t size, const char *name) {
        const char *tmp = getenv("TMPDIR");

        if (!tmp || !*tmp)
                tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        if ((size_t) snprintf(dir, size, "%s/%s-XXXXXX", tmp, name) >= size || !mkdtemp(dir))
                abort();
}

#ifndef FUZZING_ENGINE
static int replay_file(const char *path) {
        FILE *f = fopen(path, "re");
        uint8_t *buf;
        long n;

        if (!f)
                return -1;
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        rewind(f);
        buf = malloc(n > 0 ? n : 1);
        if (!buf || fread(buf, 1, n, f) != (size_t) n) {
                fclose(f);
                free(buf);
                return -1;
        }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, n);
        free(buf);
        return 0;
}

int main(int argc, char **argv) {
        unsigned n = 0;

        for (int i = 1; i < argc; i++) {
                DIR *d = opendir(argv[i]);
                struct dirent *de;

                if (!d) {
                        if (replay_file(argv[i]) < 0) {
                                fprintf(stderr, "%s: cannot read\n", argv[i]);
                                return 1;
                        }
                        n++;
                        continue;
                }
                while ((de = readdir(d))) {
                        char path[4096];

                        if (de->d_name[0] == '.')
                                continue;
                        snprintf(path, sizeof path, "%s/%s", argv[i], de->d_name);
                        if (replay_file(path) < 0) {
                                fprintf(stderr, "%s: cannot read\n", path);
                                closedir(d);
                                return 1;
                        }
                        n++;
                }
                closedir(d);
        }
        printf("replayed %u inputs\n", n);
        return 0;
}
#endif
