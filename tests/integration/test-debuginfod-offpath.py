#!/usr/bin/env python3
"""Collection never goes to the network for debug information: with DEBUGINFOD_URLS naming a
server here that takes 3 s to answer anything (it counts what it gets), cppctl record and cppd
ask it nothing, lose no sample, and cppd's descriptors do not grow with the processes it sees.
The workloads are stripped copies, which have no debug information on this machine: exactly
what a libdwfl left to itself would fetch. A split copy (.gnu_debuglink) is named from its debug
file all the same. Needs root (system-wide perf events); TAP output.

Usage: test-debuginfod-offpath.py CPPD CPPCTL WORKLOADS_DIR

What is asserted, and why it is robust: the server's count is exact (a fetch is a request, and
the test makes none itself); record runs two stripped programs, so fetching would cost 6 s, and
its wall time is only asserted to stay within 3 s of the same record without the variable;
cppd's sockets are counted after a flush, once its control connection has closed (waited for,
with a deadline), and the files it holds open, which grow with the distinct binaries the whole
machine runs, are only counted for the program run 1,000 times."""
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from daemon import Daemon, store_query
from tap import done, ok, skip_all

cppd, cppctl, workloads = sys.argv[1:4]
ANSWER_S = 3.0          # the stand-in server's delay before every answer
PROCESSES = 1000        # short processes run under the daemon
AT_ONCE = 4
BURN_MS = 10            # each one's CPU time: 5 samples at cpu-time/2, none for 1 in 150 (e^-5)
FD_SLACK = 20           # non-file descriptors cppd may open over the run (it needs none)


class SlowDebuginfod:
    """An HTTP server on a free loopback port that answers 404 to everything after ANSWER_S
    seconds, and keeps the paths it was asked for."""

    def __init__(self):
        requests = self.requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                requests.append(self.path)
                time.sleep(ANSWER_S)
                self.send_response(404)
                self.send_header('Content-Length', '0')
                self.end_headers()

            do_HEAD = do_GET

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.server.daemon_threads = True
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def functions(db):
    p = run([cppctl, 'functions', '--db', db, '-r', 'cpu-time', '-t', '0', '--json'])
    if p.returncode not in (0, 3):
        raise RuntimeError('cppctl functions failed: %s' % p.stderr)
    j = json.loads(p.stdout)
    return {' '.join(e['path']): e['fraction'] for e in j['entries']}, j['lost']


def timed_record(db, command, env):
    start = time.monotonic()
    p = run([cppctl, 'record', '-q', '--db', db, '-e', 'cpu-time', '--'] + command, env=env)
    return p, time.monotonic() - start


def test_record(tmp, server, env_for, plain, stripped, short, linked):
    # Two stripped programs, one after the other: without debug information here, each would
    # cost a fetch (a request, and 3 s of waiting that the programs' own run hardly overlaps).
    both = ['sh', '-c', '"$0" 12 10 && "$1" 100', stripped, short]
    asked = len(server.requests)
    p0, t0 = timed_record(os.path.join(tmp, 'plain.db'), both, plain)
    p1, t1 = timed_record(os.path.join(tmp, 'url.db'), both, env_for('record'))
    if not ok(p0.returncode == 0 and p1.returncode == 0, 'record two stripped programs, with and without '
              'DEBUGINFOD_URLS', p0.stderr + p1.stderr):
        return
    _, lost = functions(os.path.join(tmp, 'url.db'))
    ok(server.requests[asked:] == [], 'with DEBUGINFOD_URLS set, record asks the server nothing',
       server.requests[asked:])
    ok(t1 < t0 + ANSWER_S, 'and takes %.1f s, %.1f s without the variable (two fetches would cost %.0f s)'
       % (t1, t0, 2 * ANSWER_S))
    ok(lost == 0, 'no sample lost (%d)' % lost)

    db = os.path.join(tmp, 'linked.db')
    asked = len(server.requests)
    p, _ = timed_record(db, [linked, '12', '10'], env_for('linked'))
    if ok(p.returncode == 0, 'record a workload whose symbols are in a file its .gnu_debuglink names', p.stderr):
        fn, _ = functions(db)
        ok(fn.get('recurse', 0) >= 0.5 and fn.get('burn', 0) >= 0.9,
           'its static functions are named from that file (recurse %.2f, burn %.2f)'
           % (fn.get('recurse', 0), fn.get('burn', 0)), sorted(fn)[:20])
    ok(server.requests[asked:] == [], 'and the server got no request', server.requests[asked:])


def descriptors(pid):
    """PID's open descriptors: (how many, sockets, those other than files, {file: how many})."""
    n = sockets = special = 0
    files = {}
    fd_dir = '/proc/%d/fd' % pid
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue            # closed meanwhile
        n += 1
        if target.startswith('socket:'):
            sockets += 1
        if not target.startswith('/') or target.startswith('/memfd:'):
            special += 1
        else:
            files[target] = files.get(target, 0) + 1
    return n, sockets, special, files


def settled_descriptors(pid, sockets_before, timeout=10):
    """PID's descriptors once its sockets are back to SOCKETS_BEFORE (a control connection
    closes when the daemon reads our hang-up), or as they are at TIMEOUT."""
    end = time.monotonic() + timeout
    while True:
        fds = descriptors(pid)
        if fds[1] <= sockets_before or time.monotonic() > end:
            return fds
        time.sleep(0.05)


def churn(program, n, at_once):
    """Runs PROGRAM N times, AT_ONCE at a time; returns how many exited 0."""
    running, good = [], 0
    for _ in range(n):
        if len(running) >= at_once:
            good += running.pop(0).wait() == 0
        running.append(subprocess.Popen([program, str(BURN_MS)]))
    return good + sum(p.wait() == 0 for p in running)


def caught_up(d, program, want, timeout=60):
    """Flushes D until WANT processes of PROGRAM are stored (a flush stores what cppd has
    handled: the last ones' samples may still be queued) or TIMEOUT passes. Returns the last
    flush's reply and how many are stored."""
    end = time.monotonic() + timeout
    while True:
        try:
            reply = d.request('flush\n', timeout=60).strip()
        except OSError as e:    # a cppd waiting on the server falls minutes behind
            return 'no answer in 60 s (%s)' % e, 0
        stored = store_query(d.store, 'SELECT count(DISTINCT pid) FROM process WHERE exe = ?', (program,))[0][0]
        if reply != 'ok' or stored >= want or time.monotonic() > end:
            return reply, stored
        time.sleep(0.2)


def test_daemon(tmp, server, short, env):
    """cppd started with ENV over PROCESSES short processes: the variable set, cppd must not wait
    on the server; set or not, it must not make libdw's debuginfod client, whose socketpair each
    module would hold."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)      # what Daemon starts cppd with
    try:
        # Every process on the machine is sampled, not only ours, and a loaded machine's other
        # jobs would make cppd lose samples of its own accord (the sanitizer build's DWARF
        # unwinding of every compiler there lost 6%): half the default rate, frame-pointer
        # stacks (every frame's module is loaded all the same, which is what is tested), the
        # daemon tests' rings and queue, and a raised priority, so that a sample lost is one
        # that waiting cost (waiting on a socket, which no priority shortens).
        d = Daemon(cppd, tmp, name='daemon-url' if 'DEBUGINFOD_URLS' in env else 'daemon-plain',
                   resources='cpu-time/2', extra='unwind = fp\nring_size = 4M\nqueue_size = 64M\n',
                   wrapper=('nice', '-n', '-10'))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    how = 'with DEBUGINFOD_URLS' if 'DEBUGINFOD_URLS' in env else 'without DEBUGINFOD_URLS'
    asked = len(server.requests)
    try:
        if not ok(d.ready(), 'cppd starts %s in its environment' % how, d.log_text()[-2000:]):
            return
        before = descriptors(d.pid)
        modules_before = int(d.status_lines()['daemon']['modules'])
        good = churn(short, PROCESSES, AT_ONCE)
        ok(good == PROCESSES, '%d short processes of a stripped program ran beside it' % good)
        reply, stored = caught_up(d, short, 0.9 * PROCESSES)
        ok(server.requests[asked:] == [], 'cppd asked the server nothing', server.requests[asked:][:10])
        if not ok(reply == 'ok', 'cppd answers a flush after them', reply):
            return
        after = settled_descriptors(d.pid, before[1])
        st = d.status_lines()
        ok(stored >= 0.9 * PROCESSES, 'cppd followed them: %d of the %d stored' % (stored, PROCESSES),
           st.get('daemon'))
        lost = int(st['resource:cpu-time']['lost'])
        ok(lost == 0, 'no sample lost (%d of %s)' % (lost, st['resource:cpu-time']['samples']))
        print('# descriptors before and after: %d and %d (%d and %d modules loaded); sockets %d and %d'
              % (before[0], after[0], modules_before, int(st['daemon']['modules']), before[1], after[1]))
        ok(after[1] == before[1], 'no socket opened: %d before, %d after' % (before[1], after[1]))
        ok(after[2] <= before[2] + FD_SLACK, 'descriptors other than files do not grow with the '
           'processes: %d before, %d after' % (before[2], after[2]))
        # Files held open grow with the distinct binaries that ran (every process on the machine
        # is profiled, not only ours), never with the processes: the program run 1,000 times is
        # one module, its file open twice (cppd's descriptor and libdwfl's).
        ok(after[3].get(short, 0) <= 2, 'the program run %d times is held open %d times' %
           (PROCESSES, after[3].get(short, 0)), sorted(after[3].items(), key=lambda kv: -kv[1])[:10])
    finally:
        d.stop()


def main():
    if os.geteuid() != 0:
        skip_all('needs root: system-wide perf events')
    tmp = tempfile.mkdtemp()
    server = SlowDebuginfod()
    plain = {k: v for k, v in os.environ.items() if not k.startswith('DEBUGINFOD_')}

    def env_for(what):
        """The environment naming the server, with a client cache of WHAT's own: a miss cached
        by one part must not spare another its request. cppctl record names what it stored as
        addresses from the server once sampling is over (test-late-names.py checks that):
        turned off here, where what is checked is that sampling itself asks nothing."""
        return dict(plain, DEBUGINFOD_URLS=server.url, DEBUGINFOD_CACHE_PATH=os.path.join(tmp, 'cache-' + what),
                    CPPD_NO_LATE_NAMES='1')

    try:
        stripped = os.path.join(tmp, 'recursive-stripped')
        short = os.path.join(tmp, 'shortlived-stripped')
        linked = os.path.join(tmp, 'recursive-linked')
        for exe, out in (('recursive-nofp', stripped), ('shortlived-nofp', short)):
            p = run(['strip', '--strip-all', '-o', out, os.path.join(workloads, exe)])
            if p.returncode != 0:
                skip_all('cannot strip a workload (binutils): %s' % p.stderr.strip())
        p = run([os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'workloads', 'make-debuglink'),
                 os.path.join(workloads, 'recursive-nofp'), linked])
        if p.returncode != 0:
            skip_all('cannot split a workload\'s debug information (binutils): %s' % p.stderr.strip())
        test_record(tmp, server, env_for, plain, stripped, short, linked)
        test_daemon(tmp, server, short, plain)
        test_daemon(tmp, server, short, env_for('daemon'))
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return done()


sys.exit(main())
