#!/usr/bin/env python3
"""cppd's resident memory by sampling rate, under one mixed load, to state its bound per rate.

The load keeps a 2-CPU machine busy with what makes the daemon hold memory: a fork/exit loop
(processes and their address spaces), process_db in a loop (page faults, a stack per call
path), manythreads in a loop (50 threads at once, 5 ms each) and pingpong (context switches).
cppd runs at each rate in turn (its defaults, the load test's, and every event sampled) for
SECONDS each; printed: its resident memory each second, the peak and the end, and at the peak
where it goes (the heap, other anonymous memory such as the record queue, and files mapped:
binaries and the debug information read to name frames) with what the daemon held then.
Never fails.

Usage: sudo tests/bench/bench-daemon-memory.py [BUILD_DIR] [--seconds 120] [--quick]"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'integration'))
from daemon import Daemon  # noqa: E402

RATES = ['cpu-time/10, page-faults/256, context-switches/64',   # the defaults
         'cpu-time/1, page-faults/64, context-switches/16',     # test-load.py's
         'cpu-time/1, page-faults/1, context-switches/1']       # every event sampled


def breakdown(pid):
    """Resident KiB of PID by kind of mapping: heap, other anonymous memory, files."""
    out = {'heap': 0, 'anonymous': 0, 'files': 0}
    kind = None
    for line in open('/proc/%d/smaps' % pid):
        f = line.split()
        if re.match(r'^[0-9a-f]+-[0-9a-f]+ ', line):
            name = f[5] if len(f) > 5 else ''
            kind = 'heap' if name == '[heap]' else 'files' if name.startswith('/') else 'anonymous'
        elif f[0] == 'Rss:':
            out[kind] += int(f[1])
    return out


def load(workloads):
    """The mixed load, each part a process group of its own (killed whole)."""
    loops = ['while :; do /bin/true; done',
             'while :; do %s/process_db-nofp > /dev/null; done' % workloads,
             'while :; do %s/manythreads-nofp 50 5 2 > /dev/null; done' % workloads,
             'while :; do %s/pingpong-fp 2000 > /dev/null 2>&1; done' % workloads]
    return [subprocess.Popen(['sh', '-c', loop], start_new_session=True) for loop in loops]


def measure(cppd, workloads, rate, seconds):
    tmp = tempfile.mkdtemp(prefix='bench-memory-')
    d = Daemon(cppd, tmp, 'memory', rate, flush=5, bucket='60s')
    procs = []
    try:
        if not d.ready():
            print('# %s: the daemon did not start:\n%s' % (rate, d.log_text()[-2000:]))
            return None
        procs = load(workloads)
        sizes, peak, at_peak = [], 0, None
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(1)
            rss = d.rss_kib()
            sizes.append(rss)
            if rss > peak:
                peak = rss
                st = d.status_lines()
                at_peak = (breakdown(d.pid), st.get('state', {}), st.get('daemon', {}))
        print('# %s: RSS each second (MiB): %s' % (rate, ' '.join('%.0f' % (s / 1024) for s in sizes)))
        return peak, sizes[-1], at_peak
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--seconds', type=int, default=120)
    ap.add_argument('--quick', action='store_true', help='10 s at the defaults: a smoke test')
    a = ap.parse_args()
    if os.geteuid() != 0:
        print('bench-daemon-memory: needs root for system-wide perf events; skipped')
        return
    cppd = os.path.join(a.build, 'daemon', 'cppd')
    workloads = os.path.join(a.build, 'tests', 'workloads')
    rates = RATES[:1] if a.quick else RATES
    seconds = 10 if a.quick else a.seconds
    rows = []
    for rate in rates:
        r = measure(cppd, workloads, rate, seconds)
        if r:
            rows.append((rate, r))
    print('%-50s %9s %9s %9s %9s %9s %10s %10s %9s' % ('rate', 'peak MiB', 'end MiB', 'heap', 'anon', 'files',
                                                       'processes', 'threads', 'samples/s'))
    for rate, (peak, last, (parts, state, daemon)) in rows:
        print('%-50s %9.1f %9.1f %9.1f %9.1f %9.1f %10s %10s %9s'
              % (rate, peak / 1024, last / 1024, parts['heap'] / 1024, parts['anonymous'] / 1024,
                 parts['files'] / 1024, state.get('live_processes', '?'), state.get('live_threads', '?'),
                 daemon.get('samples_per_second', '?')))


if __name__ == '__main__':
    main()
