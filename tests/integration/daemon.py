"""The real cppd for the fault, load and security tests: started with its own configuration,
store, control socket and NOTIFY_SOCKET (read all the time, as systemd does), asked over the
control socket, stopped by signal. Shared by the daemon, fault, load and security tests."""
import errno
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import threading
import time


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


class DaemonGone(OSError):
    """The daemon stopped answering, or exited, while a test talked to it: an OSError with the
    errno of the failed call, and the daemon's state and log in its message."""


class Daemon:
    """cppd with the configuration made of RESOURCES, STORE, FLUSH (seconds), BUCKET, GROUP and
    EXTRA lines of [collect]; its stdout and stderr go to NAME.log in TMP. WATCHDOG: as systemd
    with WatchdogSec=1s. WRAPPER: a command that runs cppd (valgrind and its options)."""

    def __init__(self, cppd, tmp, name='d', resources='cpu-time/1', store=None, flush=0.5, extra='',
                 group='', umask=None, bucket='1s', watchdog=False, wrapper=()):
        self.cppd = cppd
        self.conf = os.path.join(tmp, name + '.conf')
        self.store = store or os.path.join(tmp, name + '.db')
        self.sock = os.path.join(tmp, name + '.sock')
        self.log = os.path.join(tmp, name + '.log')
        self.flush, self.bucket, self.group = flush, bucket, group
        # Built with AddressSanitizer (or run under valgrind) cppd is several times slower: a
        # backlog it handles in a second (a reload drains what the rings hold) takes a minute.
        self.slow = bool(wrapper) or 'libasan' in subprocess.run(['ldd', cppd], stdout=subprocess.PIPE,
                                                                 text=True).stdout
        self.write_conf(resources, extra)
        self.notify_path = os.path.join(tmp, name + '.notify')
        if os.path.exists(self.notify_path):
            os.unlink(self.notify_path)
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(self.notify_path)
        self.notify.settimeout(0.2)
        self.messages = []
        self.listening = True
        self.listener = threading.Thread(target=self.listen, daemon=True)
        self.listener.start()
        logf = open(self.log, 'a')
        pid = os.fork()
        if pid == 0:
            os.dup2(logf.fileno(), 1)
            os.dup2(logf.fileno(), 2)
            if umask is not None:
                os.umask(umask)
            # Python ignores SIGPIPE and exec keeps what is ignored: cppd gets the default, as
            # from a shell, so that the tests see what a client hanging up does to it.
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            env = dict(os.environ, NOTIFY_SOCKET=self.notify_path)
            for k in ('INVOCATION_ID', 'JOURNAL_STREAM', 'WATCHDOG_USEC', 'WATCHDOG_PID'):
                env.pop(k, None)
            if watchdog:
                env.update(WATCHDOG_USEC='1000000', WATCHDOG_PID=str(os.getpid()))
            argv = list(wrapper) + [cppd, '-c', self.conf]
            os.execve(shutil.which(argv[0]) or argv[0], argv, env)
        logf.close()
        self.pid = pid
        self.status = None

    def write_conf(self, resources, extra=''):
        """(Re)writes the configuration: the next SIGHUP reads it."""
        with open(self.conf, 'w') as f:
            f.write('[collect]\nresources = %s\n%s\n[store]\npath = %s\nflush_interval = %dms\nbucket = %s\n'
                    '[control]\nsocket = %s\ngroup = %s\n'
                    % (resources, extra, self.store, self.flush * 1000, self.bucket, self.sock, self.group))

    def listen(self):
        while self.listening:
            try:
                self.messages.append(self.notify.recv(4096).decode())
            except socket.timeout:
                continue
            except OSError:
                return

    def read_notify(self, until, timeout=10):
        """Waits until a notify message containing UNTIL arrives after those seen before (for
        READY=1, at any time)."""
        seen = len(self.messages)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if any(until in m for m in self.messages[seen:]) or (until == 'READY=1' and
                                                                  any(until in m for m in self.messages)):
                return True
            time.sleep(0.05)
        return False

    def ready(self, timeout=30):
        """Waits for READY=1; False if it does not come or the daemon exits first."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if any('READY=1' in m for m in self.messages):
                return True
            if self.exited():
                return False
            time.sleep(0.02)
        return False

    def exited(self):
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
                self.close_notify()
        return self.status is not None

    def request(self, line, timeout=None):
        """Sends LINE on the control socket and returns the whole reply. A daemon that does not
        answer within TIMEOUT seconds (30, 120 for a slow build), or is gone, raises DaemonGone
        with its state and the end of its log, which say why far better than the timeout alone."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(timeout or (120 if self.slow else 30))
            s.connect(self.sock)
            s.sendall(line if isinstance(line, bytes) else line.encode())
            data = b''
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError as e:
            raise DaemonGone(e.errno, '%r to the daemon: %s; %s; its log ends:\n%s'
                             % (line, e, self.state(), self.log_text()[-4000:])) from e
        finally:
            s.close()
        return data.decode(errors='replace')

    def flush_all(self, timeout=600):
        """Asks for a flush until the daemon has handled and stored everything the kernel had
        written before (a flush that ran out of its 5 s of catching up answers "ok partial=yes",
        a daemon built with ASan on a loaded machine can lag further). Returns the last reply."""
        end = time.monotonic() + timeout
        while True:
            reply = self.request('flush\n', timeout=max(end - time.monotonic(), 1)).strip()
            if reply != 'ok partial=yes' or time.monotonic() > end:
                return reply

    def state(self):
        """The daemon's process state in words: exited and how, or /proc's State line."""
        if self.exited():
            st = self.status
            return ('exited %d' % os.WEXITSTATUS(st)) if os.WIFEXITED(st) else 'killed by signal %d' % os.WTERMSIG(st)
        try:
            return re.search(r'State:\s+(.*)', open('/proc/%d/status' % self.pid).read()).group(1)
        except (OSError, AttributeError):
            return 'unknown'

    def status_lines(self):
        """The status reply as {word: fields} for daemon and state, and {'resource:NAME': fields}."""
        out = {}
        for line in self.request('status\n').splitlines():
            word, *fields = line.split(' ')
            kv = dict(f.split('=', 1) for f in fields if '=' in f)
            out['resource:' + kv.get('name', '') if word == 'resource' else word] = kv
        return out

    def rss_kib(self):
        m = re.search(r'VmRSS:\s+(\d+)', open('/proc/%d/status' % self.pid).read())
        if not m:       # exiting: its memory is gone already
            raise DaemonGone(errno.ESRCH, 'the daemon has no memory left: %s; its log ends:\n%s'
                             % (self.state(), self.log_text()[-4000:]))
        return int(m.group(1))

    def stop(self, sig=signal.SIGTERM, timeout=120):
        """Sends SIG and waits for the exit; returns the wait status."""
        if self.status is None:
            os.kill(self.pid, sig)
            end = time.monotonic() + timeout
            while not self.exited():
                if time.monotonic() > end:
                    os.kill(self.pid, signal.SIGKILL)
                time.sleep(0.01)
        self.close_notify()
        return self.status

    def close_notify(self):
        if self.listening:
            self.listening = False
            self.listener.join()
            self.notify.close()
            if os.path.exists(self.notify_path):
                os.unlink(self.notify_path)

    def log_text(self):
        return open(self.log, errors='replace').read()


def wait_for(cond, timeout):
    """Whether COND holds within TIMEOUT seconds, three times that on a loaded machine: each step
    of a daemon and its threads can take several times as long beside other jobs, and a wait
    ends as soon as COND holds."""
    end = time.monotonic() + 3 * timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    return cond()


def store_query(db, sql, params=()):
    con = sqlite3.connect('file:%s?mode=ro' % db, uri=True, timeout=30)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def run_hits(db, run_id, resource):
    """Hits stored for (run, resource)."""
    return store_query(db, "SELECT ifnull(sum(s.hits), 0) FROM sample s JOIN resource r ON r.id = s.resource_id "
                       "JOIN thread t ON t.id = s.thread_id JOIN process p ON p.id = t.process_id "
                       "WHERE p.run_id = ? AND r.name = ?", (run_id, resource))[0][0]


def pid_hits(db, pid, resource, run_id=None):
    """Hits stored for the process PID (of RUN_ID, if given)."""
    sql = ("SELECT ifnull(sum(s.hits), 0) FROM sample s JOIN resource r ON r.id = s.resource_id "
           "JOIN thread t ON t.id = s.thread_id JOIN process p ON p.id = t.process_id WHERE p.pid = ? AND r.name = ?")
    params = (pid, resource)
    if run_id is not None:
        sql += ' AND p.run_id = ?'
        params += (run_id,)
    return store_query(db, sql, params)[0][0]


def ended_runs(log):
    """The 'Run N ended: RESOURCE: H hits in S samples stored, L lost' lines of a daemon's log."""
    return [(int(r), res, int(h), int(s), int(lo)) for r, res, h, s, lo in
            re.findall(r'Run (\d+) ended: (\S+): (\d+) hits in (\d+) samples stored, (\d+) lost', log)]
