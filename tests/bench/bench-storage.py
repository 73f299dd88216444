#!/usr/bin/env python3
"""Storage: bytes per sample of a store against perf.data's for the same recording, and what a
day of the daemon's default collection on a busy machine comes to (the storage target in BENCHMARKS.md).

Recordings: each configuration records one workload with cppctl record and with perf record at
the same event, period and unwinding; printed are each file's bytes (the store as it lies on disk
after cppctl exits: database and any WAL), the samples in it, bytes per sample and the ratio.

The daemon: cppd at its defaults (cpu-time/10, page-faults/256, context-switches/64, DWARF, 60 s
buckets) while every CPU is busy (recursive, process_db, reader, as in bench-daemon.py) and a
new short-lived process starts every 20 ms (a busy host's cron jobs, health checks, shells).
After a warm-up minute, the store's pages in use are taken each minute; the growth per minute,
times 1440, is a day's. Prints figures; never fails on speed or size.

Usage: sudo tests/bench/bench-storage.py [BUILD_DIR] [--minutes 5] [--quick]"""
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


def store_bytes(db):
    return sum(os.path.getsize(db + s) for s in ('', '-wal') if os.path.exists(db + s))


def perf_samples(perf, data):
    out = subprocess.run([perf, 'report', '-i', data, '--stats'], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    m = re.search(r'^\s*SAMPLE events:\s+(\d+)', out, re.M)
    return int(m.group(1)) if m else 0


def recordings(a, tmp, perf):
    wl = os.path.join(a.build, 'tests', 'workloads')
    cppctl = os.path.join(a.build, 'client', 'cppctl')
    rounds = 20 if a.quick else 400
    configs = [
        ('cpu-time 1 ms, fp', [os.path.join(wl, 'recursive-fp'), '12', str(rounds)],
         ['-e', 'cpu-time/1', '--unwind', 'fp'], ['-e', 'cpu-clock', '-c', '1000000', '-g']),
        ('cpu-time 1 ms, dwarf 8 KiB', [os.path.join(wl, 'recursive-nofp'), '12', str(rounds)],
         ['-e', 'cpu-time/1', '--unwind', 'dwarf', '--stack-size', '8192'],
         ['-e', 'cpu-clock', '-c', '1000000', '--call-graph', 'dwarf,8192']),
        # The same as the first for ten times as long: a store grows with distinct stacks and
        # time buckets, perf.data with samples.
        ('cpu-time 1 ms, fp, 10x longer', [os.path.join(wl, 'recursive-fp'), '12', str(10 * rounds)],
         ['-e', 'cpu-time/1', '--unwind', 'fp'], ['-e', 'cpu-clock', '-c', '1000000', '-g']),
        ('page-faults/4, dwarf 8 KiB', [os.path.join(wl, 'process_db-nofp'), '64000' if a.quick else '512000'],
         ['-e', 'page-faults/4', '--unwind', 'dwarf', '--stack-size', '8192'],
         ['-e', 'page-faults', '-c', '4', '--call-graph', 'dwarf,8192']),
        # The same with every frame's call site kept (--lines), for --by line.
        ('page-faults/4, dwarf, --lines', [os.path.join(wl, 'process_db-nofp'), '64000' if a.quick else '512000'],
         ['-e', 'page-faults/4', '--unwind', 'dwarf', '--stack-size', '8192', '--lines'],
         ['-e', 'page-faults', '-c', '4', '--call-graph', 'dwarf,8192']),
    ]
    sizes = {}
    print('%-28s %12s %9s %8s %12s %9s %8s %8s' % ('recording', 'store B', 'samples', 'B/smp', 'perf.data B',
                                                  'samples', 'B/smp', 'ratio'))
    for name, work, cargs, pargs in configs:
        db, data = os.path.join(tmp, 'r.db'), os.path.join(tmp, 'perf.data')
        p = subprocess.run([cppctl, 'record', '--db', db] + cargs + ['--'] + work, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        n = sum(int(x) for x in re.findall(r'^  \S+\s+(\d+) samples', p.stdout, re.M))
        size = store_bytes(db)
        subprocess.run([perf, 'record', '-q', '-m', '16M', '-o', data] + pargs + ['--'] + work,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pn, psize = perf_samples(perf, data), os.path.getsize(data)
        print('%-28s %12d %9d %8.1f %12d %9d %8.1f %7.0fx' % (name, size, n, size / max(n, 1), psize, pn,
                                                              psize / max(pn, 1),
                                                              (psize / max(pn, 1)) / (size / max(n, 1))))
        sizes[name] = (size, n, psize, pn)
        for f in (db, db + '-wal', db + '-shm', data):
            if os.path.exists(f):
                os.unlink(f)
    # What a sample costs beyond the floor (the schema's pages, which a short recording is mostly
    # made of): the growth from the short frame-pointer recording to the one ten times as long.
    (s1, n1, p1, pn1), (s10, n10, p10, pn10) = sizes['cpu-time 1 ms, fp'], sizes['cpu-time 1 ms, fp, 10x longer']
    if n10 > n1 and pn10 > pn1:
        print('10x longer: the store grew by %d bytes for %d more samples (%.2f a sample), perf.data by %.1f a sample'
              % (s10 - s1, n10 - n1, (s10 - s1) / (n10 - n1), (p10 - p1) / (pn10 - pn1)))


def daemon_day(a, tmp):
    wl = os.path.join(a.build, 'tests', 'workloads')
    cppd = os.path.join(a.build, 'daemon', 'cppd')
    # Quick (a smoke test): one 10 s window after the warm-up, scaled to a minute.
    windows, window_s = (1, 10) if a.quick else (a.minutes, 60)
    job = ('while :; do %s/recursive-nofp 12 20; %s/process_db-nofp 64000; %s/reader-nofp 16384 4096; done'
           % (wl, wl, wl))
    busy = [subprocess.Popen(['sh', '-c', job], stdout=subprocess.DEVNULL) for _ in range(os.cpu_count())]
    churn = subprocess.Popen(['sh', '-c', 'while :; do /bin/true; sleep 0.02; done'])
    d = Daemon(cppd, tmp, 'day', 'cpu-time/10, page-faults/256, context-switches/64', flush=5, bucket='60s')
    sizes = []
    try:
        if not d.ready():
            sys.exit('bench-storage: cppd did not start: ' + d.log_text()[-1000:])
        # The pages in use (the status' store_live_bytes), not the file's size: the WAL beside it
        # keeps the size it once grew to, and freed pages wait in the file for reuse.
        def live():
            return int(d.status_lines()['daemon']['store_live_bytes'])

        time.sleep(5 if a.quick else 60)        # warm-up: the first bucket holds every new stack
        sizes.append(live())
        for _ in range(windows):
            time.sleep(window_s)
            sizes.append(live())
        st = d.status_lines()
    finally:
        d.stop()
        for p in busy + [churn]:
            p.kill()
            p.wait()
    per_minute = (sizes[-1] - sizes[0]) / (windows * window_s / 60)
    print('daemon at its defaults, %d CPUs busy and a new process every 20 ms, %d windows of %d s after a warm-up:'
          % (os.cpu_count(), windows, window_s))
    print('  store in use after each window (MB): %s' % ' '.join('%.2f' % (s / 1e6) for s in sizes))
    print('  growth %.2f MB a minute: %.0f MB a day; %s processes seen' % (per_minute / 1e6, 1440 * per_minute / 1e6,
                                                                         st['daemon'].get('processes', '?')))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--minutes', type=int, default=5)
    ap.add_argument('--quick', action='store_true', help='small recordings, a one-minute daemon run')
    a = ap.parse_args()
    if os.geteuid() != 0:
        print('bench-storage: needs root for perf events; skipped')
        return
    perf = working_perf()
    print('machine: Linux %s, %d CPUs' % (os.uname().release, os.cpu_count()))
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        if perf:
            recordings(a, tmp, perf)
        daemon_day(a, tmp)


if __name__ == '__main__':
    main()
