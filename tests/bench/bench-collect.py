#!/usr/bin/env python3
"""The daemon's CPU time per sample, warm, in both unwinding modes, against perf report's on the
same samples with DWARF stacks (issue 7's collection cost).

A workload keeps every CPU busy with CPU time, page faults and system calls (recursive,
process_db and reader from tests/workloads, side by side). cppd samples the default resources'
events ten times as often as its defaults (cpu-time/1, page-faults/64, context-switches/16: so
that seconds give tens of thousands of samples), with 8 KiB stacks and DWARF unwinding, then with
frame pointers, then CPU time alone; each time the workload runs once to warm the
daemon's caches (the workload's libraries and their debug information are read then) and once
measured: the daemon's utime+stime from /proc and the samples it counted (its status) over that
run give the cost of a sample: reading the ring, unwinding, symbolizing and aggregating it, and
storing the sums. perf record takes the same CPU-time samples, with DWARF stacks of 8 KiB, of
the same workload, and perf report --children does with them what cppd did: its CPU time over
the samples in perf.data, past what a recording of one round costs it, is its cost of a sample.
Prints figures; never fails on speed.

Usage: sudo tests/bench/bench-collect.py [BUILD_DIR] [--rounds 20] [--quick]"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, '..', 'integration'))
from daemon import Daemon  # noqa: E402
from perfcheck import working_perf  # noqa: E402

# The defaults' events, sampled ten times as often, so that a run of seconds has tens of
# thousands of samples to divide by.
RESOURCES = 'cpu-time/1, page-faults/64, context-switches/16'


def cpu_of_pid(pid):
    """utime + stime of process PID, all threads, in seconds."""
    fields = open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def cpu_run(argv):
    """Runs ARGV; returns its CPU seconds (and its children's) and its stdout."""
    before = os.times()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    after = os.times()
    return after.children_user - before.children_user + after.children_system - before.children_system, p.stdout


def samples_of(d):
    return sum(int(v.get('samples', 0)) for k, v in d.status_lines().items() if k.startswith('resource:'))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--rounds', type=int, default=20)
    ap.add_argument('--quick', action='store_true', help='one round each: a smoke test')
    a = ap.parse_args()
    if os.geteuid() != 0:
        print('bench-collect: needs root for system-wide perf events; skipped')
        return
    if a.quick:
        a.rounds = 1
    wl = os.path.join(a.build, 'tests', 'workloads')
    cppd = os.path.join(a.build, 'daemon', 'cppd')
    perf = working_perf()

    def work_of(rounds):
        job = ('i=0; while [ $i -lt %d ]; do %s/recursive-nofp 12 20; %s/process_db-nofp 64000; '
               '%s/reader-nofp 16384 4096; i=$((i+1)); done' % (rounds, wl, wl, wl))
        return ['sh', '-c', ' & '.join(['(%s)' % job] * os.cpu_count()) + ' & wait']

    work = work_of(a.rounds)
    print('machine: Linux %s, %d CPUs; workload: %d jobs of recursive, process_db and reader, %d rounds'
          % (os.uname().release, os.cpu_count(), os.cpu_count(), a.rounds))

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        for name, unwind, resources in (('cppd, all three, dwarf', 'dwarf', RESOURCES),
                                        ('cppd, all three, fp', 'fp', RESOURCES),
                                        ('cppd, cpu-time/1, dwarf', 'dwarf', 'cpu-time/1')):
            d = Daemon(cppd, tmp, 'c-' + unwind, resources, flush=5, bucket='60s',
                       extra='unwind = %s\nstack_size = 8K' % unwind)
            try:
                if not d.ready():
                    sys.exit('bench-collect: cppd did not start: ' + d.log_text()[-1000:])
                subprocess.run(work, check=True, stdout=subprocess.DEVNULL)        # warms the caches
                c0, s0 = cpu_of_pid(d.pid), samples_of(d)
                t0 = time.monotonic()
                subprocess.run(work, check=True, stdout=subprocess.DEVNULL)
                wall = time.monotonic() - t0
                c1, s1 = cpu_of_pid(d.pid), samples_of(d)
            finally:
                d.stop()
            rows.append((name, s1 - s0, c1 - c0, wall))

        if perf:
            # CPU time alone: perf asks for PERF_SAMPLE_PERIOD, with which the kernel samples every
            # page fault and context switch whatever -c says (env-probe.md), so those would not be
            # the same samples. The workload's processes, not -a: cppd's are nearly all of it.
            # perf report's start (kallsyms, every DSO's symbols) is not a sample's: the cost is
            # the difference between a recording of one round and one of all of them.
            data = os.path.join(tmp, 'perf.data')
            runs = []
            for w in (work_of(1), work):
                subprocess.run([perf, 'record', '-q', '-m', '16M', '-o', data, '-e', 'cpu-clock', '-c', '1000000',
                                '--call-graph', 'dwarf,8192', '--'] + w,
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                stats = subprocess.run([perf, 'report', '-i', data, '--stats'], stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True).stdout
                m = re.search(r'^\s*SAMPLE events:\s+(\d+)', stats, re.M)
                cpu, _ = cpu_run([perf, 'report', '-i', data, '--stdio', '--children'])
                runs.append((int(m.group(1)) if m else 0, cpu))
                size = os.path.getsize(data)
            rows.append(('perf report, cpu-clock 1 ms, dwarf', runs[1][0] - runs[0][0], runs[1][1] - runs[0][1], 0))

    print('%-32s %10s %10s %12s' % ('', 'samples', 'CPU s', 'us/sample'))
    for name, n, cpu, _ in rows:
        print('%-32s %10d %10.2f %12.2f' % (name, n, cpu, 1e6 * cpu / n if n else float('nan')))
    per = {name: 1e6 * cpu / n for name, n, cpu, _ in rows if n}
    if 'cppd, cpu-time/1, dwarf' in per and 'perf report, cpu-clock 1 ms, dwarf' in per:
        print('perf report per sample over cppd per sample, the same CPU-time samples with DWARF stacks: %.1fx '
              '(perf.data: %.0f MB)' % (per['perf report, cpu-clock 1 ms, dwarf'] / per['cppd, cpu-time/1, dwarf'],
                                       size / 1e6))
    print("cppd: the daemon's own CPU time over a measured run after a warm-up run, per sample it counted;\n"
          "perf: perf report's CPU time over the samples of a recording of all rounds beyond one of one round\n"
          "(its start, reading symbols, not counted; nor perf record's own CPU).")


if __name__ == '__main__':
    main()
