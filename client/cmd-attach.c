/* cppctl attach PID: profiles a running process, its existing threads (each gets its own
 * events) and those it starts later (inheritance), until it exits, --duration passes, or
 * Ctrl-C. Its address space comes from /proc/PID/maps at attach time and MMAP2 records after.
 * A pidfd tells when it exits. */
#include "cppctl.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "parse-util.h"
#include "recording.h"

int cmd_attach(int argc, char **argv) {
        _cleanup_(recording_freep) struct recording *rec = NULL;
        _cleanup_close_ int pidfd = -1;
        struct recording_args a;
        char what[64], comm_path[64], comm[32] = "";
        int optind_, status = 0, r;
        uint64_t pid;
        FILE *f;

        r = recording_parse(&a, argc, argv, "attach",
                            "Usage: cppctl attach [OPTIONS] PID\n\n"
                            "Samples the stacks of process PID and its threads every PERIOD gticks of each\n"
                            "resource until it exits, --duration passes, or Ctrl-C; stores the samples and\n"
                            "prints a summary with the top of the function profile.", true, &optind_);
        if (r <= 0)
                return exit_status(r);
        if (optind_ + 1 != argc || safe_atou64_range(argv[optind_], 1, INT32_MAX, &pid) < 0) {
                log_error("attach needs one process id: cppctl attach [OPTIONS] PID");
                return EXIT_USAGE;
        }
        pidfd = syscall(SYS_pidfd_open, (pid_t) pid, 0);
        if (pidfd < 0 && errno == ESRCH) {
                log_error("no process %" PRIu64, pid);
                return EXIT_FAILURE_;
        }
        snprintf(comm_path, sizeof comm_path, "/proc/%" PRIu64 "/comm", pid);
        f = fopen(comm_path, "re");
        if (f) {
                if (fgets(comm, sizeof comm, f))
                        comm[strcspn(comm, "\n")] = '\0';
                fclose(f);
        }
        snprintf(what, sizeof what, "pid %" PRIu64 " (%s)", pid, comm);

        r = recording_new(&a, "attach", what, &rec);
        if (r != EXIT_OK)
                return r;
        recording_block_signals();

        r = recording_attach(rec, pid, false);
        if (r != EXIT_OK)
                return r;
        if (!a.quiet && isatty(STDERR_FILENO))
                log_info("attached to %s; Ctrl-C to stop", what);
        r = recording_run(rec, 0, pidfd, &status);
        if (r != EXIT_OK)
                return r;
        recording_summary(rec, what);
        return EXIT_OK;
}
