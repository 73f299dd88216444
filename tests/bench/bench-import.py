#!/usr/bin/env python3
"""Analysis of existing recordings: cppctl import + cppctl functions against perf report
--children --stdio, on the same perf.data, recorded here by perf with DWARF stacks (the costly
case for both: every sample is unwound) or frame pointers. Prints figures; never fails on speed.

The recording's size follows --seconds (CPU seconds of the workload at --freq samples a second;
with DWARF stacks of 8 KiB, about 8 MB per 1000 samples): the default is ~100 MB; a 1 GB file,
the import target in BENCHMARKS.md, is --seconds 30 --freq 4000.

Usage: sudo tests/bench/bench-import.py [BUILD_DIR] [--seconds S] [--freq F] [--fp] [--quick]"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfcheck import working_perf  # noqa: E402


def timed(argv, output=None):
    """Runs ARGV; returns wall seconds, CPU seconds, max RSS MiB of that child alone (wait4: the
    children's rusage keeps the largest of every child so far, perf record's included). Its
    standard output goes to the file OUTPUT, or nowhere."""
    err = tempfile.TemporaryFile()
    out = open(output, 'w') if output else subprocess.DEVNULL
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=out, stderr=err)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    if output:
        out.close()
    if os.waitstatus_to_exitcode(status) != 0:
        err.seek(0)
        sys.exit('bench-import: %s failed: %s' % (' '.join(argv), err.read().decode()[-500:]))
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--seconds', type=float, default=3.0)
    ap.add_argument('--freq', type=int, default=4000)
    ap.add_argument('--fp', action='store_true', help='frame pointers instead of DWARF stacks')
    ap.add_argument('--quick', action='store_true', help='a smoke test: 0.3 s of workload')
    a = ap.parse_args()
    if a.quick:
        a.seconds = 0.3
    if os.geteuid() != 0:
        print('bench-import: needs root for perf events; skipped')
        return 0
    if not working_perf():
        print('bench-import: nothing to import without perf; skipped')
        return 0
    cppctl = os.path.join(a.build, 'client', 'cppctl')
    workload = os.path.join(a.build, 'tests', 'workloads', 'recursive-fp' if a.fp else 'recursive-nofp')
    rounds = max(1, int(a.seconds * 1000 / 15))     # a round is 15 ms of CPU

    with tempfile.TemporaryDirectory() as tmp:
        data, db = os.path.join(tmp, 'perf.data'), os.path.join(tmp, 'cppd.db')
        callgraph = ['-g'] if a.fp else ['--call-graph', 'dwarf,8192', '-m', '16M']
        subprocess.run(['perf', 'record', '-q', '-F', str(a.freq), '-e', 'cpu-clock', '-o', data] + callgraph +
                       [workload, '12', str(rounds)], check=True, stdout=subprocess.DEVNULL)
        size = os.path.getsize(data)
        print('machine: Linux %s, %d CPUs' % (os.uname().release, os.cpu_count()))
        print('perf.data: %.1f MB, %s stacks, recursive workload %d rounds' % (
            size / 1e6, 'frame-pointer' if a.fp else 'DWARF (8 KiB)', rounds))

        said = os.path.join(tmp, 'import.txt')
        imp = timed([cppctl, 'import', data, '--db', db], output=said)
        # "  cpu-clock   12299 samples, ...": one line per event
        samples = sum(int(m.group(1)) for m in re.finditer(r'^ +\S+ +(\d+) samples,', open(said).read(), re.M))
        fun = timed([cppctl, 'functions', '--db', db, '-r', 'cpu-clock'])
        rep = timed(['perf', 'report', '-i', data, '--children', '--stdio'])
        ours_wall, ours_cpu = imp[0] + fun[0], imp[1] + fun[1]
        print('%-40s %8s %8s %9s' % ('step', 'wall s', 'CPU s', 'RSS MiB'))
        print('%-40s %8.2f %8.2f %9.0f' % ('cppctl import', *imp))
        print('%-40s %8.2f %8.2f %9.0f' % ('cppctl functions', *fun))
        print('%-40s %8.2f %8.2f %9.0f' % ('perf report --children --stdio', *rep))
        print('import rate: %d samples in %.2f s: %.0f samples/s (%.0f per CPU second)' % (
            samples, imp[0], samples / imp[0], samples / max(imp[1], 1e-3)))
        print('ratio perf report / (cppctl import + functions): %.1fx wall, %.1fx CPU' % (
            rep[0] / ours_wall, rep[1] / ours_cpu))
        print('store: %.1f MB for %.1f MB of perf.data (1/%.0f)' % (
            os.path.getsize(db) / 1e6, size / 1e6, size / max(os.path.getsize(db), 1)))
    return 0


sys.exit(main())
