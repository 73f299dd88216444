#!/usr/bin/env python3
"""The daemon's own faults, beside test-faults.py's stores and disks: a configuration
given with -c that is missing, or names a group that does not exist, stops cppd at the start
with the reason; a reload that finds the file missing, empty or wrong keeps the configuration in
use; cppctl gives up on a daemon that is stopped (kill -STOP), even once its backlog is full,
with a message that says so; and the idle task's cpu-time is stored as swapper, not as
unsymbolized [unknown], and --no-idle leaves it out of views (checked where the CPUs idle a
little while the test sleeps; test-collector-feed.c checks it everywhere). Needs root
(system-wide perf events); TAP.

Usage: test-daemon-faults.py CPPD CPPCTL"""
import json
import errno
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from daemon import Daemon, run, store_query
from tap import done, ok, skip_all

cppd, cppctl = sys.argv[1:3]


def start_fails(tmp, name, text):
    """Runs cppd -c on a file of TEXT (None: no file); returns (exit status or None if it kept
    running, stderr)."""
    conf = os.path.join(tmp, name + '.conf')
    if text is not None:
        with open(conf, 'w') as f:
            f.write(text)
    env = dict(os.environ)
    for k in ('NOTIFY_SOCKET', 'INVOCATION_ID', 'JOURNAL_STREAM', 'LISTEN_FDS', 'LISTEN_PID'):
        env.pop(k, None)
    p = subprocess.Popen([cppd, '-c', conf], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = p.communicate(timeout=30)
        return p.returncode, err
    except subprocess.TimeoutExpired:
        # It runs: on the defaults, or on a configuration it should have refused.
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate()
        return None, err


def start(tmp):
    """What is wrong with an explicit configuration stops the start."""
    conf = os.path.join(tmp, 'missing.conf')
    status, err = start_fails(tmp, 'missing', None)
    ok(status == 1 and '%s does not exist' % conf in err,
       'cppd -c with a file that does not exist: exit 1, saying so (not the defaults)', '%s\n%s' % (status, err))
    base = ('[collect]\nresources = cpu-time/10\n[store]\npath = %s/g.db\n[control]\nsocket = %s/g.sock\n'
            % (tmp, tmp))
    status, err = start_fails(tmp, 'group', base + 'group = nosuchgroup\n')
    ok(status == 1 and re.search(r'group\.conf:7: no group .nosuchgroup.', err),
       '[control] group = nosuchgroup: exit 1, with its line number', '%s\n%s' % (status, err))


def status(d):
    """The daemon's status lines, or {} if it does not answer (it died)."""
    try:
        return d.status_lines()
    except OSError:
        return {}


def reload(tmp):
    """A reload keeps the configuration in use when the file is gone, empty (being
    rewritten) or names no group; a good file is then taken."""
    d = Daemon(cppd, tmp, 'reload', resources='cpu-time/3')
    try:
        if not ok(d.ready(), 'a daemon on cpu-time/3', d.log_text()):
            return
        run_id = status(d)['daemon']['run']

        def kept(what):
            before = len(re.findall('the configuration in use stays', d.log_text()))
            os.kill(d.pid, signal.SIGHUP)
            end = time.monotonic() + 30
            while time.monotonic() < end and not d.exited():
                if len(re.findall('the configuration in use stays', d.log_text())) > before:
                    break
                time.sleep(0.05)
            st = status(d)
            ok(st.get('daemon', {}).get('run') == run_id and st['daemon']['store'] == d.store and
               st.get('resource:cpu-time', {}).get('period') == '3' and 'resource:page-faults' not in st,
               'SIGHUP with %s: the same run, store and resources' % what, d.log_text())

        saved = d.conf + '.saved'
        os.rename(d.conf, saved)
        kept('the file gone')
        ok('does not exist (being replaced?); the configuration in use stays' in d.log_text(),
           'and the log says why')
        open(d.conf, 'w').close()
        kept('the file empty')
        ok('is empty (being written?); the configuration in use stays' in d.log_text(), 'and the log says why')
        d.group = 'nosuchgroup'
        d.write_conf('cpu-time/5')
        kept('group = nosuchgroup')
        ok(re.search(r'reload\.conf:\d+: no group .nosuchgroup.*the configuration in use stays', d.log_text()),
           'and the log names the line')
        d.group = ''
        d.write_conf('cpu-time/5')
        os.kill(d.pid, signal.SIGHUP)
        end = time.monotonic() + 30
        while time.monotonic() < end and 'Configuration reloaded' not in d.log_text():
            time.sleep(0.05)
        st = status(d)
        ok(st.get('resource:cpu-time', {}).get('period') == '5' and st['daemon']['run'] != run_id,
           'a good file is then taken: cpu-time/5 in a new run', d.log_text())
    finally:
        d.stop(signal.SIGKILL)


def stopped(tmp):
    """The weak spot: cppctl status waited for a stopped daemon (and blocked for ever in
    connect() once its backlog was full)."""
    d = Daemon(cppd, tmp, 'stopped')
    socks = []
    try:
        if not ok(d.ready(), 'a daemon', d.log_text()):
            return
        os.kill(d.pid, signal.SIGSTOP)
        try:
            t = time.monotonic()
            try:
                p = run([cppctl, 'status', '--socket', d.sock], timeout=120)
                took = time.monotonic() - t
                ok(p.returncode == 1 and 'cppd did not answer within 10 s' in p.stderr and took < 60,
                   'cppctl status on a stopped daemon gives up, saying why (%.1f s)' % took, p.stderr)
            except subprocess.TimeoutExpired:
                ok(False, 'cppctl status on a stopped daemon gives up')
            # Fill the listen backlog (somaxconn, 4096 on Debian 12), as a client storm would.
            backlog = int(open('/proc/sys/net/core/somaxconn').read())
            want = backlog + 256
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            if soft < want:
                resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
            full, why = False, 'no file descriptors for %d connections (RLIMIT_NOFILE %d)' % (want, hard)
            try:
                while len(socks) < want:
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    socks.append(s)
                    s.setblocking(False)
                    s.connect(d.sock)
            except BlockingIOError:
                socks.pop().close()
                full = True
            except OSError as e:
                why = str(e)
            if not full:
                ok(True, 'with its backlog full too # SKIP %s' % why)
            else:
                ok(True, 'the stopped daemon\'s backlog fills (%d connections)' % len(socks))
                t = time.monotonic()
                try:
                    p = run([cppctl, 'status', '--socket', d.sock], timeout=120)
                    took = time.monotonic() - t
                    ok(p.returncode == 1 and 'cppd did not answer within 10 s' in p.stderr and took < 60,
                       'with its backlog full too (%.1f s)' % took, p.stderr)
                except subprocess.TimeoutExpired:
                    ok(False, 'with its backlog full too: cppctl status still waits after 120 s')
        finally:
            for s in socks:
                s.close()
            socks = []
            os.kill(d.pid, signal.SIGCONT)
        # What waited for it (cppctl's requests, then gone) gets replies written to closed peers;
        # the backlog drains as it accepts them.
        end = time.monotonic() + 60
        while True:
            try:
                reply = d.request('status\n', timeout=60)
                break
            except OSError as e:
                reply = str(e)
                if e.errno != errno.EAGAIN or time.monotonic() > end:
                    break
                time.sleep(0.1)
        ok(reply.startswith('daemon ') and not d.exited(), 'continued, the daemon answers again',
           'wait status %s\n%s\n%s' % (d.status, reply[:200], d.log_text()))
    finally:
        for s in socks:
            s.close()
        d.stop(signal.SIGKILL)


def idle(tmp):
    """The idle task, pid 0, was stored with no name and an empty stack, and shown as
    [unknown] (99% of an idle host's cpu-time, read as symbolization gone wrong)."""
    d = Daemon(cppd, tmp, 'idle')
    try:
        if not ok(d.ready(), 'a daemon on cpu-time/1', d.log_text()):
            return
        rows = []
        end = time.monotonic() + 10
        while time.monotonic() < end and not rows:
            time.sleep(1)       # the CPUs idle, unless the machine is busy with other work
            try:
                flushed = d.flush_all() == 'ok'
            except OSError as e:
                ok(False, 'the daemon flushes', 'wait status %s: %s\n%s' % (d.exited() and d.status, e,
                                                                          d.log_text()))
                return
            rows = flushed and store_query(d.store, 'SELECT DISTINCT p.comm FROM process p JOIN thread t '
                                           'ON t.process_id = p.id JOIN sample s ON s.thread_id = t.id '
                                           'WHERE p.pid = 0') or []
        if not rows:
            ok(True, 'the idle task # SKIP no CPU was idle for 10 s: the machine is busy')
            return
        ok(rows == [('swapper',)], 'the idle task is stored as pid 0 named swapper', rows)

        def functions(*extra):
            p = run([cppctl, 'functions', '--db', d.store, '-r', 'cpu-time', '-t', '0', '--json'] + list(extra))
            return p, (json.loads(p.stdout) if p.returncode == 0 else {})

        d.stop()
        p, shown = functions()
        idle_hits = sum(e['hits'] for e in shown.get('entries', []) if e['path'] == ['swapper'])
        ok(idle_hits > 0 and not any(e['path'] == ['[unknown]'] and e['hits'] == idle_hits
                                     for e in shown['entries']),
           'views show it as swapper (%d hits), by default as perf does' % idle_hits, p.stdout[:600] + p.stderr)
        unknown = store_query(d.store, "SELECT count(*) FROM function WHERE name = 'swapper' AND unknown = 0")
        ok(unknown == [(1,)], 'its frame is a known name, not counted unsymbolized', unknown)
        p, dropped = functions('--no-idle')
        ok(p.returncode == 0 and dropped['hits'] == shown['hits'] - idle_hits and
           not any(e['path'] == ['swapper'] for e in dropped['entries']),
           '--no-idle leaves its %d hits out' % idle_hits, p.stdout[:600] + p.stderr)
    finally:
        d.stop(signal.SIGKILL)


def main():
    if os.geteuid() != 0:
        skip_all('needs root: system-wide perf events')
    tmp = tempfile.mkdtemp(prefix='cppd-daemon-faults-')
    try:
        start(tmp)
        reload(tmp)
        stopped(tmp)
        idle(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(done())


if __name__ == '__main__':
    main()
