#!/usr/bin/env python3
"""What the daemon's pushes to fleet profilers cost: cppd profiles the machine at its default
resources while workloads run in UNITS cgroups named like services, and pushes every interval to
all three receivers ([fleet] pyroscope, parca, otlp) on a local HTTP server that answers 200.
Printed: profiles and bytes posted per interval, the push thread's CPU time ("cppd-push" in
/proc/PID/task) per interval and per profile, and the whole daemon's CPU time and resident
memory, with and without the pushes in the same run length. Never fails on speed.

Usage: sudo tests/bench/bench-push.py [BUILD_DIR] [--seconds 60] [--units 8] [--interval 5]
[--quick]"""
import argparse
import http.server
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'integration'))
import daemon  # noqa: E402


class Receiver:
    def __init__(self):
        self.requests, self.bytes = 0, 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get('Content-Length', '0'))
                self.rfile.read(n)
                outer.requests += 1
                outer.bytes += n
                self.send_response(200)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def cpu(path):
    fields = open(path).read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def push_thread_cpu(pid):
    for tid in os.listdir('/proc/%d/task' % pid):
        base = '/proc/%d/task/%s' % (pid, tid)
        try:
            if open(base + '/comm').read().strip() == 'cppd-push':
                return cpu(base + '/stat')
        except OSError:
            pass
    return 0.0


def rss_kib(pid):
    for line in open('/proc/%d/status' % pid):
        if line.startswith('VmRSS:'):
            return int(line.split()[1])
    return 0


def cgroup_root():
    for d in ('/sys/fs/cgroup', '/sys/fs/cgroup/unified'):
        if os.path.exists(os.path.join(d, 'cgroup.procs')) and \
                subprocess.run(['stat', '-f', '-c', '%T', d], stdout=subprocess.PIPE,
                               text=True).stdout.strip() == 'cgroup2fs':
            return d
    return None


def run_once(build, tmp, units, seconds, interval, recv, push):
    cppd = os.path.join(build, 'daemon', 'cppd')
    recursive = os.path.join(build, 'tests', 'workloads', 'recursive-nofp')
    root = cgroup_root()
    extra = '[fleet]\npush_interval = %ds\n' % interval
    if push:
        extra += 'pyroscope = %s\nparca = %s\notlp = %s\n' % (recv.url, recv.url, recv.url)
    d = daemon.Daemon(cppd, tmp, 'push' if push else 'nopush',
                      'cpu-time/10, page-faults/256, context-switches/64', flush=5, bucket='1s', extra=extra)
    procs, cgroups = [], []
    try:
        if not d.ready():
            sys.exit('cppd did not start: ' + d.log_text()[-2000:])
        for i in range(units):
            cg = os.path.join(root, 'cppd-bench-push-%d-%d.service' % (os.getpid(), i))
            os.mkdir(cg)
            cgroups.append(cg)

            def enter(cg=cg):
                with open(os.path.join(cg, 'cgroup.procs'), 'w') as f:
                    f.write(str(os.getpid()))
            procs.append(subprocess.Popen([recursive, '12', '1000000'], preexec_fn=enter))
        requests0, bytes0 = recv.requests, recv.bytes
        cpu0, push0 = cpu('/proc/%d/stat' % d.pid), push_thread_cpu(d.pid)
        time.sleep(seconds)
        cpu1, push1, rss = cpu('/proc/%d/stat' % d.pid), push_thread_cpu(d.pid), rss_kib(d.pid)
        requests, nbytes = recv.requests - requests0, recv.bytes - bytes0
    finally:
        for q in procs:
            q.kill()
            q.wait()
        d.stop()
        for cg in cgroups:
            try:
                os.rmdir(cg)
            except OSError:
                pass
    return cpu1 - cpu0, push1 - push0, rss, requests, nbytes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--seconds', type=int, default=60)
    ap.add_argument('--units', type=int, default=8)
    ap.add_argument('--interval', type=int, default=5)
    ap.add_argument('--quick', action='store_true', help='a short run: a smoke test')
    a = ap.parse_args()
    if a.quick:
        a.seconds, a.units, a.interval = 8, 2, 2
    if os.geteuid() != 0 or not cgroup_root():
        print('bench-push: needs root and a cgroup2 hierarchy; skipped')
        return 0
    recv = Receiver()
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        base = run_once(a.build, tmp, a.units, a.seconds, a.interval, recv, False)
        push = run_once(a.build, tmp, a.units, a.seconds, a.interval, recv, True)
    intervals = a.seconds / a.interval
    print('%d s, %d units busy, 3 resources, push_interval %d s, 3 receivers' % (a.seconds, a.units, a.interval))
    print('  posted: %d requests (%.1f per interval), %.1f KiB per request'
          % (push[3], push[3] / intervals, push[4] / 1024 / max(push[3], 1)))
    print('  push thread CPU: %.3f s in all, %.1f ms per interval, %.2f ms per request'
          % (push[1], push[1] * 1000 / intervals, push[1] * 1000 / max(push[3], 1)))
    print('  daemon CPU: %.2f s without pushes, %.2f s with (%+.1f%%); resident %.1f MiB without, %.1f MiB with'
          % (base[0], push[0], (push[0] - base[0]) * 100 / max(base[0], 1e-9), base[2] / 1024, push[2] / 1024))
    return 0


if __name__ == '__main__':
    sys.exit(main())
