#!/usr/bin/env python3
"""What counting allocations costs (alloc-bytes, alloc-count): per allocation, and for a real
program. Prints figures; never fails on speed.

1. One malloc/free pair (build/tests/bench/bench-alloc), CPU time, best of ROUNDS interleaved:
   unprofiled; counted by cppd's preloaded library alone (LD_PRELOAD and its periods, nothing
   sampling its calls); sampled by `cppctl record -e alloc-bytes,alloc-count` at the defaults;
   under heaptrack; counted by a uprobe on glibc's malloc (`perf probe`, `perf stat`); and
   sampled by `cppctl attach -e alloc-bytes,alloc-count` (uprobes on each entry point, one BPF
   uprobe_multi link, cppd's counting program: the path of attach and cppd's [alloc] units).
2. A g++ -O0 compile (tests/integration/data/realprograms/compile.cc; the compiler proper,
   cc1plus, one process): its CPU time unprofiled and under record at the defaults, and the CPU
   time of the compiler with the profiler's own (cppctl; heaptrack and its interpreter), and
   under attach (attached before it starts: a shell that execs it), the median slowdown of
   ROUNDS interleaved rounds.

Usage: sudo tests/bench/bench-alloc.py [BUILD_DIR] [--rounds 5] [--quick]"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, '..', 'integration', 'data', 'realprograms')


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def per_pair(argv, env=None):
    p = run(argv, env=env)
    for line in reversed(p.stdout.splitlines()):
        try:
            return float(line)
        except ValueError:
            pass
    return None


def links_of(pid):
    n = 0
    for fd in os.listdir('/proc/%d/fdinfo' % pid):
        try:
            with open('/proc/%d/fdinfo/%s' % (pid, fd)) as f:
                n += 'link_type:\tuprobe_multi' in f.read()
        except OSError:
            pass
    return n


def under_attach(cppctl, db, argv):
    """Starts ARGV (which waits for a line on stdin), attaches cppctl attach -e
    alloc-bytes,alloc-count to it, lets it go once probed (without cppctl, ARGV alone); returns
    its stdout and its CPU time in seconds."""
    w = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    a = subprocess.Popen([cppctl, 'attach', '--standalone', '-q', '--db', db, '-e', 'alloc-bytes,alloc-count',
                          str(w.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if cppctl else None
    try:
        for _ in range(600):
            if not a or a.poll() is not None or links_of(a.pid) >= 1:
                break
            time.sleep(0.05)
        w.stdin.write('\n')
        w.stdin.close()
        out = w.stdout.read()
        _, _, ru = os.wait4(w.pid, 0)
        w.returncode = 0
    finally:
        if a:
            a.wait()
    return out, ru.ru_utime + ru.ru_stime


def last_float(text):
    for line in reversed(text.splitlines()):
        try:
            return float(line)
        except ValueError:
            pass
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--quick', action='store_true')
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    cppctl = os.path.join(build, 'client', 'cppctl')
    bench = os.path.join(build, 'tests', 'bench', 'bench-alloc')
    timed = os.path.join(build, 'tests', 'bench', 'timed')
    lib = os.path.join(build, 'common', 'collect', 'libcppd-alloc.so')
    n = 200000 if a.quick else 5000000
    rounds = 1 if a.quick else a.rounds
    counted = dict(os.environ, LD_PRELOAD=lib, CPPD_ALLOC_BYTES='524288', CPPD_ALLOC_CALLS='1000')

    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, 'b.db')
        modes = [('unprofiled', lambda: per_pair([bench, str(n), '64'])),
                 ('counted (the library alone)', lambda: per_pair([bench, str(n), '64'], env=counted)),
                 ('sampled (cppctl record, defaults)',
                  lambda: per_pair([cppctl, 'record', '-q', '--db', db, '-e', 'alloc-bytes,alloc-count', '--',
                                    bench, str(n), '64']))]
        modes.append(('sampled by uprobes (cppctl attach, defaults)',
                      lambda: last_float(under_attach(cppctl, db, [bench, str(n), '64', 'wait'])[0])))
        if shutil.which('heaptrack'):
            modes.append(('heaptrack', lambda: per_pair(['heaptrack', '-o', os.path.join(tmp, 'ht'), bench,
                                                         str(n), '64'])))
        uprobe = False
        if shutil.which('perf') and os.geteuid() == 0 and not a.quick:
            libc = run(['sh', '-c', 'ldd %s | awk \'/libc.so/ {print $3}\'' % bench]).stdout.strip()
            uprobe = run(['perf', 'probe', '-q', '-x', libc, '--add', 'cppd_bench_malloc=malloc']).returncode == 0
            if uprobe:
                modes.append(('a uprobe on malloc (perf stat)',
                              lambda: per_pair(['perf', 'stat', '-x,', '-o', os.devnull, '-e',
                                                'probe_libc:cppd_bench_malloc', '--', bench, str(n), '64'])))
        best = {m: None for m, _ in modes}
        try:
            for _ in range(rounds):
                for m, f in modes:
                    v = f()
                    if v is not None and (best[m] is None or v < best[m]):
                        best[m] = v
        finally:
            if uprobe:
                run(['perf', 'probe', '-q', '--del', 'probe_libc:cppd_bench_malloc'])
        base = best['unprofiled']
        print('One malloc(64) and free, CPU time, best of %d rounds of %d:' % (rounds, n))
        print('| design | ns a pair | more than unprofiled |')
        print('| --- | --- | --- |')
        for m, _ in modes:
            v = best[m]
            print('| %s | %s | %s |' % (m, '%.1f' % v if v is not None else '-',
                                       '%+.1f ns' % (v - base) if v is not None and base else '-'))

        src = os.path.join(DATA, 'compile.cc')
        if not shutil.which('g++') or not os.path.exists(src):
            print('\n(no g++ or compile.cc: the compile is left out)')
            return 0
        # The compiler proper, one process (heaptrack follows no child): g++ -### says how.
        p = run(['g++', '-###', '-O0', '-std=c++17', '-S', src, '-o', os.path.join(tmp, 'c.s')])
        line = next((x for x in p.stderr.splitlines() if 'cc1plus' in x), None)
        if not line:
            print('\n(g++ -### names no cc1plus: the compile is left out)')
            return 0
        cc1 = [x.strip('"') for x in line.split()]
        cpu = os.path.join(tmp, 'cpu')

        def cpu_of(argv):
            """The CPU time of ARGV and all it started (timed -c), seconds."""
            run([timed, '-c', cpu, os.devnull] + argv)
            with open(cpu) as f:
                return float(f.read())

        record = [cppctl, 'record', '-q', '--db', db, '-e', 'alloc-bytes,alloc-count', '--']
        # Quick (CI's smoke test): cppctl record only, not heaptrack nor attach (20 s less).
        heap = ['heaptrack', '-o', os.path.join(tmp, 'htc')] if shutil.which('heaptrack') and not a.quick else None
        rows = {'the compiler alone, under cppctl record': [], 'the compiler and cppctl record': [],
                'the compiler and heaptrack (its interpreter too)': [],
                'the compiler alone, under cppctl attach (uprobes)': []}
        shell = ['sh', '-c', 'read x; exec "$@"', 'sh'] + cc1
        plain = []
        for _ in range(1 if a.quick else rounds):
            off = cpu_of(cc1)
            plain.append(off)
            run(record + [timed, '-c', cpu, os.devnull] + cc1)
            with open(cpu) as f:
                rows['the compiler alone, under cppctl record'].append(float(f.read()) / off - 1)
            rows['the compiler and cppctl record'].append(cpu_of(record + cc1) / off - 1)
            if heap:
                rows['the compiler and heaptrack (its interpreter too)'].append(cpu_of(heap + cc1) / off - 1)
            if not a.quick:
                _, waited = under_attach(None, db, shell)
                _, attached = under_attach(cppctl, db, shell)
                rows['the compiler alone, under cppctl attach (uprobes)'].append(attached / waited - 1)
        print('\ncc1plus -O0 of compile.cc (%.2f s of CPU unprofiled, median), at the defaults (alloc-bytes/524288, '
              'alloc-count/1000): slowdown in CPU time, median of %d interleaved rounds [min, max]:' %
              (statistics.median(plain), len(plain)))
        print('| CPU time of | slowdown |')
        print('| --- | --- |')
        for m, v in rows.items():
            if v:
                print('| %s | %+.1f%% [%+.1f, %+.1f] |' % (m, 100 * statistics.median(v), 100 * min(v),
                                                          100 * max(v)))
    return 0


sys.exit(main())
