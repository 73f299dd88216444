#!/usr/bin/env python3
"""Overhead of profiling, cppctl record against perf record, in one run on one machine.

For each configuration the workload runs REPEAT times unprofiled, under `cppctl record` and under
`perf record` with the same event, period and unwinding, interleaved so that drifts in machine
speed hit all three alike. The workload's own wall time is measured (tests/bench/timed), not the
profiler's setup and teardown around it; the medians give each profiler's slowdown of the
program and their ratio. Then the cost of a sample: cppctl's CPU time per sample (it unwinds,
symbolizes and aggregates while recording) against the CPU time per sample of perf record plus
`perf report`, which does that work for perf afterwards. Prints figures; never fails on speed.

Usage: tests/bench/bench-record.py [BUILD_DIR] [--repeat 5] [--quick]"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfcheck import working_perf  # noqa: E402


def cpu_run(argv):
    """Runs ARGV; returns (CPU seconds of it and its children, stdout)."""
    before = os.times()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    after = os.times()
    if p.returncode != 0:
        sys.exit('bench: %s failed (%d): %s' % (' '.join(argv), p.returncode, p.stderr.decode()[-2000:]))
    return (after.children_user - before.children_user) + (after.children_system - before.children_system), \
        p.stdout.decode()


def samples_of_perf(data):
    """The samples in perf.data: perf report abbreviates counts ("3K"), perf script does not."""
    out = subprocess.run(['perf', 'script', '-i', data, '-F', 'tid'], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL).stdout
    return out.count(b'\n')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--repeat', type=int, default=5)
    ap.add_argument('--quick', action='store_true', help='one short repetition: a smoke test')
    a = ap.parse_args()
    if os.geteuid() != 0:
        print('bench-record: needs root for perf events; skipped')
        return
    cppctl = os.path.join(a.build, 'client', 'cppctl')
    timed = os.path.join(a.build, 'tests', 'bench', 'timed')
    wl = os.path.join(a.build, 'tests', 'workloads')
    perf = working_perf()
    # Each configuration has a short and a long run of one workload: overheads are measured on
    # the long one, and the cost of a sample is the difference in profiler CPU time between the
    # two over the difference in samples, so that fixed costs (loading libc's debug information:
    # ~0.1 s) do not count as per-sample costs.
    rec = os.path.join(wl, 'recursive-nofp')
    pdb = os.path.join(wl, 'process_db-nofp')
    configs = [
        ('cpu-time 1 ms, dwarf', [rec, '12', '40'], [rec, '12', '200'],
         ['-e', 'cpu-time/1', '--unwind', 'dwarf'], ['-e', 'cpu-clock', '-c', '1000000', '--call-graph', 'dwarf,16384']),
        ('cpu-time 1 ms, fp', [rec, '12', '40'], [rec, '12', '200'],
         ['-e', 'cpu-time/1', '--unwind', 'fp'], ['-e', 'cpu-clock', '-c', '1000000', '--call-graph', 'fp']),
        ('page-faults/4, dwarf', [pdb, '64000'], [pdb, '512000'],
         ['-e', 'page-faults/4', '--unwind', 'dwarf'], ['-e', 'page-faults', '-c', '4', '--call-graph', 'dwarf,16384']),
    ]
    if a.quick:
        a.repeat = 1
        configs = [(n, [s[0], '12', '5'], [l[0], '12', '10'], c, p) for n, s, l, c, p in configs[:1]]
    print('machine: Linux %s, %d CPUs; perf: %s' % (os.uname().release, os.cpu_count(), perf or 'not installed'))

    with tempfile.TemporaryDirectory() as tmp:
        db, data, t = os.path.join(tmp, 'b.db'), os.path.join(tmp, 'perf.data'), os.path.join(tmp, 't')

        def timed_run(prefix, work):
            cpu, out = cpu_run(prefix + [timed, t] + work)
            return float(open(t).read()), cpu, out

        def cppctl_run(cargs, work):
            for f in (db, db + '-wal', db + '-shm'):
                if os.path.exists(f):
                    os.unlink(f)
            wall, cpu, out = timed_run([cppctl, 'record', '--db', db] + cargs + ['--'], work)
            samples = sum(int(x) for x in re.findall(r'^  \S+\s+(\d+) samples', out, re.M))
            return wall, cpu - wall, samples       # the workload is single-threaded: its CPU ~ wall

        def perf_run(pargs, work):
            # The same ring size as cppctl's (8 MiB a CPU): perf's default drops DWARF bursts.
            wall, cpu_rec, _ = timed_run([perf, 'record', '-q', '-m', '8M', '-o', data] + pargs + ['--'], work)
            cpu_rep, _ = cpu_run([perf, 'report', '-i', data, '--stdio', '--children'])
            return wall, cpu_rec - wall + cpu_rep, samples_of_perf(data)

        print('%-22s %8s %8s %8s %9s %8s %7s %11s %11s' % (
            'configuration', 'plain s', 'cppctl s', 'perf s', 'cppctl +%', 'perf +%', 'ratio',
            'cppctl us', 'perf us'))
        for name, short, long, cargs, pargs in configs:
            plain, cpp, prf, cost_c, cost_p = [], [], [], [], []
            for _ in range(a.repeat):
                plain.append(timed_run([], long)[0])
                w0, c0, n0 = cppctl_run(cargs, short)
                w1, c1, n1 = cppctl_run(cargs, long)
                cpp.append(w1)
                if n1 > n0:
                    cost_c.append(1e6 * (c1 - c0) / (n1 - n0))
                if perf:
                    w0, c0, n0 = perf_run(pargs, short)
                    w1, c1, n1 = perf_run(pargs, long)
                    prf.append(w1)
                    if n1 > n0:
                        cost_p.append(1e6 * (c1 - c0) / (n1 - n0))
            p, c = statistics.median(plain), statistics.median(cpp)
            sc = 100 * (c / p - 1)
            f = statistics.median(prf) if prf else float('nan')
            sp = 100 * (f / p - 1) if prf else float('nan')
            ratio = sc / sp if prf and sp > 0.5 else float('nan')
            print('%-22s %8.3f %8.3f %8.3f %9.1f %8.1f %7.2f %11.1f %11.1f' % (
                name, p, c, f, sc, sp, ratio, statistics.median(cost_c) if cost_c else float('nan'),
                statistics.median(cost_p) if cost_p else float('nan')))
    print("plain/cppctl/perf s: the workload's own wall time, median of %d; +%%: its slowdown; ratio: cppctl's\n"
          "slowdown over perf's (nan when perf's is within noise). us: profiler CPU time per additional sample\n"
          "(cppctl: recording, unwinding, symbolizing, aggregating, storing; perf: perf record plus perf report)."
          % a.repeat)


if __name__ == '__main__':
    main()
