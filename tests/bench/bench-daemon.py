#!/usr/bin/env python3
"""What the daemon costs the programs it profiles, in two benchmarks.

The default: the cost at its defaults. Real work, each run unprofiled and profiled in
interleaved pairs (each profiled run against the mean of the unprofiled runs on either side of
it; the order of the profilers turns each round): a g++ compile of a file of containers and
regex, `make -j2` of the lower layers of cppd's own sources (gcc -O2), PostgreSQL under pgbench
(2 clients; its cost is 1/tps), and three loops whose time per event is printed: a toucher of
fresh memory (`cycles faults`: ns a page fault), a ping-pong of two threads (`pingpong`: ns a
round), a loop of preads (`cycles syscalls`: ns a call); with --workloads spin, a CPU-bound
function whose own CPU time is fixed by construction (`cycles spin`: so its CPU figure is the
profiler's own, cppctl record's, and its wall time the rest); with --workloads pyweb, a Python
web service under load (tests/bench/pyweb.py: ns a request; its Python frames read at each
sample, or not with the mode "python = no"). Profiled by cppd at its defaults (`cpu-time/10,
page-faults/256, context-switches/64`), with `jitter = no`, with `every_event = yes`, by `cppctl
record` at its defaults, and with --before BUILD by another build's cppd and cppctl record at
their defaults (--modes picks some of these columns, or: "record --no-jitter", "record
--no-realtime", and the defaults' resources one at a time: "cpu-time/10 alone", "page-faults/256
alone", "context-switches/64 alone").
Each run is measured in CPU time of the workload and of every process it started (tests/bench/timed
-c: the cost a profiler adds in the kernel is charged to the program, and CPU time is what other
load on a shared machine moves least) and in wall time. Printed: each workload's unprofiled
figure, and per profiler the median slowdown of the pairs with their range, in both; the
profiler's own CPU time during each run (cppd's, or cppctl record's less what it started) against
the workload's; the load average before and after.

--busy: the daemon on a busy machine, beside perf record -a with the same events, in one run.
A workload loads every CPU with CPU time, page faults and system calls (recursive, process_db
and reader from tests/workloads, side by side). It runs REPEAT times each: unprofiled; while cppd
profiles the machine at its default settings; under `perf record -a` with the same events,
periods, DWARF stack size and ring size. Printed: the workload's wall time and slowdown, the
profiler's CPU time during it (cppd: utime+stime of the daemon; perf: perf record's, then
perf report's to get the same profiles), and cppd's resident memory.

Never fails on speed.

Usage: sudo tests/bench/bench-daemon.py [BUILD_DIR] [--rounds 5] [--workloads compile,make,...]
                                        [--before OTHER_BUILD] [--modes A,B] [--quick]
       sudo tests/bench/bench-daemon.py [BUILD_DIR] --busy [--repeat 3] [--quick]"""
import argparse
import glob
import os
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfcheck import working_perf  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'integration'))
import realprograms as rp  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')


def cpu_of_pid(pid):
    """utime + stime of process PID, all threads, in seconds."""
    fields = open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def rss_kib(pid):
    for line in open('/proc/%d/status' % pid):
        if line.startswith('VmRSS:'):
            return int(line.split()[1])
    return 0


class Daemon:
    """cppd from CPPD with a private store and socket, and EXTRA in [collect]; started and
    waited for (READY=1), stopped with SIGTERM."""

    def __init__(self, cppd, tmp, extra):
        self.tmp = tmp
        conf = os.path.join(tmp, 'cppd.conf')
        with open(conf, 'w') as f:
            f.write('[collect]\n%s\n[store]\npath = %s/cppd.db\n[control]\nsocket = %s/cppd.sock\n'
                    % (extra, tmp, tmp))
        notify = os.path.join(tmp, 'notify')
        if os.path.exists(notify):
            os.unlink(notify)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(notify)
        sock.settimeout(60)
        self.p = subprocess.Popen([cppd, '-c', conf], env=dict(os.environ, NOTIFY_SOCKET=notify),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while b'READY=1' not in sock.recv(4096):
            pass
        sock.close()
        os.unlink(notify)
        time.sleep(1)

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait()
        for f in glob.glob(os.path.join(self.tmp, 'cppd.db*')):
            os.unlink(f)


def make_tree(tmp):
    """A Makefile that compiles the lower layers of cppd's own sources (common/base, tree, view,
    store: no generated headers) with gcc -O2 into TMP/make; returns (its directory, the number
    of files)."""
    d = os.path.join(tmp, 'make')
    os.mkdir(d)
    dirs = [os.path.join(REPO, 'common', x) for x in ('base', 'tree', 'view', 'store')]
    srcs = [c for x in dirs for c in sorted(glob.glob(os.path.join(x, '*.c')))]
    cflags = '-O2 -std=c11 -D_GNU_SOURCE -DCPPD_VERSION=\'"0"\' -I/usr/include/elfutils ' + \
        ' '.join('-I' + os.path.abspath(x) for x in dirs)
    with open(os.path.join(d, 'Makefile'), 'w') as f:
        objs = []
        for i, c in enumerate(srcs):
            o = '%d-%s.o' % (i, os.path.basename(c)[:-2])
            objs.append(o)
            f.write('%s: %s\n\tgcc %s -c $< -o $@\n' % (o, os.path.abspath(c), cflags))
        f.write('all: %s\n' % ' '.join(objs))
        f.write('clean:\n\trm -f *.o\n')
    return d, len(srcs)


class Work:
    """One workload: NAME, UNIT (what its figure is: s, ns an event, or tps), ARGV, PER (events
    in a run, for a time per event), and run(prefix) -> its cost as (wall seconds, CPU seconds of
    it and everything it started), per event or per transaction. PREFIX is what runs it (cppctl
    record's command line)."""

    def __init__(self, name, unit, argv, per=1.0, transactions=None, before=None):
        self.name, self.unit, self.argv, self.per = name, unit, argv, per
        self.transactions, self.before = transactions, before

    def run(self, prefix, timed, tmp, daemon=None):
        """Also returns, third, the profiler's own CPU seconds during the run (DAEMON's, or the
        prefix's: cppctl record's, less what it started), per event or transaction."""
        t, c = os.path.join(tmp, 'timed'), os.path.join(tmp, 'timed-cpu')
        for f in (t, c):
            if os.path.exists(f):
                os.unlink(f)
        if self.before:
            self.before()
        d0 = cpu_of_pid(daemon) if daemon else 0
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run(list(prefix) + [timed, '-c', c, t] + self.argv, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        per = self.transactions() if self.transactions else self.per
        if p.returncode != 0 or not os.path.exists(c) or not per:
            sys.exit('bench-daemon: %s failed (%d): %s' % (self.name, p.returncode, p.stdout[-1000:]))
        cpu = float(open(c).read())
        if daemon:
            own = cpu_of_pid(daemon) - d0
        elif prefix:
            own = max(0.0, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime - cpu)
        else:
            own = 0.0
        return float(open(t).read()) / per, cpu / per, own / per


def workloads(a, build, tmp):
    wl = os.path.join(build, 'tests', 'workloads')
    quick = a.quick
    out = []
    names = a.workloads.split(',')
    if 'compile' in names and rp.shutil.which('g++'):
        out.append(Work('g++ -O0 -c compile.cc', 's', ['g++', '-O0', '-std=c++17', '-c',
                                                       os.path.join(rp.DATA, 'compile.cc'), '-o',
                                                       os.path.join(tmp, 'compile.o')]))
    if 'make' in names and not quick:
        d, n = make_tree(tmp)
        out.append(Work('make -j2, %d files of cppd -O2' % n, 's', ['make', '-s', '-j2', '-C', d, 'all'],
                        before=lambda: subprocess.run(['make', '-s', '-C', d, 'clean'])))
    if 'pgbench' in names and not quick:
        pg = rp.Workload('postgres', tmp)
        if pg.why_not:
            print('pgbench: %s' % pg.why_not)
        else:
            argv = pg.argv[:-1] + ['4']     # pgbench.sh's seconds, the last word (rp.Workload.wrap())

            def transactions(pg=pg):
                status, out = pg.result()
                m = re.search(r'number of transactions actually processed: (\d+)', out)
                return int(m.group(1)) if status == 0 and m else 0
            out.append(Work('pgbench, 2 clients, 4 s', 'tps', argv, transactions=transactions, before=pg.before))
    if 'toucher' in names:
        n = 25000 if quick else 250000
        out.append(Work('fresh memory, a page fault', 'ns', [os.path.join(wl, 'cycles-nofp'), 'faults', str(n)],
                        per=4 * n / 1e9))
    if 'pyweb' in names and os.path.exists('/usr/bin/python3'):
        n = 1000 if quick else 10000
        out.append(Work('python web service, a request', 'ns', ['/usr/bin/python3', os.path.join(REPO, 'tests', 'bench',
                                                                                           'pyweb.py'), str(n)],
                        per=n / 1e9))
    if 'spin' in names:
        # Its CPU time is fixed by construction (it spins until its own clock says so): what it
        # shows is the profiler's own CPU (cppctl record's), and its wall time the rest.
        ms = 300 if quick else 3000
        out.append(Work('spin, %g s of CPU' % (ms / 1000), 's', [os.path.join(wl, 'cycles-nofp'), 'spin', str(ms)]))
    if 'events' in names:
        n = 2000 if quick else 20000
        out.append(Work('pingpong, a round', 'ns', [os.path.join(wl, 'pingpong-nofp'), str(n)], per=n / 1e9))
        n = 10000 if quick else 100000
        out.append(Work('preads, a call', 'ns', [os.path.join(wl, 'cycles-nofp'), 'syscalls', str(n)],
                        per=5 * n / 1e9))
    return out


def cost_at_defaults(a):
    """The first benchmark of the docstring."""
    timed = os.path.join(a.build, 'tests', 'bench', 'timed')
    cppd = os.path.join(a.build, 'daemon', 'cppd')
    cppctl = os.path.join(a.build, 'client', 'cppctl')
    rounds = 1 if a.quick else a.rounds
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        works = workloads(a, a.build, tmp)
        modes = [('defaults', cppd, ''), ('jitter = no', cppd, 'jitter = no'),
                 ('every_event = yes', cppd, 'every_event = yes'), ('cppctl record', None, cppctl),
                 # cppctl record with fixed periods (only with --modes): what redrawing its clock
                 # at each overflow costs.
                 ('record --no-jitter', None, cppctl, '--no-jitter'),
                 # cppctl record's reader in the normal class (only with --modes): what the
                 # real-time one costs, or saves.
                 ('record --no-realtime', None, cppctl, '--no-realtime'),
                 # Python frames off (only with --modes): what reading them costs a Python service.
                 ('python = no', cppd, 'python = no'),
                 # The defaults' resources one at a time (only with --modes): which one costs.
                 ('cpu-time/10 alone', cppd, 'resources = cpu-time/10'),
                 ('page-faults/256 alone', cppd, 'resources = page-faults/256'),
                 ('context-switches/64 alone', cppd, 'resources = context-switches/64')]
        if not a.modes:
            modes = modes[:4]
        modes = [m if len(m) == 4 else m + ('',) for m in modes]
        if a.before:
            modes.append(('before', os.path.join(a.before, 'daemon', 'cppd'), '', ''))
            modes.append(('record before', None, os.path.join(a.before, 'client', 'cppctl'), ''))
        if a.modes:
            modes = [m for m in modes if m[0] in a.modes.split(',')]
        load_before = os.getloadavg()
        off = {w.name: [] for w in works}
        on = {(m[0], w.name, k): [] for m in modes for w in works for k in (0, 1, 2)}

        def block(prefix=(), daemon=None):
            return {w.name: w.run(prefix, timed, tmp, daemon) for w in works}

        for r in range(rounds):
            order = modes[r % len(modes):] + modes[:r % len(modes)]
            last = block()
            for name, daemon_bin, extra, opts in order:
                if daemon_bin:
                    d = Daemon(daemon_bin, tmp, extra)
                    got = block(daemon=d.p.pid)
                    d.stop()
                else:
                    db = os.path.join(tmp, 'record.db')
                    got = block([extra, 'record', '-q'] + opts.split() + ['--db', db, '--'])
                    os.unlink(db)
                nxt = block()
                for w in works:
                    for k in (0, 1):
                        base = (last[w.name][k] + nxt[w.name][k]) / 2
                        on[(name, w.name, k)].append(got[w.name][k] / base - 1)
                    # The profiler's own CPU, against the workload's unprofiled CPU time.
                    on[(name, w.name, 2)].append(got[w.name][2] / ((last[w.name][1] + nxt[w.name][1]) / 2))
                    off[w.name].append(last[w.name])
                last = nxt
        load_after = os.getloadavg()

    if a.before:
        print('before: %s' % os.path.abspath(a.before))
    print('machine: Linux %s, %d CPUs; load average %.1f before, %.1f after; %d rounds' %
          (os.uname().release, os.cpu_count(), load_before[0], load_after[0], rounds))
    width = max(len(w.name) for w in works) + 2
    for k, what in ((1, 'CPU time of the workload and all it started (what the profiler costs it in the kernel '
                        'is charged to it)'),
                    (0, 'wall time (tps for pgbench), which other load on the machine moves')):
        print('\nslowdown in %s: the median over the rounds of (profiled / the mean of the unprofiled runs '
              'beside it - 1) [min, max]' % what)
        print('%-*s %12s' % (width, 'workload', 'unprofiled') + ''.join(' %24s' % m[0] for m in modes))
        for w in works:
            v = statistics.median(x[k] for x in off[w.name])
            if w.unit == 'tps':
                shown = '%.1f tps' % (1 / v) if k == 0 else '%.0f us/t' % (1e6 * v)
            else:
                shown = '%.0f ns' % v if w.unit == 'ns' else '%.3f s' % v
            line = '%-*s %12s' % (width, w.name, shown)
            for m in modes:
                x = on[(m[0], w.name, k)]
                line += ' %24s' % ('%+.1f%% [%+.1f, %+.1f]' % (100 * statistics.median(x), 100 * min(x),
                                                                 100 * max(x)))
            print(line)
    print('\nthe profiler\'s own CPU time during the run (cppd\'s: of the whole machine, other load '
          'included; cppctl record\'s: less what it started), against the workload\'s unprofiled CPU '
          'time: median [min, max]')
    print('%-*s %12s' % (width, 'workload', '') + ''.join(' %24s' % m[0] for m in modes))
    for w in works:
        line = '%-*s %12s' % (width, w.name, '')
        for m in modes:
            x = on[(m[0], w.name, 2)]
            line += ' %24s' % ('%.1f%% [%.1f, %.1f]' % (100 * statistics.median(x), 100 * min(x), 100 * max(x)))
        print(line)


def busy_machine(a):
    """The --busy benchmark of the docstring."""
    wl = os.path.join(a.build, 'tests', 'workloads')
    timed = os.path.join(a.build, 'tests', 'bench', 'timed')
    cppd = os.path.join(a.build, 'daemon', 'cppd')
    perf = working_perf()
    rounds = 2 if a.quick else 8
    if a.quick:
        a.repeat = 1
    ncpu = os.cpu_count()
    # One CPU-bound job per CPU, each alternating recursion, a page-faulting sort and reads.
    job = ('i=0; while [ $i -lt %d ]; do %s/recursive-nofp 12 20; %s/process_db-nofp 64000; '
           '%s/reader-nofp 16384 4096; i=$((i+1)); done' % (rounds, wl, wl, wl))
    work = ['sh', '-c', ' & '.join(['(%s)' % job] * ncpu) + ' & wait']

    with tempfile.TemporaryDirectory() as tmp:
        t = os.path.join(tmp, 't')

        def run_work(prefix=(), limit=None):
            """Runs the workload (under PREFIX); returns its wall time and the CPU time of
            everything started (the workload, and perf with it). Past LIMIT seconds everything
            started is killed and the CPU time is None; so is the wall time if the workload had
            not finished (perf record may take long after it, reading build ids)."""
            if os.path.exists(t):
                os.unlink(t)
            before = os.times()
            p = subprocess.Popen(list(prefix) + [timed, t] + work, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
            try:
                p.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                return (float(open(t).read()) if os.path.exists(t) else None), None
            if p.returncode != 0:
                sys.exit('bench-daemon: the workload failed (%d)' % p.returncode)
            after = os.times()
            return float(open(t).read()), (after.children_user - before.children_user +
                                           after.children_system - before.children_system)

        plain, with_cppd, with_perf = [], [], []
        cppd_cpu, cppd_rss, perf_cpu, report_cpu = [], [], [], []
        report_stopped = perf_stopped = unfinished = 0
        conf = os.path.join(tmp, 'cppd.conf')
        with open(conf, 'w') as f:
            f.write('[store]\npath = %s/cppd.db\n[control]\nsocket = %s/cppd.sock\n' % (tmp, tmp))
        notify = os.path.join(tmp, 'notify')
        plain_cpu = []
        for i in range(a.repeat):
            wall, cpu = run_work()
            plain.append(wall)
            plain_cpu.append(cpu)

            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(notify)
            sock.settimeout(30)
            d = subprocess.Popen([cppd, '-c', conf], env=dict(os.environ, NOTIFY_SOCKET=notify),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while b'READY=1' not in sock.recv(4096):
                pass
            time.sleep(1)
            c0 = cpu_of_pid(d.pid)
            with_cppd.append(run_work()[0])
            cppd_cpu.append(cpu_of_pid(d.pid) - c0)
            cppd_rss.append(rss_kib(d.pid))
            d.send_signal(signal.SIGTERM)
            d.wait()
            sock.close()
            os.unlink(notify)
            for f in ('cppd.db', 'cppd.db-wal', 'cppd.db-shm'):
                if os.path.exists(os.path.join(tmp, f)):
                    os.unlink(os.path.join(tmp, f))

            if perf:
                data = os.path.join(tmp, 'perf.data')
                wall, cpu = run_work([perf, 'record', '-q', '-a', '-m', '1M', '-o', data,
                                      '-e', 'cpu-clock', '-c', '10000000', '-e', 'page-faults', '-c', '256',
                                      '-e', 'context-switches', '-c', '64', '--call-graph', 'dwarf,8192', '--'],
                                     limit=a.perf_limit)
                if cpu is None:
                    perf_stopped += 1
                    with_perf.append(wall if wall is not None else a.perf_limit)
                    unfinished += wall is None
                    if os.path.exists(data):
                        os.unlink(data)
                    continue
                with_perf.append(wall)
                perf_cpu.append(max(cpu - plain_cpu[-1], 0))     # perf's own: beyond the workload's
                before = os.times()
                try:
                    subprocess.run([perf, 'report', '-i', data, '--stdio', '--children'], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, timeout=a.report_limit)
                except subprocess.TimeoutExpired:
                    report_stopped += 1
                after = os.times()
                report_cpu.append(after.children_user - before.children_user + after.children_system -
                                  before.children_system)
                os.unlink(data)

        p = statistics.median(plain)
        c = statistics.median(with_cppd)
        print('machine: Linux %s, %d CPUs; workload: %d jobs of recursive, process_db and reader, %d rounds'
              % (os.uname().release, ncpu, ncpu, rounds))
        print('%-34s %10s %10s' % ('', 'cppd', 'perf -a'))
        print('%-34s %10.3f' % ('workload unprofiled, s', p))
        if with_perf:
            f = statistics.median(with_perf)
            at_least = '>=' if unfinished * 2 >= len(with_perf) else ''
            print('%-34s %10.3f %10s' % ('workload profiled, s', c, '%s%.3f' % (at_least, f)))
            print('%-34s %9.1f%% %9s%%' % ('slowdown', 100 * (c / p - 1), '%s%.1f' % (at_least, 100 * (f / p - 1))))
            print('%-34s %10.2f %10s' % ('profiler CPU while it ran, s', statistics.median(cppd_cpu),
                                          '%.2f' % statistics.median(perf_cpu) if perf_cpu else '-'))
            if report_cpu:
                print('%-34s %10s %10.2f%s' % ('perf report afterwards, CPU s', '-', statistics.median(report_cpu),
                                                ' (stopped at %d s in %d of %d runs: at least that)'
                                                % (a.report_limit, report_stopped, len(report_cpu))
                                                if report_stopped else ''))
            if perf_stopped:
                print('perf record was stopped at %d s (--perf-limit) in %d of %d runs, %d of them before the '
                      'workload ended (counted as %d s), the others after it (reading build ids; no perf CPU '
                      'or report for those).' % (a.perf_limit, perf_stopped, len(with_perf), unfinished,
                                                 a.perf_limit))
        else:
            print('%-34s %10.3f' % ('workload profiled, s', c))
            print('%-34s %9.1f%%' % ('slowdown', 100 * (c / p - 1)))
            print('%-34s %10.2f' % ('profiler CPU while it ran, s', statistics.median(cppd_cpu)))
        print('%-34s %10.1f' % ('cppd resident memory, MiB', statistics.median(cppd_rss) / 1024))
        print("perf -a's CPU is its process's beyond the workload's own (measured unprofiled); cppd's is the daemon's.")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--busy', action='store_true', help='the busy-machine benchmark against perf record -a')
    ap.add_argument('--rounds', type=int, default=5, help='rounds of interleaved pairs (default 5)')
    ap.add_argument('--workloads', default='compile,make,pgbench,toucher,events')
    ap.add_argument('--before', help='another build directory whose cppd is measured at its defaults too')
    ap.add_argument('--modes', help='only these profilers, by their column names (e.g. "cppctl record,record before")')
    ap.add_argument('--repeat', type=int, default=3, help='--busy: repetitions')
    ap.add_argument('--quick', action='store_true', help='one short round: a smoke test')
    ap.add_argument('--perf-limit', type=int, default=600,
                    help='--busy: seconds the workload may take under perf record before everything is stopped '
                    '(its slowdown is then at least that)')
    ap.add_argument('--report-limit', type=int, default=600,
                    help="--busy: seconds perf report may take per repetition before it is stopped (its CPU time "
                    "is then at least that)")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)  # workloads run from elsewhere
    a.before = a.before and os.path.abspath(a.before)
    if os.geteuid() != 0:
        print('bench-daemon: needs root for system-wide perf events; skipped')
        return
    if a.busy:
        busy_machine(a)
    else:
        cost_at_defaults(a)


if __name__ == '__main__':
    main()
