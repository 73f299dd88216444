#!/usr/bin/env python3
"""Overhead of profiling, cppctl record against perf record, in one run on one machine.

For each configuration the workload runs REPEAT times unprofiled, under `cppctl record` and under
`perf record` with the same event, period and unwinding, interleaved so that drifts in machine
speed hit all three alike; the medians give each profiler's slowdown and their ratio. Then the
cost per sample: cppctl's own CPU time per sample (it unwinds, symbolizes and aggregates while
recording), against the CPU time per sample of `perf report`, which does that work for perf
afterwards. Prints figures; never fails on speed.

Usage: tests/bench/bench-record.py [BUILD_DIR] [--repeat 5] [--quick]"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(argv, env=None):
    """Runs ARGV; returns (wall seconds, stdout)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = p.communicate()
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit('bench: %s failed (%d): %s' % (' '.join(argv), p.returncode, err.decode()[-2000:]))
    return wall, out.decode()


def cpu_of(argv):
    """Runs ARGV and returns (wall, its own CPU seconds including children, stdout)."""
    before = os.times()
    wall, out = run(argv)
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--repeat', type=int, default=5)
    ap.add_argument('--quick', action='store_true', help='one repetition of one configuration: a smoke test')
    a = ap.parse_args()
    cppctl = os.path.join(a.build, 'client', 'cppctl')
    workload = os.path.join(a.build, 'tests', 'workloads', 'process_db-nofp')
    perf = shutil.which('perf')
    if a.quick:
        a.repeat = 1
    configs = [
        ('cpu-time every 1 ms, dwarf', ['-e', 'cpu-time/1', '--unwind', 'dwarf'],
         ['-e', 'cpu-clock', '-c', '1000000', '--call-graph', 'dwarf,16384']),
        ('cpu-time every 1 ms, fp', ['-e', 'cpu-time/1', '--unwind', 'fp'],
         ['-e', 'cpu-clock', '-c', '1000000', '--call-graph', 'fp']),
        ('page-faults every 16, dwarf', ['-e', 'page-faults/16', '--unwind', 'dwarf'],
         ['-e', 'page-faults', '-c', '16', '--call-graph', 'dwarf,16384']),
    ]
    if a.quick:
        configs = configs[:1]
    print('machine: %s, %d CPUs; workload: %s' % (os.uname().release, os.cpu_count(), workload))
    if not perf:
        print('perf is not installed: only cppctl is measured')

    with tempfile.TemporaryDirectory() as tmp:
        db, data = os.path.join(tmp, 'b.db'), os.path.join(tmp, 'perf.data')
        print('%-30s %9s %9s %9s %9s %9s %8s' % ('configuration', 'plain s', 'cppctl s', 'perf s',
                                                  'cppctl +%', 'perf +%', 'ratio'))
        for name, cargs, pargs in configs:
            plain, cpp, prf, per_sample, perf_cost = [], [], [], [], []
            for _ in range(a.repeat):
                plain.append(run([workload])[0])
                for f in (db, db + '-wal', db + '-shm'):
                    if os.path.exists(f):
                        os.unlink(f)
                wall, cpu, out = cpu_of([cppctl, 'record', '-o', db] + cargs + ['--', workload])
                cpp.append(wall)
                m = re.search(r'cppctl: ([0-9.]+) s of CPU, ([0-9.]+) us a sample', out)
                if m:
                    per_sample.append(float(m.group(2)))
                if perf:
                    wall, cpu_rec, _ = cpu_of([perf, 'record', '-q', '-o', data] + pargs + ['--', workload])
                    prf.append(wall)
                    _, cpu_rep, rep = cpu_of([perf, 'report', '-i', data, '--stdio', '--children'])
                    perf_samples = sum(int(x) for x in re.findall(r'^# Samples: (\d+)', rep, re.M))
                    if perf_samples:
                        perf_cost.append(1e6 * cpu_rep / perf_samples)
            p, c = statistics.median(plain), statistics.median(cpp)
            slow_c = 100 * (c / p - 1)
            if prf:
                f = statistics.median(prf)
                slow_p = 100 * (f / p - 1)
                ratio = slow_c / slow_p if slow_p > 0 else float('nan')
                print('%-30s %9.3f %9.3f %9.3f %9.1f %9.1f %8.2f' % (name, p, c, f, slow_c, slow_p, ratio))
            else:
                print('%-30s %9.3f %9.3f %9s %9.1f' % (name, p, c, '-', slow_c))
            if per_sample:
                line = '    cppctl CPU per sample (recording, unwinding, symbolizing, storing): %.1f us' % \
                    statistics.median(per_sample)
                if perf_cost:
                    line += '; perf report CPU per sample: %.1f us' % statistics.median(perf_cost)
                print(line)


if __name__ == '__main__':
    main()
