/* Python frames' user-space half against a live CPython: the location table's lines (hand-made
 * tables of every entry kind), a running /usr/bin/python3.11 found and described (layout, types,
 * glibc's thread-specific data: the path the kernel's walker follows, followed here by hand from a
 * thread's pthread to its thread state), its code objects (functions, methods, a lambda, a
 * generator, names of each str kind, a live frame in a thread) named with the lines Python itself
 * reports, an interpreter embedded in gdb (libpython3.11.so at a load bias), and what is not
 * Python or not a code object refused. Skips the live parts where python3.11 or gdb is missing. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "py-code.h"
#include "py-layout.h"
#include "py-process.h"
#include "tap.h"

#define PYTHON "/usr/bin/python3.11"
#define GDB "/usr/bin/gdb"

/* Location table entries (Objects/locations.md): the first byte 1CCCCLLL, code C, LLL + 1 code
 * units. */
#define ENTRY(code, len) ((uint8_t) (0x80 | (code) << 3 | ((len) -1)))

static void test_lines(void) {
        /* firstlineno 10: 2 units on line 10 (short form, a column byte), 3 on line 12 (one-line
         * form, delta 2, two column bytes), 1 without a location, 4 on line 9 (no-column form,
         * svarint -3 = 7), 2 on line 40 (long form: svarint +31 = 62, end line, two columns). */
        static const uint8_t t[] = {
                ENTRY(0, 2), 5, ENTRY(12, 3), 1, 2, ENTRY(15, 1), ENTRY(13, 4), 7, ENTRY(14, 2), 62, 0, 1, 2
        };
        size_t n = sizeof t;

        is_int(py_line_of(t, n, 10, -1), 10, "not begun: the first line");
        is_int(py_line_of(t, n, 10, 0), 10, "unit 0: short form, same line");
        is_int(py_line_of(t, n, 10, 1), 10, "unit 1: its last unit");
        is_int(py_line_of(t, n, 10, 2), 12, "unit 2: the boundary belongs to the next entry");
        is_int(py_line_of(t, n, 10, 4), 12, "unit 4: one-line form");
        is_int(py_line_of(t, n, 10, 5), -1, "unit 5: no location");
        is_int(py_line_of(t, n, 10, 6), 9, "unit 6: no-column form, a negative delta");
        is_int(py_line_of(t, n, 10, 10), 40, "unit 10: long form");
        is_int(py_line_of(t, n, 10, 12), -1, "past the table: none");
        is_int(py_line_of(t, 3, 10, 2), -1, "a table cut in an entry: none, no read past it");
}

/* A child python3.11 that prints facts about its frames, then waits: read from FD. */
static const char script[] =
        "import sys, threading, time\n"
        "class K:\n"
        "    def method(self):\n"
        "        f = sys._getframe()\n"
        "        return f\n"
        "def outer():\n"
        "    def inner():\n"
        "        return sys._getframe()\n"
        "    return inner()\n"
        "lam = lambda: sys._getframe()\n"
        "def gen():\n"
        "    yield sys._getframe()\n"
        /* Lines of two code units: an instruction offset that is off by any whole field (8
         * bytes, 4 units) names another line, or none. */
        "def steps():\n"
        "    f = sys._getframe()\n"
        "    a = 1\n"
        "    return f\n"
        "frames = [K().method(), outer(), lam(), next(gen()), steps()]\n"
        /* Names of every str kind: 1 byte (Latin-1), 2 (Greek), 4 (U+20000) a character. */
        "for name in ['gr\\u00f6\\u00dfe', '\\u03b4\\u03ad\\u03bb\\u03c4\\u03b1', '\\U00020000']:\n"
        "    ns = {'sys': sys}\n"
        "    exec('def %s():\\n    return sys._getframe()\\n' % name, ns)\n"
        "    frames.append(ns[name]())\n"
        "ready = threading.Event()\n"
        "def worker():\n"
        "    ready.set()\n"
        "    time.sleep(60)\n"
        "t = threading.Thread(target=worker, daemon=True)\n"
        "t.start(); ready.wait(); time.sleep(0.1)\n"
        /* The thread's frame is live (in time.sleep() by now, where it stays): its f_lasti is
         * where it waits, as the walker would find it. */
        "frames.append(sys._current_frames()[t.ident])\n"
        "for f in frames:\n"
        "    print('frame', id(f.f_code), f.f_lasti, f.f_lineno, f.f_code.co_firstlineno, f.f_code.co_qualname,\n"
        "          flush=True)\n"
        "print('thread', t.ident, flush=True)\n"
        "print('done', flush=True)\n"
        "time.sleep(60)\n";

struct fact {
        uint64_t code;
        uint32_t lasti; /* bytes, as 3.11's f_lasti */
        int32_t line;
        uint32_t firstlineno;
        char qualname[64];
};

/* The walker's path by hand from thread state TSTATE of PID, whose innermost frame is that of
 * fact WORKER: its current frame, each frame's code object and instruction (the instruction read
 * from the process, so that a wrong co_code_adaptive differs from Python's f_lasti), and the
 * frames before it, which threading.py's bootstrap called. */
static void test_walk(pid_t pid, const struct py_process *p, struct py_code_cache *c, uint64_t tstate,
                      const struct fact *worker) {
        const struct py_layout *l = p->layout;
        static const char *const want[] = { "worker", "Thread.run", "Thread._bootstrap_inner",
                                            "Thread._bootstrap" };
        uint64_t cframe = 0, frame = 0;
        size_t n = 0;
        bool named = true;

        ok(py_read_memory(pid, tstate + l->ts_cframe, &cframe, 8) == 0 &&
                   py_read_memory(pid, cframe + l->cf_current_frame, &frame, 8) == 0 && frame,
           "the thread state's cframe names its current frame");
        for (size_t depth = 0; frame && depth < 16; depth++) {
                uint64_t code, instr, previous;
                struct py_frame_name name;

                if (py_read_memory(pid, frame + l->fr_code, &code, 8) < 0 ||
                    py_read_memory(pid, frame + l->fr_instr, &instr, 8) < 0 ||
                    py_read_memory(pid, frame + l->fr_previous, &previous, 8) < 0 ||
                    py_code_cache_name(c, pid, p, code, (uint32_t) (instr - code), 0, &name) < 0) {
                        named = false;
                        break;
                }
                if (depth == 0) {
                        ok(code == worker->code && instr - code == l->co_code_adaptive + worker->lasti,
                           "its code object is worker's, its instruction %" PRIu64 " bytes in (Python: %u)",
                           instr - code - l->co_code_adaptive, worker->lasti);
                        ok(strcmp(name.qualname, "worker") == 0 && name.line == worker->line,
                           "named worker, line %d (Python says %d)", name.line, worker->line);
                }
                if (!name.incomplete && n < sizeof want / sizeof want[0] &&
                    strcmp(name.qualname, want[n]) == 0)
                        n++;
                frame = previous;
        }
        ok(named && n == sizeof want / sizeof want[0] && frame == 0,
           "the thread's frames, followed to the first: worker under threading's bootstrap (%zu of 4)", n);
}

/* Starts ARGV[0] with ARGV, its standard output read from *RET_F (NULL if none could be made).
 * Returns its pid, or -1. */
static pid_t spawn(char *const argv[], FILE **ret_f) {
        int fds[2];
        pid_t pid;

        *ret_f = NULL;
        if (pipe(fds) < 0)
                return -1;
        pid = fork();
        if (pid == 0) {
                dup2(fds[1], 1);
                close(fds[0]);
                setenv("PYTHONIOENCODING", "utf-8", 1); /* the names as UTF-8, whatever the locale */
                execv(argv[0], argv);
                _exit(127);
        }
        close(fds[1]);
        *ret_f = fdopen(fds[0], "r");
        return pid;
}

/* One "frame CODE LASTI LINE FIRSTLINENO QUALNAME" line of the children's. */
static bool parse_frame(const char *line, struct fact *ret) {
        return sscanf(line, "frame %" SCNu64 " %" SCNu32 " %" SCNd32 " %" SCNu32 " %63s", &ret->code,
                      &ret->lasti, &ret->line, &ret->firstlineno, ret->qualname) == 5;
}

static void test_live(void) {
        pid_t pid;
        FILE *f;
        char line[512];
        struct fact facts[16];
        size_t n = 0;
        uint64_t thread = 0;
        struct py_process p;
        _cleanup_free_ char *why = NULL;
        _cleanup_(py_code_cache_freep) struct py_code_cache *c = py_code_cache_new();
        int r;

        if (access(PYTHON, X_OK) < 0) {
                ok(true, "# SKIP no " PYTHON);
                return;
        }
        pid = spawn((char *const[]) { (char *) PYTHON, (char *) "-c", (char *) script, NULL }, &f);
        if (pid < 0)
                return;
        while (f && fgets(line, sizeof line, f)) {
                struct fact x = {};

                if (parse_frame(line, &x) && n < 16)
                        facts[n++] = x;
                else if (sscanf(line, "thread %" SCNu64, &thread) == 1)
                        continue;
                else if (strncmp(line, "done", 4) == 0)
                        break;
        }
        ok(n == 9 && thread != 0, "the child told of its frames and its thread");

        r = py_process_inspect(pid, &p, &why);
        ok(r == 0 && p.layout && strcmp(p.layout->name, "3.11") == 0 && p.layout->tested,
           "python3.11 found: layout %s (%d %s)", r == 0 ? p.layout->name : "-", r, why ? why : "");
        if (r == 0) {
                uint64_t key = 0, slot = 0, thread_id = 0;

                ok(p.runtime && p.code_type && p.unicode_type && p.bytes_type && p.tsd_first == 0x310 &&
                           p.tsd_second == 0x510,
                   "its runtime, its types, glibc's specific_1stblock at 0x%x, specific[] at 0x%x",
                   p.tsd_first, p.tsd_second);
                /* The walker's path by hand: the key, the thread's slot, its thread state. */
                ok(py_read_memory(pid, p.key_addr, &key, 8) == 0 && (uint32_t) key == 1,
                   "the thread-specific key is set (%u)", (unsigned) (key >> 32));
                r = py_read_memory(pid, thread + p.tsd_first + 16 * (key >> 32) + 8, &slot, 8);
                if (r == 0 && slot)
                        r = py_read_memory(pid, slot + p.layout->ts_thread_id, &thread_id, 8);
                ok(r == 0 && slot && thread_id == thread,
                   "the thread's slot holds a thread state whose thread_id is its pthread (0x%" PRIx64 ")",
                   thread_id);
                if (r == 0 && slot && n > 0)
                        test_walk(pid, &p, c, slot, &facts[n - 1]);
                for (size_t i = 0; i < n; i++) {
                        struct py_frame_name name;
                        uint32_t instr = p.layout->co_code_adaptive + facts[i].lasti;

                        r = py_code_cache_name(c, pid, &p, facts[i].code, instr, 0, &name);
                        ok(r == 0 && strcmp(name.qualname, facts[i].qualname) == 0 &&
                                   strcmp(name.filename, "<string>") == 0 && name.line == facts[i].line &&
                                   name.firstlineno == facts[i].firstlineno && !name.incomplete,
                           "%s: named %s, line %d (Python says %d)", facts[i].qualname,
                           r == 0 ? name.qualname : "-", r == 0 ? name.line : -2, facts[i].line);
                }
                {
                        struct py_frame_name name;

                        /* Forgotten (as at an exec), and then seen again: read anew. */
                        py_code_cache_forget(c, pid);
                        r = py_code_cache_name(c, pid, &p, facts[0].code, 0, 0, &name);
                        ok(r == 0 && strcmp(name.qualname, facts[0].qualname) == 0,
                           "forgotten, then named again: %s", r == 0 ? name.qualname : "-");
                        /* Not a code object: the runtime itself, and an address nothing maps. */
                        is_int(py_code_cache_name(c, pid, &p, p.runtime, 0, 0, &name), -EBADMSG,
                               "not a code object: -EBADMSG");
                        is_int(py_code_cache_name(c, pid, &p, 0x10, 0, 0, &name), -EBADMSG,
                               "an unmapped address: -EBADMSG");
                }
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        if (f)
                fclose(f);
        is_int(py_process_inspect(pid, &p, NULL), -ESRCH, "a process gone: -ESRCH");
        is_int(py_process_inspect(getpid(), &p, NULL), -ENOENT, "a process that is no Python: -ENOENT");
}

/* A child that runs /bin/sleep: no Python, once it has exec'd (its exe says so). */
static void test_not_python(void) {
        struct py_process p;
        char exe[256] = "";
        pid_t pid = fork();

        if (pid == 0) {
                execl("/bin/sleep", "sleep", "60", (char *) NULL);
                _exit(127);
        }
        for (int i = 0; i < 1000 && !strstr(exe, "sleep"); i++) {
                char path[64];
                ssize_t k;

                snprintf(path, sizeof path, "/proc/%d/exe", (int) pid);
                k = readlink(path, exe, sizeof exe - 1);
                exe[k > 0 ? k : 0] = '\0';
                if (!strstr(exe, "sleep"))
                        usleep(1000);
        }
        ok(strstr(exe, "sleep"), "a child runs %s", exe);
        is_int(py_process_inspect(pid, &p, NULL), -ENOENT, "sleep is no Python: -ENOENT");
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
}

/* An interpreter embedded in a program: gdb runs libpython3.11.so, mapped at a load bias that is
 * not 0 (python3.11 is not PIE: its bias is). */
static const char embedded_script[] =
        "python\n"
        "import sys, time\n"
        "def embedded():\n"
        "    return sys._getframe()\n"
        "f = embedded()\n"
        "print('frame', id(f.f_code), f.f_lasti, f.f_lineno, f.f_code.co_firstlineno, f.f_code.co_qualname,\n"
        "      flush=True)\n"
        "time.sleep(60)\n";

static void test_embedded(void) {
        pid_t pid;
        FILE *f;
        char line[512];
        struct fact x = {};
        struct py_process p;
        struct py_frame_name name;
        _cleanup_free_ char *why = NULL;
        _cleanup_(py_code_cache_freep) struct py_code_cache *c = py_code_cache_new();
        int r;

        if (access(GDB, X_OK) < 0) {
                ok(true, "# SKIP no " GDB);
                return;
        }
        pid = spawn((char *const[]) { (char *) GDB, (char *) "-nx", (char *) "-batch", (char *) "-ex",
                                      (char *) embedded_script, NULL },
                    &f);
        if (pid < 0)
                return;
        if (!f || !fgets(line, sizeof line, f) || !parse_frame(line, &x)) {
                ok(true, "# SKIP " GDB " runs no Python");
                goto out;
        }
        r = py_process_inspect(pid, &p, &why);
        ok(r == 0 && strstr(p.path, "libpython3.11.so") && strcmp(p.layout->name, "3.11") == 0,
           "gdb's Python found in %s (%d %s)", r == 0 ? p.path : "-", r, why ? why : "");
        if (r == 0) {
                r = py_code_cache_name(c, pid, &p, x.code, p.layout->co_code_adaptive + x.lasti, 0, &name);
                ok(r == 0 && strcmp(name.qualname, "embedded") == 0 && name.line == x.line,
                   "its code object named %s, line %d (Python says %d)", r == 0 ? name.qualname : "-",
                   r == 0 ? name.line : -2, x.line);
        }
out:
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        if (f)
                fclose(f);
}

static void test_layouts(void) {
        ok(py_layout_find(0x030b02f0) && py_layout_find(0x030c01f0) && py_layout_find(0x030d00f0),
           "3.11, 3.12, 3.13 have layouts");
        ok(!py_layout_find(0x030a0cf0) && !py_layout_find(0x030e00f0), "3.10 and 3.14 have none");
        ok(py_layout_find(0x030b02f0)->tested && !py_layout_find(0x030c01f0)->tested &&
                   !py_layout_find(0x030d00f0)->tested,
           "only 3.11 is tested here");
}

int main(void) {
        test_lines();
        test_layouts();
        test_live();
        test_not_python();
        test_embedded();
        return tap_done();
}
