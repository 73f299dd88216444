#!/usr/bin/env python3
"""Security properties of the daemon: the files it makes have safe modes whatever the
umask, and the control socket's rules hold for real unprivileged users, in and out of the
configured group (daemon/control.c's table, schemas/protocol.md). test-daemon.py checks the
basic refusals; this covers the group, sessions, detach, flush and reload. Needs root; TAP.

Usage: test-security.py CPPD CPPCTL WORKLOADS_DIR DATA_DIR"""
import grp
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.parse

from daemon import Daemon, run
from tap import done, ok, skip_all

cppd, cppctl, workloads, data = sys.argv[1:5]
NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--inh-caps=-all']
GROUP = 'users'

# One request line as the calling user, the reply on stdout: cppctl has no command for flush
# and reload.
RAW = '''import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\\n")
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
sys.stdout.write(data.decode())
'''


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def modes(tmp):
    """What the daemon and cppctl create, under umask 0."""
    lib = os.path.join(tmp, 'lib', 'cppd')
    os.makedirs(os.path.dirname(lib))
    d = Daemon(cppd, tmp, 'modes', store=os.path.join(lib, 'cppd.db'), umask=0)
    try:
        if not ok(d.ready(), 'a daemon under umask 0', d.log_text()):
            return
        w = subprocess.Popen([os.path.join(workloads, 'recursive-nofp'), '12', '10'])
        w.wait()
        ok(d.request('flush\n').strip() == 'ok', 'it flushes')
        ok(mode(lib) == 0o750, 'the store\'s directory it made is 0750 (%o)' % mode(lib))
        for suffix in ('', '-wal', '-shm'):
            path = d.store + suffix
            ok(os.path.exists(path) and mode(path) == 0o640, 'cppd.db%s is 0640 (%o)'
               % (suffix, mode(path) if os.path.exists(path) else 0))
        # The socket is open to all: each request is judged by the peer's credentials.
        ok(stat.S_ISSOCK(os.stat(d.sock).st_mode) and mode(d.sock) == 0o666,
           'the control socket is 0666, every request checked by SO_PEERCRED (%o)' % mode(d.sock))
    finally:
        d.stop()
    old = os.umask(0)
    try:
        path = os.path.join(tmp, 'import.db')
        p = run([cppctl, 'import', '--folded', os.path.join(data, 'process_db.folded'), '-r', 'cpu-time', '--db', path])
    finally:
        os.umask(old)
    ok(p.returncode == 0 and mode(path) == 0o640, 'a store cppctl makes under umask 0 is 0640 (%o)' % mode(path),
       p.stderr)
    ok(all(not os.path.exists(path + s) or mode(path + s) == 0o640 for s in ('-wal', '-shm')),
       'and so is anything beside it')


def control(tmp):
    """Who may do what on the control socket."""
    gid = grp.getgrnam(GROUP).gr_gid
    member = ['setpriv', '--reuid=65534', '--regid=65534', '--groups=%d' % gid, '--inh-caps=-all']
    d = Daemon(cppd, tmp, 'ctl', group=GROUP)
    procs = []
    try:
        if not ok(d.ready(), 'a daemon whose group is %s' % GROUP, d.log_text()):
            return
        # A root process and a root session on it, long enough for the checks below.
        mine = subprocess.Popen([os.path.join(workloads, 'recursive-nofp'), '12', '100000'])
        procs.append(mine)
        session = subprocess.Popen([cppctl, 'attach', str(mine.pid), '--duration', '30', '--socket', d.sock, '-q'],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(session)
        sid = None
        for _ in range(100):
            m = re.search(r'^session id=(\d+)', d.request('sessions\n'), re.M)
            if m:
                sid = m.group(1)
                break
            time.sleep(0.05)
        if not ok(sid is not None, 'root starts a session'):
            return

        def raw(who, line):
            p = run(who + [sys.executable, '-c', RAW, d.sock, line])
            return urllib.parse.unquote(p.stdout) + p.stderr   # values are %XX-escaped

        # Outside the group.
        p = run(NOBODY + [cppctl, 'status', '--socket', d.sock])
        ok(p.returncode == 1 and 'status is for root and members of group %s' % GROUP in p.stderr,
           'a user outside the group may not see status', p.stderr)
        ok(raw(NOBODY, 'flush').startswith('error errno=EACCES'), 'nor ask for a flush')
        ok(raw(NOBODY, 'sessions').strip() == 'ok', 'sees no session of another user')
        reply = raw(NOBODY, 'detach id=%s' % sid)
        ok(reply.startswith('error errno=EACCES') and 'belongs to another user' in reply,
           'may not end root\'s session', reply)
        p = run(NOBODY + [cppctl, 'attach', str(mine.pid), '--duration', '0.2', '--socket', d.sock])
        ok(p.returncode == 1 and 'belongs to another user' in p.stderr, 'nor attach to root\'s process', p.stderr)
        ok(raw(NOBODY, 'reload').startswith('error errno=EACCES'), 'nor reload the daemon')

        # In the group: may query, not act on what is not theirs.
        p = run(member + [cppctl, 'status', '--socket', d.sock])
        ok(p.returncode == 0 and 'cpu-time' in p.stdout, 'a member of %s may see status' % GROUP, p.stderr)
        ok(raw(member, 'flush').strip() == 'ok', 'and ask for a flush')
        ok(('session id=%s ' % sid) in raw(member, 'sessions'), 'and sees every session')
        reply = raw(member, 'detach id=%s' % sid)
        ok(reply.startswith('error errno=EACCES'), 'but may not end root\'s session', reply)
        p = run(member + [cppctl, 'attach', '--unit', 'cron.service', '--duration', '0.2', '--socket', d.sock])
        ok(p.returncode == 1 and 'only root may profile a unit' in p.stderr, 'nor profile a unit', p.stderr)
        ok(raw(member, 'reload').startswith('error errno=EACCES'), 'nor reload the daemon')
        p = run(member + [cppctl, 'attach', str(mine.pid), '--duration', '0.2', '--socket', d.sock])
        ok(p.returncode == 1 and 'belongs to another user' in p.stderr, 'nor attach to root\'s process', p.stderr)
        ok(('session id=%s ' % sid) in d.request('sessions\n'), 'root\'s session is still there')
    finally:
        for q in procs:
            if q.poll() is None:
                q.kill()
                q.wait()
        d.stop(signal.SIGKILL)


def main():
    if os.geteuid() != 0:
        skip_all('needs root: the daemon, and setpriv to become another user')
    if shutil.which('setpriv') is None:
        skip_all('setpriv (util-linux) is not installed')
    tmp = tempfile.mkdtemp(prefix='cppd-security-')
    os.chmod(tmp, 0o755)
    try:
        modes(tmp)
        control(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(done())


if __name__ == '__main__':
    main()
