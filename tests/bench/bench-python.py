#!/usr/bin/env python3
"""Python frames: what reading them costs per sample, for BENCHMARKS.md.

A CPython (/usr/bin/python3) spins for SECONDS at the bottom of a call chain D frames deep (D = 1,
10, 30, 64: the walker's bound, 200: cut there), recorded with `cppctl record -e cpu-time/1`, once
with Python frames (the default) and once with --no-python, interleaved, ROUNDS times each. The
kernel counts the time its programs run (kernel.bpf_stats_enabled, on for the run and restored
after): the gate's run time per kept sample, with and without the walk, is the walk's cost; beside
it, the program's own CPU time per second, the samples, and cppctl's CPU time per sample (naming
frames is user space's part).

Prints figures; never fails. Usage: sudo tests/bench/bench-python.py [BUILD_DIR] [--rounds N]
[--seconds S] [--quick]"""
import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

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


def prog_stats(pid):
    """{prog fd: (type, run_time_ns, run_cnt)} of process PID's BPF programs."""
    out = {}
    for info in glob.glob('/proc/%d/fdinfo/*' % pid):
        try:
            with open(info) as f:
                kv = dict(line.split(':', 1) for line in f if ':' in line)
        except OSError:
            continue
        if 'prog_type' in kv and 'run_time_ns' in kv:
            out[info] = (int(kv['prog_type']), int(kv['run_time_ns']), int(kv['run_cnt']))
    return out


def one(cppctl, script, depth, seconds, python):
    """Runs one recording; returns {gate_ns, gate_runs, samples, cppctl_cpu, python_samples}."""
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, 'r.db')
        argv = [cppctl, 'record', '-q', '--db', db, '-e', 'cpu-time/1'] + ([] if python else ['--no-python']) + \
            ['--', '/usr/bin/python3', script, str(depth), str(seconds)]
        before = os.times()
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        last = {}
        while p.poll() is None:
            s = prog_stats(p.pid)
            if s:
                last = s
            time.sleep(0.05)
        p.communicate()
        after = os.times()
        # The gate: the PERF_EVENT program (type 7) that ran the most.
        gates = [v for v in last.values() if v[0] == 7]
        gate = max(gates, key=lambda v: v[2]) if gates else (7, 0, 0)
        import sqlite3
        con = sqlite3.connect(db)
        samples = con.execute('SELECT sum(samples) FROM sample').fetchone()[0] or 0
        py = con.execute('SELECT sum(python_samples) FROM run_resource').fetchone()[0] or 0
        con.close()
        return dict(gate_ns=gate[1], gate_runs=gate[2], samples=samples, python_samples=py,
                    cpu=after.children_user + after.children_system - before.children_user - before.children_system)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--seconds', type=float, default=2.0)
    ap.add_argument('--quick', action='store_true')
    a = ap.parse_args()
    if os.geteuid() != 0:
        print('needs root (a CPU clock for every task, BPF statistics)')
        return 0
    if not os.path.exists('/usr/bin/python3'):
        print('no /usr/bin/python3')
        return 0
    if a.quick:
        a.rounds, a.seconds = 1, 0.5
    cppctl = os.path.join(a.build, 'client', 'cppctl')
    with open('/proc/sys/kernel/bpf_stats_enabled') as f:
        was = f.read().strip()
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, 'deep.py')
        with open(script, 'w') as f:
            f.write(SCRIPT)
        try:
            with open('/proc/sys/kernel/bpf_stats_enabled', 'w') as f:
                f.write('1')
            print('depth | walk per kept sample (gate with - without Python frames) | gate, without | '
                  'samples with Python frames | cppctl CPU per sample, with / without')
            for depth in (1, 10, 30, 64, 200):
                res = {True: [], False: []}
                for _ in range(a.rounds):
                    for python in (True, False):
                        res[python].append(one(cppctl, script, depth, a.seconds, python))

                def per_sample(r):
                    return r['gate_ns'] / r['samples'] if r['samples'] else 0.0

                with_ns = statistics.median(per_sample(r) for r in res[True])
                without_ns = statistics.median(per_sample(r) for r in res[False])
                share = statistics.median(r['python_samples'] / r['samples'] if r['samples'] else 0 for r in res[True])
                cpu_with = statistics.median(r['cpu'] / r['samples'] * 1e6 if r['samples'] else 0 for r in res[True])
                cpu_without = statistics.median(r['cpu'] / r['samples'] * 1e6 if r['samples'] else 0
                                                for r in res[False])
                print('%5d | %8.0f ns | %6.0f ns | %5.1f%% | (whole run) %.0f / %.0f us' %
                      (depth, with_ns - without_ns, without_ns, 100 * share, cpu_with, cpu_without))
                sys.stdout.flush()
        finally:
            with open('/proc/sys/kernel/bpf_stats_enabled', 'w') as f:
                f.write(was)
    return 0


if __name__ == '__main__':
    sys.exit(main())
