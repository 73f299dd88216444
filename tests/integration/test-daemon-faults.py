#!/usr/bin/env python3
"""The daemon's own faults, beside test-faults.py's stores and disks: a configuration
given with -c that is missing, or names a group that does not exist, stops cppd at the start
with the reason; a reload that finds the file missing, empty or wrong keeps the configuration in
use; cppctl gives up on a daemon that is stopped (kill -STOP), even once its backlog is full,
with a message that says so; and the idle task's cpu-time is stored as swapper, not as
unsymbolized [unknown], and --no-idle leaves it out of views (checked where the CPUs idle a
little while the test sleeps; test-collector-feed.c checks it everywhere). Files named in the
configuration that are FIFOs (the configuration itself, [fleet] credentials and
push_credentials) are refused at once, never waited on, and a SIGTERM ends a start that would
wait; credentials files of another user and a spool folder of another user, or that others may
write, are refused with the reason; links planted in the spool redirect no write; a full
spool disk and damaged batches are said as such in cppctl status, and the damaged files set
aside count against spool_max; a server's error page full of terminal escapes reaches the log
and cppctl status escaped, and a password in a receiver's URL is never shown; a SIGTERM at any
moment of the start ends it. Needs root
(system-wide perf events); TAP.

Usage: test-daemon-faults.py CPPD CPPCTL"""
import http.server
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
import threading
import time
import urllib.parse

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


def start_ends(conf, timeout=15):
    """Runs cppd -c CONF; if it has not exited after TIMEOUT s, sends SIGTERM and gives it TIMEOUT
    s more. Returns (exit status, or None if still running then (killed), whether it exited by
    itself, stderr)."""
    env = dict(os.environ)
    for k in ('NOTIFY_SOCKET', 'INVOCATION_ID', 'JOURNAL_STREAM', 'LISTEN_FDS', 'LISTEN_PID'):
        env.pop(k, None)
    p = subprocess.Popen([cppd, '-c', conf], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, True, err
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, False, err
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return None, False, err


def files(tmp):
    """A FIFO where a file is named hung cppd in open() before it listened, with SIGTERM
    blocked; a credentials file of another user (mode 600) was taken; a spool folder anyone
    may write was used as root."""
    d = os.path.join(tmp, 'files')
    os.mkdir(d)
    base = ('[collect]\nresources = cpu-time/10\n[store]\npath = %s/f.db\n[control]\nsocket = %s/f.sock\n'
            % (d, d))
    fifo = os.path.join(d, 'fifo')
    os.mkfifo(fifo, 0o600)
    cases = [('the configuration', None, 'Cannot read %s: not a regular file' % fifo),
             ('[fleet] credentials', '[fleet]\nurl = clickhouse://127.0.0.1:1/fleet\ncredentials = %s\n' % fifo,
              'cannot open the credentials file %s: not a regular file' % fifo),
             ('[fleet] push_credentials', '[fleet]\npyroscope = http://127.0.0.1:1\npush_interval = 60s\n'
              'push_credentials = %s\n' % fifo,
              'Refusing the push credentials %s: not a regular file' % fifo)]
    for what, extra, says in cases:
        conf = fifo if extra is None else os.path.join(d, 'fifo.conf')
        if extra is not None:
            with open(conf, 'w') as f:
                f.write(base + extra)
        status, by_itself, err = start_ends(conf)
        ok(status == 1 and by_itself and says in err,
           '%s a FIFO: refused at once, not waited on (exit 1, saying so)' % what,
           'exit %s, %s\n%s' % (status, 'by itself' if by_itself else 'after SIGTERM', err[-2000:]))
        ok(status is not None, '%s a FIFO: cppd ends, if not by itself then on SIGTERM' % what)

    # Credentials of another user: root reads them (mode 600), but that user may change them.
    secret = os.path.join(d, 'secret')
    with open(secret, 'w') as f:
        f.write('cppd\npassword\n')
    os.chmod(secret, 0o600)
    os.chown(secret, 65534, 65534)
    push_secret = os.path.join(d, 'push-secret')
    with open(push_secret, 'w') as f:
        f.write('pyroscope Authorization: Bearer t0ken\n')
    os.chmod(push_secret, 0o600)
    os.chown(push_secret, 65534, 65534)
    for what, extra, says in [
            ('[fleet] credentials', '[fleet]\nurl = clickhouse://127.0.0.1:1/fleet\ncredentials = %s\n' % secret,
             'the credentials file %s belongs to another user' % secret),
            ('[fleet] push_credentials', '[fleet]\npyroscope = http://127.0.0.1:1\npush_interval = 60s\n'
             'push_credentials = %s\n' % push_secret,
             'Refusing the push credentials %s: it belongs to another user' % push_secret)]:
        conf = os.path.join(d, 'owner.conf')
        with open(conf, 'w') as f:
            f.write(base + extra)
        status, by_itself, err = start_ends(conf)
        ok(status == 1 and says in err and 'password' not in err and 't0ken' not in err,
           '%s owned by another user (mode 600): refused, saying so' % what,
           'exit %s\n%s' % (status, err[-2000:]))

    # The spool folder: of another user, or writable by the group.
    spool = os.path.join(d, 'spool-refused')
    os.mkdir(spool, 0o700)
    conf = os.path.join(d, 'spool.conf')
    with open(conf, 'w') as f:
        f.write(base + '[fleet]\nurl = clickhouse://127.0.0.1:1/fleet\nspool = %s\n' % spool)
    for what, fix, says in [('of another user', lambda: os.chown(spool, 65534, 65534), 'it belongs to uid 65534'),
                            ('the group may write', lambda: (os.chown(spool, 0, 0), os.chmod(spool, 0o770)),
                             'group or others may write in it (mode 0770)')]:
        fix()
        status, by_itself, err = start_ends(conf)
        ok(status == 1 and 'Refusing the fleet spool %s: %s' % (spool, says) in err,
           'a spool folder %s: refused at the start, saying why' % what, 'exit %s\n%s' % (status, err[-2000:]))


def spool_links(tmp):
    """cppd wrote <spool>/.state.tmp (now .tmp-state) and the batches' temporary files through
    whatever was there, as root: a link planted at those names made it overwrite any file. The files it
    pointed to must stay as they were, and the state and batches still be written."""
    spool = os.path.join(tmp, 'spool-links')
    os.mkdir(spool, 0o700)
    target = os.path.join(tmp, 'precious')
    with open(target, 'w') as f:
        f.write('precious\n')
    os.symlink(target, os.path.join(spool, '.state.tmp'))
    host = re.sub(r'[^A-Za-z0-9._-]', '_', socket.gethostname())[:63]
    d = Daemon(cppd, tmp, 'links', resources='cpu-time/1', extra='\n[fleet]\nurl = clickhouse://127.0.0.1:1/fleet\n'
               'spool = %s\n' % spool)
    try:
        if not ok(d.ready(), 'a daemon shipping to a ClickHouse that is not there, bucket 1 s', d.log_text()):
            return
        # The batches of run 1 for the buckets to come: their temporary names are known.
        run_id = status(d)['daemon']['run']
        now = int(time.time())
        names = ['%012d-%s-%s.batch' % (t, run_id, host) for t in range(now + 2, now + 12)]
        for name in names:
            os.symlink(target, os.path.join(spool, '.tmp-' + name))
        # And where the state is written now, rewritten after each batch spooled (a write of it
        # may be under way: then the name is taken for a moment).
        for _ in range(100):
            try:
                os.symlink(target, os.path.join(spool, '.tmp-state'))
                break
            except FileExistsError:
                time.sleep(0.01)
        end = time.monotonic() + 60
        while time.monotonic() < end and not (os.path.exists(os.path.join(spool, names[-1])) and
                                              os.path.exists(os.path.join(spool, 'state'))):
            time.sleep(0.2)
        spooled = [n for n in names if os.path.isfile(os.path.join(spool, n))]
        ok(len(spooled) == len(names) and not any(os.path.islink(os.path.join(spool, n)) for n in spooled),
           'the batches are spooled at the names where links waited (%d of %d)' % (len(spooled), len(names)),
           sorted(os.listdir(spool)))
        state = os.path.join(spool, 'state')
        ok(os.path.isfile(state) and not os.path.islink(state) and
           open(state).read().startswith('cppd-fleet-state 2\n') and (os.stat(state).st_mode & 0o777) == 0o600,
           'the state file is written, a file of its own (0600)', os.listdir(spool))
    finally:
        d.stop()
    with open(target, 'rb') as f:
        left = f.read()
    ok(left == b'precious\n', 'the file the links pointed to is untouched', left[:300])


def busy(seconds):
    """A CPU-bound child for about SECONDS: samples in every bucket."""
    return subprocess.Popen([sys.executable, '-c', 'import time\nend = time.time() + %g\nwhile time.time() < end: pass'
                             % seconds])


def spool_faults(tmp):
    """A spool write failing with ENOSPC was logged but cppctl status said 'nothing sent yet ...
    dropped 0'; a damaged batch was counted as dropped 'because the spool was full', and its
    .bad file kept outside spool_max for ever. ClickHouse is not there (a refused port): the
    spool only fills."""
    mnt = os.path.join(tmp, 'spool-tmpfs')
    os.mkdir(mnt)
    p = run(['mount', '-t', 'tmpfs', '-o', 'size=4m,mode=0700', 'cppd-test', mnt])
    if not ok(p.returncode == 0, 'a 4 MiB tmpfs for the spool', p.stderr):
        return
    d = None
    try:
        extra = '\n[fleet]\nurl = clickhouse://127.0.0.1:1/fleet\nspool = %s\n' % mnt
        d = Daemon(cppd, tmp, 'spoolfull', resources='cpu-time/10', extra=extra)
        if not ok(d.ready(), 'a daemon spooling to the tmpfs', d.log_text()):
            return
        filler = os.path.join(mnt, 'filler')
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
        for size in (1 << 20, 4096, 1):
            try:
                while True:
                    os.write(fd, b'\0' * size)
            except OSError:
                pass
        os.close(fd)
        w = busy(3)

        def failing():
            return d.status_lines().get('fleet', {}).get('spool_error', '')
        end = time.monotonic() + 30
        while time.monotonic() < end and not failing():
            time.sleep(0.2)
        fs = d.status_lines().get('fleet', {})
        ok('the disk is full' in urllib.parse.unquote(fs.get('spool_error', '')) and
           int(fs.get('spool_error_time', 0)) > 0,
           'the spool\'s disk full: the status line says so', fs)
        out = run([cppctl, 'status', '--socket', d.sock]).stdout
        ok(re.search(r'fleet \S+: failing', out) and re.search(r'spool error .*the disk is full', out),
           'cppctl status: failing, and the spool error in words', out)
        w.wait()
        os.unlink(filler)
        end = time.monotonic() + 30
        while time.monotonic() < end and failing():
            time.sleep(0.2)
        fs = d.status_lines().get('fleet', {})
        ok(fs.get('spool_error') == '' and int(fs.get('pending', 0)) > 0 and fs.get('dropped') == '0',
           'space back: the error clears, the buckets are spooled, none dropped', fs)
        d.stop()

        # Every batch damaged on the disk: set aside and counted as damaged, not as dropped.
        batches = sorted(f for f in os.listdir(mnt) if f.endswith('.batch'))
        for f in batches:
            with open(os.path.join(mnt, f), 'r+b') as b:
                b.seek(40)
                c = b.read(1)
                b.seek(40)
                b.write(bytes([c[0] ^ 0x20]))
        d = Daemon(cppd, tmp, 'spoolfull', resources='cpu-time/10', extra=extra)
        if not ok(d.ready(), 'a daemon on %d damaged batches' % len(batches), d.log_text()):
            return
        end = time.monotonic() + 30
        while time.monotonic() < end and int(d.status_lines().get('fleet', {}).get('damaged', 0)) < len(batches):
            time.sleep(0.2)
        fs = d.status_lines().get('fleet', {})
        bad = sorted(f for f in os.listdir(mnt) if f.endswith('.batch.bad'))
        bad_bytes = sum(os.path.getsize(os.path.join(mnt, f)) for f in bad)
        ok(fs.get('damaged') == str(len(batches)) and fs.get('set_aside') == str(len(batches)) and
           fs.get('set_aside_bytes') == str(bad_bytes) and fs.get('dropped') == '0' and
           bad == [f + '.bad' for f in batches],
           'damaged batches: counted damaged (%d), set aside as .bad with their bytes, none dropped' % len(batches),
           '%s\n%s' % (fs, bad))
        out = run([cppctl, 'status', '--socket', d.sock]).stdout
        ok(re.search(r'damaged\s+%d batches .*%d set aside as \.bad' % (len(batches), len(batches)), out) and
           re.search(r'dropped\s+0 batches', out), 'cppctl status says damaged, not that the spool was full', out)
        d.stop()
        state = open(os.path.join(mnt, 'state')).read()
        ok(re.search(r'^damaged %d$' % len(batches), state, re.M), 'the count is kept in the state file', state)

        # The .bad files count against spool_max: a spool that holds them and no more makes
        # room for new batches by removing the oldest of them, not by dropping the new ones.
        extra_max = extra + 'spool_max = %d\n' % bad_bytes
        d = Daemon(cppd, tmp, 'spoolfull', resources='cpu-time/10', extra=extra_max)
        if not ok(d.ready(), 'a daemon with spool_max = the bytes set aside (%d)' % bad_bytes, d.log_text()):
            return
        w = busy(3)
        w.wait()
        # The last daemon may have left batches of other programs' samples at its stop (a busy
        # machine): the start makes room for them, new batches for themselves.
        end = time.monotonic() + 30
        while time.monotonic() < end:
            fs = d.status_lines().get('fleet', {})
            if int(fs.get('pending', 0)) > 0 and int(fs.get('set_aside', 0)) < len(bad):
                break
            time.sleep(0.2)
        fs = d.status_lines().get('fleet', {})
        left = sorted(f for f in os.listdir(mnt) if f.endswith('.batch.bad'))
        ok(int(fs.get('pending', 0)) > 0 and len(left) < len(bad) and left == bad[len(bad) - len(left):] and
           fs.get('set_aside') == str(len(left)) and
           int(fs.get('pending_bytes', 0)) + int(fs.get('set_aside_bytes', 0)) <= bad_bytes,
           'new batches take the room of the oldest .bad files (%d of %d left), within spool_max'
           % (len(left), len(bad)), '%s\n%s' % (fs, left))
        ok(fs.get('damaged') == str(len(batches)), 'the damaged count stays', fs)
    finally:
        if d:
            d.stop()
        run(['umount', mnt])


def server_bytes(tmp):
    """What a server sends (a ClickHouse error, a receiver's reply, a proxy's page) reached the
    journal and cppctl status with its control characters raw: an ESC could clear the screen of
    whoever read them. And a password in a receiver's URL was logged and shown."""
    class Evil(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get('Content-Length', 0)))
            body = b'Code: 999. \x1b[2J\x1b]0;pwned\x07 evil\n'
            self.send_response(500)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Evil)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_port
    extra = ('\n[fleet]\nurl = clickhouse://127.0.0.1:%d/fleet\nspool = %s/evil-spool\npyroscope = http://127.0.0.1:%d\n'
             'push_interval = 1s\n' % (port, tmp, port))
    d = Daemon(cppd, tmp, 'evil', resources='cpu-time/10', extra=extra)
    try:
        if not ok(d.ready(), 'a daemon shipping and pushing to a server that answers escapes', d.log_text()):
            return

        def failed():
            st = status(d)
            push = d.request('status\n')
            return st.get('fleet', {}).get('last_error') and ' error=' in push
        end = time.monotonic() + 30
        while time.monotonic() < end and not failed():
            time.sleep(0.2)
        reply = d.request('status\n')
        fleet_error = urllib.parse.unquote(status(d).get('fleet', {}).get('last_error', ''))
        push_error = urllib.parse.unquote(re.search(r'^push .* error=(\S*)', reply, re.M).group(1)
                                          if re.search(r'^push .* error=', reply, re.M) else '')
        ok('answered 500: Code: 999. \\x1b[2J\\x1b]0;pwned\\x07 evil' in fleet_error and '\x1b' not in fleet_error,
           'the status\'s ClickHouse error: escaped', fleet_error)
        ok('HTTP 500: Code: 999. \\x1b[2J\\x1b]0;pwned\\x07 evil' in push_error and '\x1b' not in push_error,
           'the status\'s push error: escaped', push_error)
        out = subprocess.run([cppctl, 'status', '--socket', d.sock], stdout=subprocess.PIPE).stdout
        ok(b'\x1b' not in out and b'\x07' not in out and out.count(b'\\x1b[2J') == 2,
           'cppctl status prints both, escaped', repr(out))
    finally:
        d.stop()
        server.shutdown()
    log = open(d.log, 'rb').read()
    ok(b'\x1b' not in log and b'\x07' not in log and b'\\x1b[2J' in log, 'and so does the log', repr(log[-3000:]))

    conf = os.path.join(tmp, 'pw.conf')
    with open(conf, 'w') as f:
        f.write('[store]\npath = %s/pw.db\n[control]\nsocket = %s/pw.sock\n[fleet]\n'
                'parca = http://ops:s3cret@127.0.0.1:7070\n' % (tmp, tmp))
    p = run([cppd, '-c', conf], timeout=30)
    ok(p.returncode == 1 and 's3cret' not in p.stderr and 'http://ops:***@127.0.0.1:7070' in p.stderr and
       'must hold no password' in p.stderr, 'a password in a receiver\'s URL: refused, shown as ops:***@', p.stderr)


def sigterm_at_start(tmp):
    """A SIGTERM at any moment of the start ends cppd: before the loop runs, each step looks for
    it; after, the loop stores and stops."""
    d = os.path.join(tmp, 'sigterm')
    os.mkdir(d)
    conf = os.path.join(d, 's.conf')
    with open(conf, 'w') as f:
        f.write('[collect]\nresources = cpu-time/10\n[store]\npath = %s/s.db\n[control]\nsocket = %s/s.sock\n'
                % (d, d))
    env = dict(os.environ)
    for k in ('NOTIFY_SOCKET', 'INVOCATION_ID', 'JOURNAL_STREAM', 'LISTEN_FDS', 'LISTEN_PID'):
        env.pop(k, None)
    results = []
    for delay in (0, 0.002, 0.01, 0.03, 0.1, 0.3, 1.0):
        p = subprocess.Popen([cppd, '-c', conf], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
        time.sleep(delay)
        p.send_signal(signal.SIGTERM)
        try:
            out, err = p.communicate(timeout=60)
            results.append((delay, p.returncode, err[-300:]))
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            results.append((delay, None, err[-300:]))
    # Killed before main() blocked it (-15), or stopped in an orderly way (0).
    ok(all(r in (0, -signal.SIGTERM) for _, r, _ in results),
       'SIGTERM at %s s into the start: cppd ends each time' % ', '.join('%g' % t for t, _, _ in results),
       results)


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
        files(tmp)
        spool_links(tmp)
        spool_faults(tmp)
        server_bytes(tmp)
        sigterm_at_start(tmp)
        reload(tmp)
        stopped(tmp)
        idle(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(done())


if __name__ == '__main__':
    main()
