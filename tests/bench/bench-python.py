#!/usr/bin/env python3
"""Python frames: what reading them costs per sample, for BENCHMARKS.md.

A CPython (/usr/bin/python3) spins for SECONDS at the bottom of a call chain D frames deep (D = 1,
10, 30, 64, 200: past the walker's bound of 64, the outermost cut), recorded with `cppctl record
-e cpu-time/1`, ROUNDS times with Python frames and as many with --no-python, interleaved.
Printed per depth, medians over the rounds: the kernel's time to read a sample's Python frames
(the walker times itself: record's summary line), the share of samples that had them, and
cppctl's own CPU time per sample with and without (naming frames is user space's part).

Prints figures; never fails. Usage: sudo tests/bench/bench-python.py [BUILD_DIR] [--rounds N]
[--seconds S] [--quick]"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

SCRIPT = r'''
import sys, time
sys.setrecursionlimit(100000)
def spin(end):
    s = 0
    while time.time() < end:
        for i in range(1000): s += i
def down(d, end):
    if d <= 1:
        return spin(end)
    return down(d - 1, end)
down(int(sys.argv[1]), time.time() + float(sys.argv[2]))
'''


def one(cppctl, script, depth, seconds, python):
    """One recording: {walk_us, share, cppctl_us} from record's summary, or None."""
    with tempfile.TemporaryDirectory() as d:
        argv = [cppctl, 'record', '--db', os.path.join(d, 'r.db'), '-e', 'cpu-time/1'] + \
            ([] if python else ['--no-python']) + ['--', '/usr/bin/python3', script, str(depth), str(seconds)]
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
    m = re.search(r'cpu-time\s+(\d+) samples', out)
    c = re.search(r'cppctl: [\d.]+ s of CPU, ([\d.]+) us a sample', out)
    p = re.search(r'frames in (\d+) samples.*?([\d.]+) us a walk in the kernel', out)
    if not m or not c:
        print('# no summary: %s' % out[-500:])
        return None
    samples = int(m.group(1))
    return {'walk_us': float(p.group(2)) if p else 0.0, 'share': int(p.group(1)) / samples if p and samples else 0.0,
            'cppctl_us': float(c.group(1))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--seconds', type=float, default=2.0)
    ap.add_argument('--quick', action='store_true')
    a = ap.parse_args()
    if os.geteuid() != 0:
        print('needs root (a CPU clock for every task, BPF)')
        return 0
    if not os.path.exists('/usr/bin/python3'):
        print('no /usr/bin/python3')
        return 0
    if a.quick:
        a.rounds, a.seconds = 1, 0.5
    cppctl = os.path.join(a.build, 'client', 'cppctl')
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, 'deep.py')
        with open(script, 'w') as f:
            f.write(SCRIPT)
        print('depth | kernel: reading the Python frames, per sample | samples with them | '
              'cppctl CPU per sample, with / without')
        for depth in (1, 10, 30, 64, 200):
            res = {True: [], False: []}
            for _ in range(a.rounds):
                for python in (True, False):
                    r = one(cppctl, script, depth, a.seconds, python)
                    if r:
                        res[python].append(r)
            if not res[True] or not res[False]:
                continue
            print('%5d | %6.2f us | %5.1f%% | %6.1f / %6.1f us' % (
                depth, statistics.median(r['walk_us'] for r in res[True]),
                100 * statistics.median(r['share'] for r in res[True]),
                statistics.median(r['cppctl_us'] for r in res[True]),
                statistics.median(r['cppctl_us'] for r in res[False])))
            sys.stdout.flush()
    print('machine: Linux %s, %d CPUs; load average %.1f before, %.1f after; %d rounds of %.1f s' %
          (os.uname().release, os.cpu_count(), load, os.getloadavg()[0], a.rounds, a.seconds))
    return 0


if __name__ == '__main__':
    sys.exit(main())
