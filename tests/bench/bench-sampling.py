#!/usr/bin/env python3
"""Random sampling and overload thinning, figures for BENCHMARKS.md.

1. The cost per event of the sampling program (tests/bench/bench-sampling.c): an overflow it drops
   and one it keeps, a syscall and a page fault; cpu-clock at 1 ms fixed against 100 us with 1 in 10
   kept.
2. The storm at period 1: `cycles syscalls N` (5 preads a cycle, 4 through path_a: truth 0.80),
   N = 20,000 (100,000 preads), under `cppctl record -e syscalls/1` (random, thinned under load)
   and `perf record -e raw_syscalls:sys_enter -c 1` at the same stack size: samples kept, lost,
   thinning, the share of path_a, and CPU time. The same with --no-jitter (fixed periods, blind
   loss, as before random sampling).

Prints figures; never fails. Usage: tests/bench/bench-sampling.py [BUILD_DIR] [--quick]"""
import argparse
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfcheck import working_perf  # noqa: E402


def cpu_run(argv):
    before = os.times()
    t0 = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    after = os.times()
    return (after.children_user + after.children_system - before.children_user - before.children_system,
            time.monotonic() - t0, p)


def cppctl_storm(build, args, n, stack):
    cycles = os.path.join(build, 'tests', 'workloads', 'cycles-nofp')
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, 'r.db')
        cpu, wall, p = cpu_run([os.path.join(build, 'client', 'cppctl'), 'record', '-q', '--db', db,
                                '--stack-size', str(stack)] + args + ['-e', 'syscalls/1', '--', cycles,
                                                                      'syscalls', str(n)])
        if p.returncode != 0:
            return None
        con = sqlite3.connect(db)
        lost, sampling, thinned = con.execute('SELECT lost, sampling, thinned FROM run_resource').fetchone()
        kept, hits = con.execute('SELECT sum(samples), sum(hits) FROM sample').fetchone()
        a = b = 0
        for text, h in con.execute("SELECT st.text, sum(s.hits) FROM sample AS s "
                                   "JOIN stack_text AS st ON st.stack_id = s.stack_id GROUP BY st.text"):
            if ';path_a;' in text + ';':
                a += h
            elif ';path_b;' in text + ';':
                b += h
        return dict(kept=kept, hits=hits, lost=lost, sampling=sampling, thinned=thinned,
                    share=a / (a + b) if a + b else 0.0, cpu=cpu, wall=wall)


def perf_storm(build, n, stack):
    cycles = os.path.join(build, 'tests', 'workloads', 'cycles-nofp')
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, 'perf.data')
        cpu, wall, p = cpu_run(['perf', 'record', '-q', '-o', data, '-e', 'raw_syscalls:sys_enter', '-c', '1',
                                '--call-graph', 'dwarf,%d' % stack, '--', cycles, 'syscalls', str(n)])
        if p.returncode != 0:
            return None
        r = subprocess.run(['perf', 'report', '-i', data, '--stats'], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        kept = lost = 0
        m = re.search(r'SAMPLE events:\s+(\d+)', r.stdout)
        if m:
            kept = int(m.group(1))
        m = re.search(r'LOST_SAMPLES events:\s+(\d+)', r.stdout) or re.search(r'LOST events:\s+(\d+)', r.stdout)
        lost_line = re.search(r'lost (\d+) samples', p.stderr + r.stdout)
        if lost_line:
            lost = int(lost_line.group(1))
        return dict(kept=kept, lost=lost, cpu=cpu, wall=wall)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--quick', action='store_true')
    ap.add_argument('--runs', type=int, default=5, help='recordings of the random storm (default 5)')
    a = ap.parse_args()
    if os.geteuid() != 0:
        print('bench-sampling: needs root (BPF, tracepoints): skipped')
        return 0
    n_events = 20000 if a.quick else 200000
    p = subprocess.run([os.path.join(a.build, 'tests', 'bench', 'bench-sampling'), str(n_events)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(p.stdout, end='')

    n, stack = (4000, 16384) if a.quick else (20000, 16384)
    print('\nStorm at period 1: %d preads (truth path_a = 0.80), stack %d bytes:' % (5 * n, stack))
    runs = 1 if a.quick else a.runs
    errors = []
    for label, args, times in (('cppctl record (random, thinned)', [], runs),
                               ('cppctl record --no-jitter', ['--no-jitter'], 1)):
        for _ in range(times):
            r = cppctl_storm(a.build, args, n, stack)
            if not r:
                print('  %s: failed' % label)
                continue
            if not args:
                errors.append(abs(r['share'] - 0.8))
            print('  %-32s %6d kept, %6d lost, thinned to 1 in %d, path_a %.4f (error %+.4f), '
                  'hits %d of %d calls, %.2f s CPU, %.1f us CPU a kept sample' %
                  (label, r['kept'], r['lost'], r['thinned'], r['share'], r['share'] - 0.8, r['hits'], 5 * n,
                   r['cpu'], 1e6 * r['cpu'] / max(r['kept'], 1)))
    if errors:
        print('  random, %d runs: largest |path_a - 0.80| %.4f, %d of %d within 0.02' %
              (len(errors), max(errors), sum(e <= 0.02 for e in errors), len(errors)))
    if working_perf():
        r = perf_storm(a.build, n, stack)
        if r:
            print('  %-32s %6d kept, %6s lost, %.2f s CPU (record only)' %
                  ('perf record -c 1', r['kept'], r['lost'] or '?', r['cpu']))
    else:
        print('  perf record: not usable here')
    return 0


sys.exit(main())
