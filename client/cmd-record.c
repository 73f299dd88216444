/* cppctl record -- CMD: runs CMD and profiles it, its threads and its children until it exits.
 * The child waits on a pipe until the events are open on it, then execs; the events count from
 * that exec (enable_on_exec), so cppctl's own fork is not in the profile. An exec failure comes
 * back through a close-on-exec pipe, so "command not found" is an error of cppctl's. */
#include "cppctl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "standalone.h"
#include "strv.h"

/* ENV: the command's environment; NULL: cppctl's own. */
static pid_t spawn(char **argv, char **env, int *ret_go, int *ret_err) {
        int go[2], err[2];
        pid_t pid;

        if (pipe2(go, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(err, O_CLOEXEC) < 0) {
                close(go[0]);
                close(go[1]);
                return -errno;
        }
        pid = fork();
        if (pid < 0) {
                int e = errno;

                close(go[0]);
                close(go[1]);
                close(err[0]);
                close(err[1]);
                return -e;
        }
        if (pid == 0) {
                sigset_t none;
                char c;
                int e;

                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                close(go[1]);
                close(err[0]);
                if (read(go[0], &c, 1) != 1)
                        _exit(127); /* cppctl gave up before starting us */
                if (env)
                        execvpe(argv[0], argv, env);
                else
                        execvp(argv[0], argv);
                e = errno;
                (void) !write(err[1], &e, sizeof e);
                _exit(127);
        }
        close(go[0]);
        close(err[1]);
        *ret_go = go[1];
        *ret_err = err[0];
        return pid;
}

int cmd_record(int argc, char **argv, const struct verb *verb) {
        _cleanup_(recording_freep) struct recording *rec = NULL;
        _cleanup_free_ char *command = NULL;
        _cleanup_(strv_freep) char **env = NULL;
        _cleanup_close_ int go = -1, err = -1;
        struct recording_args a;
        int optind_, status = 0, e, r;
        ssize_t n;
        pid_t pid;

        r = recording_parse(&a, argc, argv, "record",
                            "Usage: cppctl record [OPTIONS] -- COMMAND [ARGS...]\n\n"
                            "Runs COMMAND and samples its stacks every PERIOD gticks of each resource,\n"
                            "following its threads and children, until it exits; stores the samples and\n"
                            "prints a summary with the top of the function profile. Exits with COMMAND's\n"
                            "status (128 + N if signal N killed it) once the run is stored; 1 if cppctl\n"
                            "failed, 2 for bad options.",
                            false, &optind_);
        if (r <= 0)
                return exit_status(r);
        if (optind_ >= argc) {
                log_error("record needs a command: cppctl record [OPTIONS] -- COMMAND [ARGS...]");
                return EXIT_USAGE;
        }
        command = strv_join(argv + optind_, " ");
        if (!command) {
                log_error_errno(ENOMEM, "Out of memory");
                return EXIT_FAILURE_;
        }
        r = recording_new(&a, "record", command, &rec);
        if (r != EXIT_OK)
                return r;

        if (recording_environment(rec, &env) < 0)
                return EXIT_FAILURE_;
        recording_block_signals();

        pid = spawn(argv + optind_, env, &go, &err);
        if (pid < 0) {
                log_error_errno(pid, "Cannot fork: %m");
                return EXIT_FAILURE_;
        }
        r = recording_attach(rec, pid, true);
        if (r != EXIT_OK) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                return r;
        }
        if (write(go, "g", 1) != 1) {
                log_error_errno(errno, "Cannot start the command: %m");
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                return EXIT_FAILURE_;
        }
        go = safe_close_fd(go);
        n = read(err, &e, sizeof e);
        if (n == sizeof e) {
                waitpid(pid, NULL, 0);
                log_error_errno(e, "Cannot run '%s': %m", argv[optind_]);
                return EXIT_FAILURE_;
        }

        r = recording_run(rec, pid, -1, &status);
        if (r != EXIT_OK)
                return r;
        recording_summary(rec, command);
        /* The run is stored either way; the exit status is the command's, as perf record and
         * time(1) give it, so that scripts and make see a failing command fail. */
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
                log_notice("'%s' exited with status %d", command, WEXITSTATUS(status));
                return WEXITSTATUS(status);
        }
        if (WIFSIGNALED(status)) {
                log_notice("'%s' was killed by signal %d (%s)", command, WTERMSIG(status),
                           strsignal(WTERMSIG(status)));
                return 128 + WTERMSIG(status);
        }
        return EXIT_OK;
}
