#!/usr/bin/env python3
"""The daemon's CPU time per sample, warm, in both unwinding modes, against perf report's on the
same samples with DWARF stacks (the collection-cost target in BENCHMARKS.md).

A workload keeps every CPU busy with CPU time, page faults and system calls (recursive,
process_db and reader from tests/workloads, side by side, a new process every few tens of ms).
cppd samples the default resources' events ten times as often as its defaults (cpu-time/1,
page-faults/64, context-switches/16: so that seconds give tens of thousands of samples), with
8 KiB stacks and DWARF unwinding, then with frame pointers; then CPU time alone, every 1 ms and
every 0.25 ms, in each mode. Each time the workload runs once to warm the daemon's caches (the
workload's libraries and their debug information are read then) and once measured: the daemon's
CPU time over that run (its threads' run time from /proc/PID/task/*/schedstat, in ns) and the
samples it counted (its status) give the cost of a sample: reading the ring, unwinding,
symbolizing and aggregating it, and storing the sums, with the work each new process and each
new address costs shared among the samples. The two CPU-time rates take the same processes and
addresses, so the difference between them divided by the difference in samples is the cost of a
sample alone ("marginal").

perf record takes the same CPU-time samples, with DWARF stacks of 8 KiB, of the same workload,
and perf report --children does with them what cppd did: its CPU time over the samples of a
recording of every round, beyond that of a recording of one round (perf report's start: kallsyms,
every DSO's symbols) is its cost of a sample; recorded every 0.25 ms too, the difference gives
its marginal cost the same way as cppd's. Prints figures; never fails on speed.

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
# CPU time four times as often, to tell the cost of a sample from that of processes and addresses.
FAST = 'event:cpu-clock/250000'


def cpu_of_pid(pid):
    """The CPU time of process PID's threads, in seconds: schedstat's run time, in ns (utime and
    stime in /proc/PID/stat count 10 ms ticks, too coarse for a tenth of a second)."""
    ns = 0
    for tid in os.listdir('/proc/%d/task' % pid):
        try:
            ns += int(open('/proc/%d/task/%s/schedstat' % (pid, tid)).read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass                # a thread that just ended
    return ns / 1e9


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
    ap.add_argument('--quick', action='store_true', help='one round each, two daemons: a smoke test')
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
        configs = (('cppd, all three, dwarf', 'dwarf', RESOURCES), ('cppd, all three, fp', 'fp', RESOURCES),
                   ('cppd, cpu-time/1, dwarf', 'dwarf', 'cpu-time/1'), ('cppd, cpu-clock 0.25 ms, dwarf', 'dwarf', FAST),
                   ('cppd, cpu-time/1, fp', 'fp', 'cpu-time/1'), ('cppd, cpu-clock 0.25 ms, fp', 'fp', FAST))
        # Quick (CI's smoke test): the two unwinders at the defaults' resources only.
        for name, unwind, resources in configs[:2] if a.quick else configs:
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

        # Warm caches, as on a host of long-running services: the same processes all along (the
        # recursive workload on every CPU, built with frame pointers for the frame-pointer run),
        # measured after they have run long enough for every address to have been seen.
        warm_s, window_s = (1, 2) if a.quick else (3, 10)
        for name, unwind, exe in (('cppd, warm, fp', 'fp', 'recursive-fp'), ('cppd, warm, dwarf', 'dwarf', 'recursive-nofp')):
            d = Daemon(cppd, tmp, 'w-' + unwind, 'cpu-time/1', flush=5, bucket='60s',
                       extra='unwind = %s\nstack_size = 8K' % unwind)
            procs = []
            try:
                if not d.ready():
                    sys.exit('bench-collect: cppd did not start: ' + d.log_text()[-1000:])
                rounds = str((warm_s + window_s + 5) * 1000 // 15)
                procs = [subprocess.Popen([os.path.join(wl, exe), '12', rounds, '5'], stdout=subprocess.DEVNULL)
                         for _ in range(os.cpu_count())]
                time.sleep(warm_s)
                c0, s0 = cpu_of_pid(d.pid), samples_of(d)
                time.sleep(window_s)
                c1, s1 = cpu_of_pid(d.pid), samples_of(d)
            finally:
                for p in procs:
                    p.kill()
                    p.wait()
                d.stop()
            rows.append((name, s1 - s0, c1 - c0, window_s))

        if perf:
            # CPU time alone: perf asks for PERF_SAMPLE_PERIOD, with which the kernel samples every
            # page fault and context switch whatever -c says (env-probe.md), so those would not be
            # the same samples. The workload's processes, not -a: cppd's are nearly all of it.
            # perf report's start (kallsyms, every DSO's symbols) is not a sample's: the cost is
            # the difference between a recording of one round and one of all of them.
            data = os.path.join(tmp, 'perf.data')
            runs = []
            for w, period in ((work_of(1), 1000000), (work, 1000000), (work, 250000)):
                subprocess.run([perf, 'record', '-q', '-m', '16M', '-o', data, '-e', 'cpu-clock', '-c', str(period),
                                '--call-graph', 'dwarf,8192', '--'] + w,
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                stats = subprocess.run([perf, 'report', '-i', data, '--stats'], stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True).stdout
                m = re.search(r'^\s*SAMPLE events:\s+(\d+)', stats, re.M)
                cpu, _ = cpu_run([perf, 'report', '-i', data, '--stdio', '--children'])
                runs.append((int(m.group(1)) if m else 0, cpu))
                if period == 1000000:
                    size = os.path.getsize(data)
            rows.append(('perf report, cpu-clock 1 ms, dwarf', runs[1][0] - runs[0][0], runs[1][1] - runs[0][1], 0))
            rows.append(('perf report, 0.25 ms, dwarf', runs[2][0] - runs[0][0], runs[2][1] - runs[0][1], 0))
            # The warm workload too: long-running processes for 1 s and for the window's length.
            runs = []
            for seconds in (1, window_s):
                rounds = str(seconds * 1000 // 15)
                w = ['sh', '-c', ' & '.join([os.path.join(wl, 'recursive-nofp') + ' 12 %s 5' % rounds] * os.cpu_count()) +
                     ' & wait']
                subprocess.run([perf, 'record', '-q', '-m', '16M', '-o', data, '-e', 'cpu-clock', '-c', '1000000',
                                '--call-graph', 'dwarf,8192', '--'] + w,
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                stats = subprocess.run([perf, 'report', '-i', data, '--stats'], stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True).stdout
                m = re.search(r'^\s*SAMPLE events:\s+(\d+)', stats, re.M)
                cpu, _ = cpu_run([perf, 'report', '-i', data, '--stdio', '--children'])
                runs.append((int(m.group(1)) if m else 0, cpu))
            rows.append(('perf report, warm, dwarf', runs[1][0] - runs[0][0], runs[1][1] - runs[0][1], 0))

    print('%-32s %10s %10s %12s' % ('', 'samples', 'CPU s', 'us/sample'))
    for name, n, cpu, _ in rows:
        print('%-32s %10d %10.2f %12.2f' % (name, n, cpu, 1e6 * cpu / n if n else float('nan')))
    per = {name: 1e6 * cpu / n for name, n, cpu, _ in rows if n}
    if 'cppd, cpu-time/1, dwarf' in per and 'perf report, cpu-clock 1 ms, dwarf' in per:
        print('perf report per sample over cppd per sample, the same CPU-time samples with DWARF stacks: %.1fx '
              '(perf.data: %.0f MB)' % (per['perf report, cpu-clock 1 ms, dwarf'] / per['cppd, cpu-time/1, dwarf'],
                                       size / 1e6))
    if 'cppd, warm, dwarf' in per and 'perf report, warm, dwarf' in per:
        print('warm (long-running processes): perf report per sample over cppd per sample, DWARF: %.1fx; '
              'cppd with frame pointers: %.2f us per sample'
              % (per['perf report, warm, dwarf'] / per['cppd, warm, dwarf'], per.get('cppd, warm, fp', float('nan'))))
    marginal = {}
    for label, lo, hi in (('cppd, frame pointers', 'cppd, cpu-time/1, fp', 'cppd, cpu-clock 0.25 ms, fp'),
                          ('cppd, dwarf', 'cppd, cpu-time/1, dwarf', 'cppd, cpu-clock 0.25 ms, dwarf'),
                          ('perf report, dwarf', 'perf report, cpu-clock 1 ms, dwarf', 'perf report, 0.25 ms, dwarf')):
        r = {name: (n, cpu) for name, n, cpu, _ in rows}
        if lo in r and hi in r and r[hi][0] > r[lo][0]:
            marginal[label] = 1e6 * (r[hi][1] - r[lo][1]) / (r[hi][0] - r[lo][0])
            print('marginal, %s: %.2f us per sample (CPU time beyond the 1 ms run over its %d more samples)'
                  % (label, marginal[label], r[hi][0] - r[lo][0]))
    if 'cppd, dwarf' in marginal and 'perf report, dwarf' in marginal and marginal['cppd, dwarf'] > 0:
        print('marginal, perf report per sample over cppd per sample, DWARF: %.1fx'
              % (marginal['perf report, dwarf'] / marginal['cppd, dwarf']))
    print("cppd: the daemon's own CPU time over a measured run after a warm-up run, per sample it counted\n"
          "(warm: over %d s of long-running processes after %d s);\n"
          "perf: perf report's CPU time over the samples of a recording of all rounds beyond one of one round\n"
          "(its start, reading symbols, not counted; nor perf record's own CPU)." % (window_s, warm_s))


if __name__ == '__main__':
    main()
