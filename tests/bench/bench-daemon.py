#!/usr/bin/env python3
"""The daemon on a busy machine, beside perf record -a with the same events, in one run.

A workload loads every CPU with CPU time, page faults and system calls (recursive, process_db
and reader from tests/workloads, side by side). It runs REPEAT times each: unprofiled; while cppd
profiles the machine at its default settings; under `perf record -a` with the same events,
periods, DWARF stack size and ring size. Printed: the workload's wall time and slowdown, the
profiler's CPU time during it (cppd: utime+stime of the daemon; perf: perf record's, then
perf report's to get the same profiles), and cppd's resident memory. Never fails on speed.

Usage: sudo tests/bench/bench-daemon.py [BUILD_DIR] [--repeat 3] [--quick]"""
import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perfcheck import working_perf  # noqa: E402


def cpu_of_pid(pid):
    """utime + stime of process PID, all threads, in seconds."""
    fields = open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def rss_kib(pid):
    for line in open('/proc/%d/status' % pid):
        if line.startswith('VmRSS:'):
            return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--quick', action='store_true', help='one short repetition: a smoke test')
    ap.add_argument('--perf-limit', type=int, default=600,
                    help='seconds the workload may take under perf record before everything is stopped (its '
                    'slowdown is then at least that)')
    ap.add_argument('--report-limit', type=int, default=600,
                    help="seconds perf report may take per repetition before it is stopped (its CPU time is "
                    "then at least that)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print('bench-daemon: needs root for system-wide perf events; skipped')
        return
    wl = os.path.join(a.build, 'tests', 'workloads')
    timed = os.path.join(a.build, 'tests', 'bench', 'timed')
    cppd = os.path.join(a.build, 'daemon', 'cppd')
    perf = working_perf()
    rounds = 2 if a.quick else 8
    if a.quick:
        a.repeat = 1
    ncpu = os.cpu_count()
    # One CPU-bound job per CPU, each alternating recursion, a page-faulting sort and reads.
    job = ('i=0; while [ $i -lt %d ]; do %s/recursive-nofp 12 20; %s/process_db-nofp 64000; '
           '%s/reader-nofp 16384 4096; i=$((i+1)); done' % (rounds, wl, wl, wl))
    work = ['sh', '-c', ' & '.join(['(%s)' % job] * ncpu) + ' & wait']

    with tempfile.TemporaryDirectory() as tmp:
        t = os.path.join(tmp, 't')

        def run_work(prefix=(), limit=None):
            """Runs the workload (under PREFIX); returns its wall time and the CPU time of
            everything started (the workload, and perf with it). Past LIMIT seconds everything
            started is killed and the CPU time is None; so is the wall time if the workload had
            not finished (perf record may take long after it, reading build ids)."""
            if os.path.exists(t):
                os.unlink(t)
            before = os.times()
            p = subprocess.Popen(list(prefix) + [timed, t] + work, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
            try:
                p.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                return (float(open(t).read()) if os.path.exists(t) else None), None
            if p.returncode != 0:
                sys.exit('bench-daemon: the workload failed (%d)' % p.returncode)
            after = os.times()
            return float(open(t).read()), (after.children_user - before.children_user +
                                           after.children_system - before.children_system)

        plain, with_cppd, with_perf = [], [], []
        cppd_cpu, cppd_rss, perf_cpu, report_cpu = [], [], [], []
        report_stopped = perf_stopped = unfinished = 0
        conf = os.path.join(tmp, 'cppd.conf')
        with open(conf, 'w') as f:
            f.write('[store]\npath = %s/cppd.db\n[control]\nsocket = %s/cppd.sock\n' % (tmp, tmp))
        notify = os.path.join(tmp, 'notify')
        plain_cpu = []
        for i in range(a.repeat):
            wall, cpu = run_work()
            plain.append(wall)
            plain_cpu.append(cpu)

            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(notify)
            sock.settimeout(30)
            d = subprocess.Popen([cppd, '-c', conf], env=dict(os.environ, NOTIFY_SOCKET=notify),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while b'READY=1' not in sock.recv(4096):
                pass
            time.sleep(1)
            c0 = cpu_of_pid(d.pid)
            with_cppd.append(run_work()[0])
            cppd_cpu.append(cpu_of_pid(d.pid) - c0)
            cppd_rss.append(rss_kib(d.pid))
            d.send_signal(signal.SIGTERM)
            d.wait()
            sock.close()
            os.unlink(notify)
            for f in ('cppd.db', 'cppd.db-wal', 'cppd.db-shm'):
                if os.path.exists(os.path.join(tmp, f)):
                    os.unlink(os.path.join(tmp, f))

            if perf:
                data = os.path.join(tmp, 'perf.data')
                wall, cpu = run_work([perf, 'record', '-q', '-a', '-m', '1M', '-o', data,
                                      '-e', 'cpu-clock', '-c', '10000000', '-e', 'page-faults', '-c', '256',
                                      '-e', 'context-switches', '-c', '64', '--call-graph', 'dwarf,8192', '--'],
                                     limit=a.perf_limit)
                if cpu is None:
                    perf_stopped += 1
                    with_perf.append(wall if wall is not None else a.perf_limit)
                    unfinished += wall is None
                    if os.path.exists(data):
                        os.unlink(data)
                    continue
                with_perf.append(wall)
                perf_cpu.append(max(cpu - plain_cpu[-1], 0))     # perf's own: beyond the workload's
                before = os.times()
                try:
                    subprocess.run([perf, 'report', '-i', data, '--stdio', '--children'], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, timeout=a.report_limit)
                except subprocess.TimeoutExpired:
                    report_stopped += 1
                after = os.times()
                report_cpu.append(after.children_user - before.children_user + after.children_system -
                                  before.children_system)
                os.unlink(data)

        p = statistics.median(plain)
        c = statistics.median(with_cppd)
        print('machine: Linux %s, %d CPUs; workload: %d jobs of recursive, process_db and reader, %d rounds'
              % (os.uname().release, ncpu, ncpu, rounds))
        print('%-34s %10s %10s' % ('', 'cppd', 'perf -a'))
        print('%-34s %10.3f' % ('workload unprofiled, s', p))
        if with_perf:
            f = statistics.median(with_perf)
            at_least = '>=' if unfinished * 2 >= len(with_perf) else ''
            print('%-34s %10.3f %10s' % ('workload profiled, s', c, '%s%.3f' % (at_least, f)))
            print('%-34s %9.1f%% %9s%%' % ('slowdown', 100 * (c / p - 1), '%s%.1f' % (at_least, 100 * (f / p - 1))))
            print('%-34s %10.2f %10s' % ('profiler CPU while it ran, s', statistics.median(cppd_cpu),
                                          '%.2f' % statistics.median(perf_cpu) if perf_cpu else '-'))
            if report_cpu:
                print('%-34s %10s %10.2f%s' % ('perf report afterwards, CPU s', '-', statistics.median(report_cpu),
                                                ' (stopped at %d s in %d of %d runs: at least that)'
                                                % (a.report_limit, report_stopped, len(report_cpu))
                                                if report_stopped else ''))
            if perf_stopped:
                print('perf record was stopped at %d s (--perf-limit) in %d of %d runs, %d of them before the '
                      'workload ended (counted as %d s), the others after it (reading build ids; no perf CPU '
                      'or report for those).' % (a.perf_limit, perf_stopped, len(with_perf), unfinished,
                                                 a.perf_limit))
        else:
            print('%-34s %10.3f' % ('workload profiled, s', c))
            print('%-34s %9.1f%%' % ('slowdown', 100 * (c / p - 1)))
            print('%-34s %10.2f' % ('profiler CPU while it ran, s', statistics.median(cppd_cpu)))
        print('%-34s %10.1f' % ('cppd resident memory, MiB', statistics.median(cppd_rss) / 1024))
        print("perf -a's CPU is its process's beyond the workload's own (measured unprofiled); cppd's is the daemon's.")


if __name__ == '__main__':
    main()
