"""A private ClickHouse server for the fleet tests: clickhouse-server started on free ports (HTTP,
native TCP, interserver) with its own configuration, users and data directory under a temporary
directory, asked over HTTP, stopped, killed and restarted on the same ports and data.

    from clickhouse import ClickHouse, skip_unless_installed
    skip_unless_installed()                      # TAP skip when clickhouse-server is missing
    with ClickHouse(tmp) as ch:                  # started; answers SELECT 1
        ch.query('SELECT 1')                     # '1\\n'
        ch.url('fleet')                          # 'clickhouse://127.0.0.1:PORT/fleet'
        ch.kill(); ch.start()                    # SIGKILL mid-work, then the same server again

Several servers as one cluster (ClickHouse's remote_servers), before they start:

    a, b = ClickHouse(tmp, 'a'), ClickHouse(tmp, 'b')
    for ch in (a, b):
        ch.cluster('fleet', [a, b], {'insert_distributed_sync': 1})   # one shard each

The server runs as whoever runs the tests (root here: clickhouse-server 18.16 runs as root when
started directly, it only refuses to when its data belongs to someone else). There is no systemd
as PID 1 here, so it is started in the foreground as a child process of the test, in a session
of its own (a test's Ctrl-C is not the server's). So that a test ended by SIGTERM (meson's
timeout) or by an exception leaves no server behind, every server still running is killed then
(_kill_running())."""
import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import tap

SERVER = shutil.which('clickhouse-server') or '/usr/sbin/clickhouse-server'

# The user the tests connect as, with a password, so that credentials files are exercised.
USER = 'cppd'
PASSWORD = 'fleet-secret'

CONFIG = """<?xml version="1.0"?>
<yandex>
    <logger>
        <level>warning</level>
        <log>{dir}/log/server.log</log>
        <errorlog>{dir}/log/server.err.log</errorlog>
        <size>10M</size>
        <count>1</count>
        <console>0</console>
    </logger>
    <http_port>{http}</http_port>
    <tcp_port>{tcp}</tcp_port>
    <interserver_http_port>{inter}</interserver_http_port>
    <listen_host>127.0.0.1</listen_host>
    <max_concurrent_queries>20</max_concurrent_queries>
    <uncompressed_cache_size>67108864</uncompressed_cache_size>
    <mark_cache_size>67108864</mark_cache_size>
    <path>{dir}/data/</path>
    <tmp_path>{dir}/tmp/</tmp_path>
    <user_files_path>{dir}/user_files/</user_files_path>
    <format_schema_path>{dir}/format_schemas/</format_schema_path>
    <users_config>{dir}/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mlock_executable>false</mlock_executable>
</yandex>
"""

USERS = """<?xml version="1.0"?>
<yandex>
    <profiles>
        <default><max_memory_usage>2000000000</max_memory_usage>{settings}</default>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
        <{user}>
            <password>{password}</password>
            <networks><ip>127.0.0.1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </{user}>
    </users>
    <quotas><default></default></quotas>
</yandex>
"""


def installed():
    return os.access(SERVER, os.X_OK)


def skip_unless_installed():
    """Skips the whole TAP test (meson: SKIP) when clickhouse-server is not installed."""
    if not installed():
        tap.skip_all('clickhouse-server is not installed (packaging/install-deps installs it)')


_running = set()  # the servers started and not yet stopped or killed


def _kill_running():
    for ch in list(_running):
        ch.kill()


def _on_sigterm(signum, _frame):
    """The servers live in sessions of their own, which the signal to the test's process group
    does not reach: they are killed, and the test exits as by SIGTERM."""
    _kill_running()
    sys.exit(128 + signum)


atexit.register(_kill_running)


def free_port():
    """A TCP port nobody listens on now (the kernel's choice for an ephemeral bind)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class ClickHouse:
    """One clickhouse-server with its files in TMP/clickhouse-NAME."""

    def __init__(self, tmp, name='ch', timeout=60):
        self.dir = os.path.join(tmp, 'clickhouse-' + name)
        self.timeout = timeout
        self.proc = None
        for sub in ('log', 'data', 'tmp', 'user_files', 'format_schemas'):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        self.http, self.tcp, self.inter = free_port(), free_port(), free_port()
        self.config = os.path.join(self.dir, 'config.xml')
        with open(self.config, 'w') as f:
            f.write(CONFIG.format(dir=self.dir, http=self.http, tcp=self.tcp, inter=self.inter))
        with open(os.path.join(self.dir, 'users.xml'), 'w') as f:
            f.write(USERS.format(user=USER, password=PASSWORD, settings=''))
        self.credentials = os.path.join(self.dir, 'credentials')
        fd = os.open(self.credentials, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write('%s\n%s\n' % (USER, PASSWORD))

    def cluster(self, name, shards, settings=None):
        """Makes this server one of the cluster NAME whose shards are the servers SHARDS (one
        replica each, asked over their native TCP ports as the user default) and gives the
        profile of every user SETTINGS ({name: value}); written before start()."""
        xml = ''.join('<shard><replica><host>127.0.0.1</host><port>%d</port></replica></shard>' % s.tcp
                      for s in shards)
        os.makedirs(os.path.join(self.dir, 'config.d'), exist_ok=True)
        with open(os.path.join(self.dir, 'config.d', 'cluster.xml'), 'w') as f:
            f.write('<?xml version="1.0"?>\n<yandex><remote_servers><%s>%s</%s></remote_servers></yandex>\n'
                    % (name, xml, name))
        with open(os.path.join(self.dir, 'users.xml'), 'w') as f:
            f.write(USERS.format(user=USER, password=PASSWORD, settings=''.join(
                '<%s>%s</%s>' % (k, v, k) for k, v in (settings or {}).items())))

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def url(self, db='fleet'):
        return 'clickhouse://127.0.0.1:%d/%s' % (self.http, db)

    def start(self):
        """Starts the server and waits until it answers SELECT 1; raises RuntimeError with its
        log's tail if it does not within the timeout."""
        assert self.proc is None
        log = open(os.path.join(self.dir, 'log', 'stdout.log'), 'a')
        self.proc = subprocess.Popen([SERVER, '--config-file=' + self.config], cwd=self.dir,
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                     start_new_session=True)
        log.close()
        _running.add(self)
        if (threading.current_thread() is threading.main_thread() and
                signal.getsignal(signal.SIGTERM) == signal.SIG_DFL):
            signal.signal(signal.SIGTERM, _on_sigterm)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                status = self.proc.returncode
                self.proc = None
                _running.discard(self)
                raise RuntimeError('clickhouse-server exited with %s:\n%s' % (status, self.log_tail()))
            try:
                if self.query('SELECT 1', timeout=2) == '1\n':
                    return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.2)
        self.kill()
        raise RuntimeError('clickhouse-server did not answer within %ds:\n%s' % (self.timeout, self.log_tail()))

    def stop(self):
        """SIGTERM, then SIGKILL if it is still there after 20 s."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None
        _running.discard(self)

    def kill(self):
        """SIGKILL: the server dies mid-work, as in a crash or an OOM kill."""
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None
        _running.discard(self)

    def restart(self):
        self.stop()
        self.start()

    def query(self, sql, body=None, timeout=30, db=None, user=USER, password=PASSWORD):
        """Runs SQL over HTTP (with BODY appended, for INSERTs); returns the answer's text.
        Raises urllib.error.HTTPError with ClickHouse's message on an error status."""
        params = {'query': sql}
        if db:
            params['database'] = db
        url = 'http://127.0.0.1:%d/?%s' % (self.http, urllib.parse.urlencode(params))
        req = urllib.request.Request(url, data=(body or '').encode(), method='POST')
        req.add_header('X-ClickHouse-User', user)
        req.add_header('X-ClickHouse-Key', password)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.read().decode()
        except urllib.error.HTTPError as e:
            e.msg = e.read().decode(errors='replace')
            raise

    def log_tail(self, n=30):
        lines = []
        for name in ('stdout.log', 'server.err.log'):
            try:
                with open(os.path.join(self.dir, 'log', name), errors='replace') as f:
                    lines += f.read().splitlines()[-n:]
            except OSError:
                pass
        return '\n'.join(lines)
