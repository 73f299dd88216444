#!/usr/bin/env python3
"""What shipping to ClickHouse costs the daemon: cppd runs the same workload for the same time
twice, without [fleet] and shipping to a private clickhouse-server on this machine
(tests/integration/clickhouse.py), at its default resources and periods with a shorter time
bucket, so that many batches go in a short run. Printed per run: the daemon's CPU time (all
threads, and the sender thread, cppd-fleet, alone), its resident memory at the end and at its
peak, the batches sent and their bytes, and ClickHouse's own CPU time. Never fails.

Usage: sudo tests/bench/bench-fleet-ship.py [BUILD_DIR] [--seconds 60] [--bucket 10s] [--quick]"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, '..', 'integration'))
import clickhouse  # noqa: E402
from daemon import Daemon  # noqa: E402

TICK = os.sysconf('SC_CLK_TCK')


def cpu(path):
    """utime + stime in seconds from a /proc stat file."""
    fields = open(path).read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def thread_cpu(pid, name):
    for tid in os.listdir('/proc/%d/task' % pid):
        try:
            if open('/proc/%d/task/%s/comm' % (pid, tid)).read().strip() == name:
                return cpu('/proc/%d/task/%s/stat' % (pid, tid))
        except OSError:
            pass
    return 0.0


def memory(pid):
    out = {}
    for line in open('/proc/%d/status' % pid):
        k, _, v = line.partition(':')
        if k in ('VmRSS', 'VmHWM'):
            out[k] = int(v.split()[0]) / 1024
    return out


def one(build, tmp, name, seconds, bucket, ch=None):
    """Runs the workload for SECONDS under a daemon (shipping to CH if given); returns figures."""
    wl = os.path.join(build, 'tests', 'workloads')
    extra = ''
    if ch:
        extra = '\n[fleet]\nurl = %s\ncredentials = %s\n' % (ch.url(), ch.credentials)
    d = Daemon(os.path.join(build, 'daemon', 'cppd'), tmp, name,
               resources='cpu-time/10, page-faults/256, context-switches/64', flush=5, bucket=bucket, extra=extra)
    try:
        if not d.ready():
            print('bench-fleet-ship: cppd did not start:\n' + d.log_text())
            return None
        job = ('end=$(($(date +%%s) + %d)); while [ $(date +%%s) -lt $end ]; do %s/recursive-nofp 12 20; '
               '%s/process_db-nofp 64000; done' % (seconds, wl, wl))
        ch_before = cpu('/proc/%d/stat' % ch.proc.pid) if ch else 0
        start = cpu('/proc/%d/stat' % d.pid)
        subprocess.run(['sh', '-c', ' & '.join(['(%s)' % job] * os.cpu_count()) + ' & wait'],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if ch:
            # What the last bucket closed during the workload still has to go.
            end = time.monotonic() + 60
            while time.monotonic() < end and d.status_lines().get('fleet', {}).get('pending') != '0':
                time.sleep(0.2)
        st = d.status_lines()
        fig = {
            'cpu': cpu('/proc/%d/stat' % d.pid) - start,
            'sender': thread_cpu(d.pid, 'cppd-fleet'),
            'samples': int(st['daemon']['samples']),
            **memory(d.pid),
        }
        if ch:
            f = st.get('fleet', {})
            fig['sent'] = int(f.get('sent', 0))
            fig['spool_ms'] = int(f.get('spool_ms', 0))
            fig['spool_cpu_ms'] = int(f.get('spool_cpu_ms', 0))
            fig['ch_cpu'] = cpu('/proc/%d/stat' % ch.proc.pid) - ch_before
            fig['bytes'] = int(ch.query("SELECT sum(bytes) FROM system.parts WHERE database = 'fleet' AND active")
                               .strip() or 0)
        return fig
    finally:
        d.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--seconds', type=int, default=60)
    ap.add_argument('--bucket', default='10s')
    ap.add_argument('--quick', action='store_true', help='a short run: a smoke test')
    a = ap.parse_args()
    if os.geteuid() != 0:
        print('bench-fleet-ship: needs root for system-wide perf events; skipped')
        return
    if not clickhouse.installed():
        print('bench-fleet-ship: clickhouse-server is not installed; skipped')
        return
    if a.quick:
        a.seconds, a.bucket = 6, '1s'
    with tempfile.TemporaryDirectory(prefix='bench-fleet-ship-') as tmp:
        plain = one(a.build, tmp, 'plain', a.seconds, a.bucket)
        with clickhouse.ClickHouse(tmp) as ch:
            ship = one(a.build, tmp, 'ship', a.seconds, a.bucket, ch)
    if not plain or not ship:
        return
    print('%d s of %d busy jobs, cppd at its default resources, bucket %s, flush 5 s' %
          (a.seconds, os.cpu_count(), a.bucket))
    print('| | without [fleet] | shipping to ClickHouse |')
    print('| --- | --- | --- |')
    print('| samples taken | %d | %d |' % (plain['samples'], ship['samples']))
    print('| cppd CPU time, s | %.2f | %.2f |' % (plain['cpu'], ship['cpu']))
    print('| cppd CPU per 1000 samples, ms | %.1f | %.1f |' % (1e6 * plain['cpu'] / max(plain['samples'], 1),
                                                           1e6 * ship['cpu'] / max(ship['samples'], 1)))
    print('| of which the shipping thread (cppd-fleet), s | — | %.2f |' % ship['sender'])
    print('| of which building and spooling batches, s | — | %.2f |' % (ship['spool_cpu_ms'] / 1000))
    print('| the thread\'s wall time building and spooling (waits on the disk and the busy CPUs too), s | — | '
          '%.2f |' % (ship['spool_ms'] / 1000))
    print('| cppd resident at the end, MiB | %.1f | %.1f |' % (plain['VmRSS'], ship['VmRSS']))
    print('| cppd resident at its peak, MiB | %.1f | %.1f |' % (plain['VmHWM'], ship['VmHWM']))
    print('| batches sent | — | %d |' % ship['sent'])
    print('| ClickHouse parts on disk, KiB | — | %.0f |' % (ship['bytes'] / 1024))
    print('| clickhouse-server CPU time meanwhile, s | — | %.2f |' % ship['ch_cpu'])
    own = ship['sender']
    print('shipping itself (the cppd-fleet thread): %.2f s of CPU over %d s, %.3f%% of one CPU; per batch %.1f ms '
          'of CPU building and spooling (%.1f ms wall), %.1f ms sending; the main loop only notes closed buckets'
          % (own, a.seconds, 100 * own / a.seconds, ship['spool_cpu_ms'] / max(ship['sent'], 1),
             ship['spool_ms'] / max(ship['sent'], 1),
             (1000 * ship['sender'] - ship['spool_cpu_ms']) / max(ship['sent'], 1)))


if __name__ == '__main__':
    main()
