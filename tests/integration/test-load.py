#!/usr/bin/env python3
"""The daemon under load: a fork/exit storm of thousands of processes a second, and a
process with hundreds of threads. The daemon's resident memory is sampled every second and
printed; it must stay below a stated bound, and what it follows must shrink back once the
processes are gone. Needs root; TAP output.

Usage: test-load.py CPPD CPPCTL WORKLOADS_DIR
Environment: CPPD_LOAD_SECONDS, the storm's length (20 s; 10 under
AddressSanitizer, whose run follows the plain one in tests/run)."""
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from daemon import Daemon, ended_runs, run_hits, store_query
from tap import done, ok, skip_all

cppd, cppctl, workloads = sys.argv[1:4]
BOUND_MIB = 256         # the daemon's resident memory under load, with a generous margin
FLUSH = 0.5


def asan():
    return 'libasan' in subprocess.run(['ldd', cppd], stdout=subprocess.PIPE, text=True).stdout


SECONDS = int(os.environ.get('CPPD_LOAD_SECONDS', '10' if asan() else '20'))


class RssWatch:
    """The daemon's RSS every INTERVAL seconds, in a thread, until stop()."""

    def __init__(self, d, interval=1.0):
        self.d, self.interval, self.sizes = d, interval, []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.watch)
        self.thread.start()

    def watch(self):
        while not self.stopping.wait(self.interval):
            self.sizes.append(self.d.rss_kib())

    def stop(self):
        self.stopping.set()
        self.thread.join()
        return self.sizes


def memory_ok(what, sizes):
    print('# %s: daemon RSS each second (MiB): %s' % (what, ' '.join('%.0f' % (s / 1024) for s in sizes)))
    if asan():
        ok(True, '# SKIP %s: memory bound: AddressSanitizer keeps freed memory in quarantine' % what)
    else:
        ok(max(sizes) < BOUND_MIB * 1024, '%s: the daemon stays below %d MiB (at most %.0f MiB)'
           % (what, BOUND_MIB, max(sizes) / 1024))


def storm(seconds):
    """Runs the fork storm workload for SECONDS; returns (its exit status, processes, processes a second)."""
    p = subprocess.run([os.path.join(workloads, 'forkstorm-nofp'), str(int(seconds * 1000)), '8'],
                       stdout=subprocess.PIPE, text=True)
    n, rate = (int(float(x)) for x in p.stdout.split())
    return p.returncode, n, rate


def forgotten(d, st, key, base):
    """The daemon's count KEY (live_processes, live_threads) once within 50 of BASE, flushing every
    2 flush intervals for up to 24 tries while it is not (ST: its status now)."""
    live = int(st['state'][key])
    for _ in range(24):
        if live <= base + 50:
            break
        time.sleep(2 * FLUSH)
        d.flush_all()
        live = int(d.status_lines()['state'][key])
    return live


def fork_storm(d, unprofiled):
    st0 = d.status_lines()
    base_processes = int(st0['state']['live_processes'])
    watch = RssWatch(d)
    status, n, rate = storm(SECONDS)
    sizes = watch.stop()
    rereads = int(d.status_lines()['state']['rereads']) - int(st0['state']['rereads'])
    print('# fork storm: %d processes in %d s, %d a second (%d without cppd); %d read again from /proc'
          % (n, SECONDS, rate, unprofiled, rereads))
    # Thousands a second where the machine forks that fast (9,000-10,000 on some of these VMs,
    # under 1,000 on others, whose page tables are shadowed): the daemon must not be what slows it.
    # A sanitizer build's daemon costs what the sanitizers add (half this machine's forks, seen
    # on a VM whose forks are slow): its rate is only printed.
    want = min(1000, 0.5 * unprofiled)
    ok(status == 0 and (rate >= want or asan()), 'a fork/exit storm of %d processes a second for %d s (at least %d: '
       'half the machine\'s own rate, or 1000%s)' % (rate, SECONDS, want, '; not asked of a sanitizer build' if asan()
                                                      else ''))
    time.sleep(2 * FLUSH)
    reply = d.flush_all()
    st = d.status_lines()
    ok(reply == 'ok' and int(st['daemon']['flush_failures']) == 0, 'the daemon flushes all along', (reply, st))
    followed = int(st['daemon']['processes']) - int(st0['daemon']['processes'])
    ok(followed >= 0.9 * n, 'it followed them (%d new processes seen, %d forked)' % (followed, n))
    # Processes whose exits were still on their way at that flush go with a later one; those
    # whose exits were never seen, within the daemon's check for gone tasks (10 s).
    live = forgotten(d, st, 'live_processes', base_processes)
    ok(live <= base_processes + 50, 'and forgot them once stored: %d processes in memory, %d before'
       % (live, base_processes))
    memory_ok('fork storm', sizes)
    return sizes


def many_threads(d):
    st0 = d.status_lines()
    base_threads = int(st0['state']['live_threads'])
    cpu0 = st0['resource:cpu-time']
    threads, burn, rounds = 400, 10, 3
    watch = RssWatch(d, 0.5)
    p = subprocess.Popen([os.path.join(workloads, 'manythreads-nofp'), str(threads), str(burn), str(rounds)],
                         stdout=subprocess.PIPE, text=True)
    peak_threads = 0
    while p.poll() is None:
        peak_threads = max(peak_threads, int(d.status_lines()['state']['live_threads']))
        time.sleep(0.2)
    out = p.stdout.read()
    sizes = watch.stop()
    ok(p.returncode == 0 and int(out) == threads * rounds, '%d threads, %d at once' % (threads * rounds, threads))
    time.sleep(2 * FLUSH)
    ok(d.flush_all() == 'ok', 'a flush')
    st = d.status_lines()
    run_id = int(st['daemon']['run'])
    tids, kmax = store_query(d.store, "SELECT count(DISTINCT t.tid), max(1.0 * s.hits / s.samples) FROM sample s "
                             "JOIN thread t ON t.id = s.thread_id JOIN process p ON p.id = t.process_id "
                             "WHERE p.pid = ? AND p.run_id = ? AND s.samples > 0", (p.pid, run_id))[0]
    kmax = max(kmax or 1.0, 1.0)
    # Each thread burns BURN ms at cpu-time/1: about BURN samples. Where the daemon falls behind
    # (400 busy threads leave its reader little CPU; under AddressSanitizer it is several times
    # slower) it thins with weights, keeping a sample 1 in K, and the kernel drops samples,
    # counted, in bursts that take a thread's few samples together. So a thread is expected
    # stored with probability at least 1 - exp(-BURN / K) (K: the most its process's rows were
    # thinned by, their hits per sample), unless its samples went in the share lost; 0.8 of
    # that is a margin far below what a binomial count of 1,200 threads strays by, and far above
    # what samples lumped on a few threads would give.
    cpu = st['resource:cpu-time']
    took = int(cpu['samples']) - int(cpu0['samples'])
    lost = int(cpu['lost']) - int(cpu0['lost'])
    share_lost = lost / (took + lost) if took + lost else 0
    expected = threads * rounds * (1 - share_lost) * (1 - math.exp(-burn / kmax))
    print('# many threads: %d made, %d with samples stored, at most %d followed at once (status every 0.2 s); '
          '%d CPU-time samples taken, %d lost (%.0f%%), thinned to 1 in %.1f at most: %.0f threads expected'
          % (threads * rounds, tids, peak_threads, took, lost, 100 * share_lost, kmax, expected))
    ok(tids >= 0.8 * expected,
       'the threads\' samples are stored under each (%d threads of %d; %.0f expected with %.0f%% of samples lost '
       'and thinning to 1 in %.1f)' % (tids, threads * rounds, expected, 100 * share_lost, kmax))
    # As for the processes above: threads whose exits were still on their way at that flush (a
    # daemon behind, 60% of its samples lost on a loaded machine) go with a later one.
    live = forgotten(d, st, 'live_threads', base_threads)
    ok(live <= base_threads + 50, 'and forgot them once stored: %d threads in memory, %d before' % (live, base_threads))
    memory_ok('many threads', sizes)


def main():
    if os.geteuid() != 0:
        skip_all('needs root: system-wide perf events')
    tmp = tempfile.mkdtemp(prefix='cppd-load-')
    os.chmod(tmp, 0o755)
    d = None
    try:
        _, _, unprofiled = storm(5)       # what this machine does without cppd
        # The storm's clock is the daemon's default period, redrawn at each sample: a clock of
        # every task under 5 ms ticks ten times a sample (REDRAW_ALL_MIN_NS), 20,000 timer
        # interrupts a second on 2 CPUs at cpu-time/1, which alone halved this VM's fork rate
        # (its interrupts are slow); the fork and exit records are the daemon's part here.
        d = Daemon(cppd, tmp, 'load', 'cpu-time/10, page-faults/64, context-switches/16', flush=FLUSH)
        if not ok(d.ready(), 'the daemon starts', d.log_text()):
            return
        fork_storm(d, unprofiled)
        # The threads' few milliseconds each need the 1 ms clock: a new run.
        run0 = d.status_lines()['daemon']['run']
        d.write_conf('cpu-time/1, page-faults/64, context-switches/16')
        os.kill(d.pid, signal.SIGHUP)
        end = time.monotonic() + 30
        while d.status_lines()['daemon']['run'] == run0 and time.monotonic() < end:
            time.sleep(0.1)
        ok(d.status_lines()['resource:cpu-time']['period'] == '1', 'SIGHUP: cpu-time/1 for the threads')
        many_threads(d)
        run_id = int(d.status_lines()['daemon']['run'])
        status = d.stop()
        log = d.log_text()
        ok(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, 'SIGTERM: exits 0', log[-1500:])
        ended = [e for e in ended_runs(log) if e[0] == run_id]
        stored = [run_hits(d.store, r, res) for r, res, _, _, _ in ended]
        ok(len(ended) == 3 and all(s == e[2] for s, e in zip(stored, ended)),
           'every hit it counted is stored', (ended, stored, log[-3000:]))
    except Exception:
        # A daemon that died or stopped answering: what it said last is the first clue.
        if d:
            print('# the daemon\'s log, last 6000 bytes:\n' + '\n'.join('#   ' + l for l in d.log_text()[-6000:].splitlines()))
        raise
    finally:
        if d:
            d.stop(signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(done())


if __name__ == '__main__':
    main()
