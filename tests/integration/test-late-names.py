#!/usr/bin/env python3
"""Names after the fact (issue 26): a C++ program built with -g is recorded stripped, its debug
file on no path this machine searches, so its frames are stored as addresses (cxxnames+0x...).
Then, with Debian's debuginfod serving that debug file on a free loopback port, every view,
export, diff, the shell and `cppctl sql` name them as a recording of the unstripped program
does (the two hot functions' shares within their bars, the inlined spin_cpu_ms present, source
lines with --by line), and the header says "named later"; `cppctl symbolize` writes the names
into the store, after which a view with no server keeps them; --debug-dir names them from a
local folder; a path that now holds another program leaves them addresses and says why. Then
debuginfod servers that misbehave (slow, trickling, a huge body with and without a length, a
corrupt ELF, an ELF of another build id, a redirect loop, HTTP 500, nothing listening): each
gives one warning for the module, the frames stay addresses, the view succeeds, and no file
past the size bound is kept. Needs perf events (root); skipped without debuginfod or g++'s
workload. TAP output.

The daemon with `[symbols] debuginfod` set names what it stored as addresses from the server,
off its sampling path, and with a server that never answers it keeps recording, loses no
sample, and stops when asked.

Usage: test-late-names.py CPPD CPPCTL WORKLOADS_DIR

Robustness: recordings are compared by their printed bars (each share within the sum of the two
half-widths of 95% intervals, widened 1.5x as two independent runs are compared), never by
time; the servers' bounds are set small through DEBUGINFOD_TIMEOUT and DEBUGINFOD_MAXTIME so the
hostile cases end in seconds, and every command runs under a generous timeout that only turns a
hang into a failure."""
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from tap import done, ok, skip_all

cppd, cppctl, workloads = sys.argv[1], sys.argv[2], sys.argv[3]

ENERGY = 'geo::Field::energy(int) const'
INTEGRATE = 'double geo::detail::integrate<double>(geo::Vec<double> const&, unsigned long)'
INLINED = 'spin_cpu_ms'      # workload.h's, inlined into both hot functions at -O2
HOT = (ENERGY, INTEGRATE)
MAXSIZE = 20 << 20           # DEBUGINFOD_MAXSIZE for the hostile cases; the debug file is ~50 KiB
COMMAND_TIMEOUT = 300        # seconds: only a hang fails on it


def run(argv, env=None, **kw):
    full = dict(os.environ)
    for k in ('DEBUGINFOD_URLS', 'CPPD_NO_LATE_NAMES', 'DEBUGINFOD_MAXTIME', 'DEBUGINFOD_TIMEOUT',
              'DEBUGINFOD_MAXSIZE'):
        full.pop(k, None)
    full.update(env or {})
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full,
                          timeout=COMMAND_TIMEOUT, **kw)


def functions(db, env=None, *args):
    """The function profile as JSON, or None with the failure printed."""
    p = run([cppctl, 'functions', '--db', db, '-t', '0', '--json'] + list(args), env)
    if p.returncode != 0:
        print('# functions failed: %s' % p.stderr.strip())
        return None, p
    return json.loads(p.stdout), p


def shares(j):
    return {e['path'][0]: e for e in j['entries']} if j else {}


def addresses(j):
    return [e['path'][0] for e in j['entries'] if '+0x' in e['path'][0]] if j else []


def within_bars(a, b):
    """Whether entries A and B (of two recordings) agree within their 95% bars, widened 1.5x."""
    half = lambda e: (e['ci95'][1] - e['ci95'][0]) / 2
    return abs(a['fraction'] - b['fraction']) <= 1.5 * (half(a) + half(b))


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def build_id(path):
    p = run(['readelf', '-n', path])
    for line in p.stdout.splitlines():
        if 'Build ID:' in line:
            return line.split()[-1]
    return None


class Debuginfod:
    """Debian's debuginfod on a free loopback port, serving DIR, its database in TMP."""

    def __init__(self, tmp, folder, wanted):
        self.port = free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.log = open(os.path.join(tmp, 'debuginfod.log'), 'w')
        self.proc = subprocess.Popen(['debuginfod', '-p', str(self.port), '-d', os.path.join(tmp, 'dfd.sqlite'),
                                      '-F', folder, '-t', '0', '-g', '0'],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        # Scanned when it serves the file: polled, with a generous bound.
        self.ready = False
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen('%s/buildid/%s/debuginfo' % (self.url, wanted), timeout=5) as r:
                    if r.status == 200:
                        self.ready = True
                        break
            except Exception:
                time.sleep(0.3)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Hostile:
    """A debuginfod that misbehaves as MODE says, on a free loopback port."""

    def __init__(self, mode, other=None):
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def body(self, data):
                self.send_response(200)
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                try:
                    if mode == 'slow':              # never answers
                        time.sleep(3600)
                    elif mode == 'trickle':         # a byte a second, forever
                        self.send_response(200)
                        self.send_header('Content-Length', '100000')
                        self.end_headers()
                        while True:
                            self.wfile.write(b'x')
                            self.wfile.flush()
                            time.sleep(1)
                    elif mode == 'huge':            # announces 10 GiB
                        self.send_response(200)
                        self.send_header('Content-Length', str(10 << 30))
                        self.end_headers()
                        while True:
                            self.wfile.write(b'\0' * 65536)
                    elif mode == 'endless':         # no length, no end
                        self.send_response(200)
                        self.send_header('Transfer-Encoding', 'chunked')
                        self.end_headers()
                        chunk = b'\0' * 65536
                        while True:
                            self.wfile.write(b'%x\r\n%s\r\n' % (len(chunk), chunk))
                    elif mode == 'corrupt':
                        self.body(b'\x7fELF\x02\x01\x01' + bytes(range(256)) * 20)
                    elif mode == 'other':           # a real debug file, of another program
                        self.body(open(other, 'rb').read())
                    elif mode == 'loop':
                        self.send_response(302)
                        self.send_header('Location', self.path)
                        self.send_header('Content-Length', '0')
                        self.end_headers()
                    elif mode == 'error':
                        self.send_response(500)
                        self.send_header('Content-Length', '0')
                        self.end_headers()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.server.daemon_threads = True
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def record(db, exe, *args, env=None):
    p = run([cppctl, 'record', '-q', '--db', db, '-e', 'cpu-time'] + list(args) + ['--', exe, '600'], env)
    return ok(p.returncode == 0, 'record %s%s' % (os.path.basename(db), ' ' + ' '.join(args) if args else ''),
              p.stderr)


def test_views(tmp, full, named_db, env, dbid):
    """Every view, export, diff, sql and the shell name the stripped recording's frames."""
    ref, _ = functions(full)
    j, p = functions(named_db, env)
    s, r = shares(j), shares(ref)
    ok(j is not None and not addresses(j), 'functions: no frame left as an address', p.stderr)
    for name in HOT:
        ok(name in s and name in r and within_bars(s[name], r[name]),
           'functions: %s as in the unstripped recording (%.3f, %.3f)' %
           (name, s.get(name, {}).get('fraction', 0), r.get(name, {}).get('fraction', 0)),
           json.dumps({'named': s.get(name), 'full': r.get(name)}))
    ok(INLINED in s and INLINED in r, 'functions: the inlined %s is a frame, as at record time' % INLINED)
    ok(j is not None and j.get('frames_named_later', 0) > 0 and j.get('modules_named_later') == 1,
       'the header counts the frames named later, in one module',
       {k: v for k, v in (j or {}).items() if k != 'entries'})
    ok(p.stderr == '', 'and no warning', p.stderr)

    p = run([cppctl, 'functions', '--db', named_db, '-t', '0.1'], env)
    ok(p.returncode == 0 and 'named later: ' in p.stdout.splitlines()[1] and ' from 1 module' in p.stdout,
       'text header: "named later: N frames from 1 module"', p.stdout + p.stderr)

    views = [
        (['down', 'main', '-t', '0.1'], '(main %s %s)' % (ENERGY, INLINED)),
        (['up', INLINED, '-t', '0.1'], '(main %s %s)' % (ENERGY, INLINED)),
        (['body', '-t', '0.1'], INLINED),
        (['tree', '-t', '0.1'], ENERGY),
        (['graph', '-t', '0.1'], INTEGRATE),
        (['export', '-f', 'folded'], ';main;%s;%s ' % (ENERGY, INLINED)),
        (['export', '-f', 'folded', '--no-demangle'], '_ZNK3geo5Field6energyEi'),
        (['export', '-f', 'speedscope'], 'geo::Field::energy(int) const'),
        (['export', '-f', 'json'], 'geo::Field::energy(int) const'),
        (['functions', '--by', 'line', '-t', '0.1'], ENERGY),
    ]
    for args, want in views:
        p = run([cppctl] + args + ['--db', named_db], env)
        ok(p.returncode == 0 and want in p.stdout and dbid[:8] not in p.stdout and 'cxxnames+0x' not in p.stdout,
           '%s: named' % ' '.join(args[:3]), (p.stdout + p.stderr)[-2000:])
    pb = os.path.join(tmp, 'p.pb.gz')
    p = run([cppctl, 'export', '-f', 'pprof', '-o', pb, '--db', named_db], env)
    import gzip
    data = gzip.open(pb).read() if p.returncode == 0 and os.path.exists(pb) else b''
    ok(b'_ZNK3geo5Field6energyEi' in data and b'cxxnames+0x' not in data, 'export pprof: named', p.stderr)

    p = run([cppctl, 'diff', full, named_db, '-t', '0.1'], env)
    ok(p.returncode == 0 and ENERGY in p.stdout and 'cxxnames+0x' not in p.stdout,
       'diff against the unstripped recording: the same names', p.stdout + p.stderr)
    p = run([cppctl, 'sql', '--db', named_db,
             "SELECT count(*) FROM frame WHERE named_later = 1; "
             "SELECT count(*) FROM stack_text WHERE text LIKE '%_ZNK3geo5Field6energyEi;spin_cpu_ms%'; "
             "SELECT count(*) FROM stack_text WHERE text LIKE '%cxxnames+0x%'"], env)
    counts = [l.strip() for l in p.stdout.splitlines() if l.strip().isdigit()]
    ok(p.returncode == 0 and len(counts) == 3 and int(counts[0]) > 0 and int(counts[1]) > 0 and counts[2] == '0',
       'sql: named frames, stack_text names them, no address left', p.stdout + p.stderr)
    p = run([cppctl, 'shell', named_db], env, input='threshold 0.1\nfunctions\n')
    ok(p.returncode == 0 and ENERGY in p.stdout and 'cxxnames+0x' not in p.stdout, 'shell: named',
       p.stdout + p.stderr)


def test_lines(lines_db, env):
    p = run([cppctl, 'down', 'main', '--by', 'line', '-t', '0.1', '--db', lines_db], env)
    ok(p.returncode == 0 and 'cxxnames.cpp:' in p.stdout and 'workload.h:' in p.stdout,
       'recorded with --lines: call sites and the inlined function\'s line named later', p.stdout + p.stderr)


def test_symbolize(db, env):
    before = run([cppctl, 'sql', '--db', db, 'SELECT sum(hits), sum(samples) FROM sample'],
                 {'CPPD_NO_LATE_NAMES': '1'}).stdout
    p = run([cppctl, 'symbolize', '--db', db], env)
    ok(p.returncode == 0 and p.stdout.startswith('named ') and ' in 1 of 1 modules' in p.stdout,
       'symbolize: named, one module', p.stdout + p.stderr)
    after = run([cppctl, 'sql', '--db', db, 'SELECT sum(hits), sum(samples) FROM sample'],
                {'CPPD_NO_LATE_NAMES': '1'}).stdout
    ok(before == after and before.strip(), 'symbolize: no hit lost or counted twice', before + after)
    j, p = functions(db)
    ok(j is not None and not addresses(j) and ENERGY in shares(j) and j.get('frames_named_later', 0) > 0,
       'after symbolize, with no server: the names are kept, and counted as named later', p.stderr)
    p = run([cppctl, 'symbolize', '--db', db], env)
    ok(p.returncode == 0 and 'nothing to name' in p.stdout, 'symbolize again: nothing left to name',
       p.stdout + p.stderr)


def test_debug_dir(tmp, stripped_db, debug, dbid):
    db = os.path.join(tmp, 'dir.db')
    shutil.copy(stripped_db, db)
    root = os.path.join(tmp, 'debug-root')
    os.makedirs(os.path.join(root, '.build-id', dbid[:2]))
    shutil.copy(debug, os.path.join(root, '.build-id', dbid[:2], dbid[2:] + '.debug'))
    j, p = functions(db, None, '--debug-dir', root)
    ok(j is not None and not addresses(j) and ENERGY in shares(j), '--debug-dir: named from a local folder',
       p.stderr)
    j, p = functions(db)
    ok(j is not None and addresses(j), 'without it: addresses (the store is unchanged)', p.stderr)
    # the recorded file deleted since: named by build id alone
    exe = os.path.join(tmp, 'bin', 'cxxnames')
    os.rename(exe, exe + '.away')
    try:
        j, p = functions(db, None, '--debug-dir', root)
        ok(j is not None and not addresses(j) and ENERGY in shares(j),
           '--debug-dir, the recorded file deleted: named by its build id', p.stderr)
    finally:
        os.rename(exe + '.away', exe)


def test_replaced(tmp, stripped_db, exe, other_exe, dbid):
    """The recorded path now holds another program: its build id is not the store's."""
    saved = exe + '.saved'
    os.rename(exe, saved)
    shutil.copy(other_exe, exe)
    try:
        empty = os.path.join(tmp, 'empty-root')
        os.makedirs(empty, exist_ok=True)
        j, p = functions(stripped_db, None, '--debug-dir', empty)
        ok(j is not None and addresses(j), 'a path holding another build: frames stay addresses', p.stderr)
        ok(p.stderr.count(dbid) == 1 and 'another build id' in p.stderr,
           'and one warning says the file has another build id', p.stderr)
        j, p = functions(stripped_db)
        ok(j is not None and 'another build' in j.get('names_note', ''),
           'with nothing asked for, no warning, and the header says why',
           {k: v for k, v in (j or {}).items() if k != 'entries'})
        p = run([cppctl, 'functions', '--db', stripped_db, '-t', '0.1'])
        ok(p.returncode == 0 and 'left as addresses: the file there now has another build' in p.stdout,
           'the text header too', p.stdout)
    finally:
        os.replace(saved, exe)


def test_hostile(tmp, stripped_db, other_debug, dbid):
    cases = [
        ('slow', 'too slow'),
        ('trickle', 'too slow'),
        ('huge', 'larger than'),
        ('endless', 'larger than'),
        ('corrupt', 'not a valid ELF'),
        ('other', 'another build id'),
        ('loop', ''),
        ('error', 'HTTP 500'),
        ('down', 'down or unreachable'),
    ]
    for mode, words in cases:
        server = Hostile(mode, other_debug) if mode != 'down' else None
        url = server.url if server else 'http://127.0.0.1:%d' % free_port()
        cache = os.path.join(tmp, 'cache-' + mode)
        env = {'DEBUGINFOD_URLS': url, 'DEBUGINFOD_CACHE_PATH': cache, 'DEBUGINFOD_TIMEOUT': '3',
               'DEBUGINFOD_MAXTIME': '8', 'DEBUGINFOD_MAXSIZE': str(MAXSIZE)}
        try:
            j, p = functions(stripped_db, env)
        except subprocess.TimeoutExpired:
            j, p = None, None
        finally:
            if server:
                server.stop()
        if not ok(p is not None and j is not None, '%s server: the view succeeds (no hang, no crash)' % mode,
                  p.stderr if p else 'timed out'):
            continue
        ok(addresses(j), '%s server: frames stay addresses' % mode)
        ok(p.stderr.count(dbid) == 1 and words in p.stderr, '%s server: one warning for the module%s' %
           (mode, ', "%s"' % words if words else ''), p.stderr)
        big = [os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs
               if os.path.getsize(os.path.join(d, f)) > MAXSIZE]
        ok(not big, '%s server: nothing past DEBUGINFOD_MAXSIZE kept' % mode, big)


def daemon_run(tmp, name, exe, url, cache):
    """Runs EXE under a cppd naming from URL; returns (daemon, flush reply, lost samples), the
    daemon still running (the caller stops it)."""
    from daemon import Daemon
    saved = dict(os.environ)
    try:
        os.environ['DEBUGINFOD_CACHE_PATH'] = cache
        for k in ('DEBUGINFOD_URLS', 'DEBUGINFOD_TIMEOUT', 'DEBUGINFOD_MAXTIME'):
            os.environ.pop(k, None)
        if name == 'daemon-slow':
            os.environ.update(DEBUGINFOD_TIMEOUT='3', DEBUGINFOD_MAXTIME='8')
        # As test-debuginfod-offpath.py runs it, so that a sample lost is one naming cost: half
        # the default rate, frame-pointer stacks, big rings and queue, a raised priority.
        d = Daemon(cppd, tmp, name=name, resources='cpu-time/2',
                   extra='unwind = fp\nring_size = 4M\nqueue_size = 64M\n\n[symbols]\ndebuginfod = %s\n' % url,
                   wrapper=('nice', '-n', '-10'))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    if not ok(d.ready(), '%s starts' % name, d.log_text()[-2000:]):
        return d, None, None
    p = run([exe, '600'])
    ok(p.returncode == 0, '%s: the stripped workload ran beside it' % name, p.stderr)
    reply = d.flush_all()
    st = d.status_lines()
    lost = int(st.get('resource:cpu-time', {}).get('lost', -1))
    return d, reply, lost


def named_later_in(db):
    p = run([cppctl, 'sql', '--db', db, 'SELECT count(*) FROM frame WHERE named_later = 1'],
            {'CPPD_NO_LATE_NAMES': '1'})
    digits = [l.strip() for l in p.stdout.splitlines() if l.strip().isdigit()]
    return int(digits[0]) if digits else -1


def test_clickhouse(tmp, full, stripped_db, url):
    """The fleet view names what the hosts could not: the stripped recording loaded into a
    private ClickHouse, views over it with the server."""
    import clickhouse
    if not clickhouse.installed():
        ok(True, '# SKIP the fleet store: clickhouse-server is not installed')
        return
    try:
        ch = clickhouse.ClickHouse(tmp)
        ch.start()
    except RuntimeError as e:
        ok(False, 'start clickhouse-server', str(e))
        return
    try:
        cred = ['--credentials', ch.credentials]
        p = run([cppctl, 'merge', '-o', ch.url('fleet')] + cred + [stripped_db])
        if not ok(p.returncode == 0, 'fleet: the stripped recording loaded into ClickHouse', p.stderr):
            return
        j, p = functions(ch.url('fleet'), None, *cred)
        ok(j is not None and addresses(j) and ENERGY not in shares(j), 'fleet, no server: addresses', p.stderr)
        env = {'DEBUGINFOD_URLS': url, 'DEBUGINFOD_CACHE_PATH': os.path.join(tmp, 'cache-fleet')}
        j, p = functions(ch.url('fleet'), env, *cred)
        ref, _ = functions(full)
        s, r = shares(j), shares(ref)
        ok(j is not None and not addresses(j) and all(n in s and within_bars(s[n], r[n]) for n in HOT) and
           INLINED in s and j.get('frames_named_later', 0) > 0,
           'fleet, with the server: named as the unstripped recording, counted as named later',
           {k: v for k, v in (j or {}).items() if k != 'entries'})
        p = run([cppctl, 'down', 'main', '-t', '0.1', '--db', ch.url('fleet')] + cred, env)
        ok(p.returncode == 0 and '(main %s %s)' % (ENERGY, INLINED) in p.stdout, 'fleet: down names the path',
           p.stdout + p.stderr)
        test_clickhouse_symbolize(ch, cred, env, ref)
    finally:
        ch.stop()


def test_clickhouse_symbolize(ch, cred, env, ref):
    """cppctl symbolize over the fleet store keeps the names in its names table: views read them
    with no server and no naming of their own; a second run finds nothing new; the hosts' stacks
    stay as they were."""
    url = ch.url('fleet')
    stacks = ch.query('SELECT count(), sum(length(functions)) FROM fleet.stacks')
    p = run([cppctl, 'symbolize', '--db', url] + cred, env)
    m = re.search(r'named (\d+) of (\d+) frames stored as addresses, in (\d+) of (\d+) modules \(0 named before',
                  p.stdout)
    ok(p.returncode == 0 and m and int(m.group(1)) > 0,
       'fleet: symbolize names frames and keeps them in the fleet store', p.stdout + p.stderr)
    kept = int(ch.query('SELECT count() FROM fleet.names') or 0)
    ok(m and kept == int(m.group(1)), 'fleet: one names row a frame named (%d)' % kept, p.stdout)
    ok(ch.query('SELECT count(), sum(length(functions)) FROM fleet.stacks') == stacks,
       'fleet: the stacks the hosts sent are as they were')
    # No server, and no naming by the view itself: the names come from the table alone.
    off = {'CPPD_NO_LATE_NAMES': '1'}
    j, p = functions(url, off, *cred)
    s, r = shares(j), shares(ref)
    ok(j is not None and not addresses(j) and all(n in s and within_bars(s[n], r[n]) for n in HOT) and
       INLINED in s and j.get('frames_named_later', 0) > 0,
       'fleet, after symbolize, no server: named as the unstripped recording, counted as named later',
       {k: v for k, v in (j or {}).items() if k != 'entries'})
    p = run([cppctl, 'down', 'main', '-t', '0.1', '--db', url] + cred, off)
    ok(p.returncode == 0 and '(main %s %s)' % (ENERGY, INLINED) in p.stdout,
       'fleet, after symbolize: down names the path with its inlined frame', p.stdout + p.stderr)
    p = run([cppctl, 'symbolize', '--db', url] + cred, env)
    ok(p.returncode == 0 and re.search(r'named 0 of 0 frames .*\(%d named before' % kept, p.stdout) and
       int(ch.query('SELECT count() FROM fleet.names')) == kept,
       'fleet: symbolize again names nothing new, adds no row', p.stdout + p.stderr)
    p = run([cppctl, 'sql', url] + cred + ['SELECT count() AS n FROM names'])
    ok(p.returncode == 0 and p.stdout.split()[-1:] == [str(kept)], 'fleet: cppctl sql reads the names table',
       p.stdout + p.stderr)
    # A database that is not there: named, nothing made.
    p = run([cppctl, 'symbolize', '--db', ch.url('nosuchdb')] + cred, env)
    ok(p.returncode != 0 and 'nosuchdb' in p.stderr, 'fleet: symbolize over a database that is not there says so',
       p.stderr)


def test_daemon(tmp, exe, url):
    if os.geteuid() != 0:
        ok(True, '# SKIP the daemon: needs root (system-wide perf events)')
        return
    d, reply, lost = daemon_run(tmp, 'daemon-named', exe, url, os.path.join(tmp, 'cache-daemon'))
    try:
        if reply is None:
            return
        ok(reply == 'ok' and lost == 0, 'daemon: flushed, no sample lost (%s)' % lost, reply)
        # The flush asked for wakes the naming thread: wait for its pass, with a generous bound.
        deadline, n = time.monotonic() + 180, 0
        while time.monotonic() < deadline and (n := named_later_in(d.store)) <= 0 and not d.exited():
            time.sleep(0.5)
        ok(n > 0, 'daemon: its naming thread wrote names into the store (%d frames)' % n, d.log_text()[-2000:])
        sym = d.status_lines().get('symbols', {})
        ok(sym.get('servers') == url and int(sym.get('frames_named', 0)) > 0 and 'error' not in sym,
           'daemon: status says what it named', sym)
        j, p = functions(d.store, {'CPPD_NO_LATE_NAMES': '1'}, '--exe', 'cxxnames')
        ok(j is not None and ENERGY in shares(j), 'daemon: the workload\'s functions read named from the store',
           p.stderr)
        # cppctl symbolize over the daemon's store while it writes: both take the write lock
        # in turn; the store stays whole, every sample row on a stack, the daemon flushing.
        work = subprocess.Popen([exe, '600'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        p = run([cppctl, 'symbolize', '--db', d.store], {'DEBUGINFOD_URLS': url,
                                                          'DEBUGINFOD_CACHE_PATH': os.path.join(tmp, 'cache-sym-d')})
        work.wait(timeout=COMMAND_TIMEOUT)
        ok(p.returncode == 0 and (p.stdout.startswith('named ') or 'nothing to name' in p.stdout),
           'daemon: cppctl symbolize over its store while it writes', p.stdout + p.stderr)
        ok(d.flush_all() == 'ok', 'daemon: flushes after it')
        from daemon import store_query
        check = store_query(d.store, 'PRAGMA quick_check')
        orphans = store_query(d.store, 'SELECT count(*) FROM sample WHERE stack_id NOT IN (SELECT id FROM stack)')
        ok(check == [('ok',)] and orphans == [(0,)], 'daemon: the store is whole, every sample on a stack',
           (check, orphans))
    finally:
        status = d.stop()
    ok(status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, 'daemon: stops cleanly',
       d.log_text()[-2000:])

    server = Hostile('slow')
    d, reply, lost = daemon_run(tmp, 'daemon-slow', exe, server.url, os.path.join(tmp, 'cache-daemon-slow'))
    try:
        if reply is None:
            return
        ok(reply == 'ok' and lost == 0, 'daemon, a server that never answers: flushed, no sample lost (%s)' % lost,
           reply)
        ok(named_later_in(d.store) == 0, 'and nothing named')
    finally:
        status = d.stop()
        server.stop()
    ok(status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0,
       'daemon, a server that never answers: stops cleanly, its fetch cut off', d.log_text()[-2000:])


def main():
    if not shutil.which('debuginfod'):
        skip_all('debuginfod is not installed (apt install debuginfod; packaging/install-deps does)')
    src = os.path.join(workloads, 'cxxnames')
    if not os.path.exists(src):
        skip_all('cxxnames is not built (no C++ compiler: apt install g++)')
    for tool in ('objcopy', 'strip', 'readelf'):
        if not shutil.which(tool):
            skip_all('%s is missing (apt install binutils)' % tool)
    with tempfile.TemporaryDirectory(prefix='cppd-late-names-') as tmp:
        bindir, srv = os.path.join(tmp, 'bin'), os.path.join(tmp, 'served')
        os.makedirs(bindir)
        os.makedirs(srv)
        full_exe, exe = os.path.join(bindir, 'cxxnames-full'), os.path.join(bindir, 'cxxnames')
        debug = os.path.join(srv, 'cxxnames.debug')
        shutil.copy(src, full_exe)
        subprocess.run(['objcopy', '--only-keep-debug', full_exe, debug], check=True)
        subprocess.run(['strip', '--strip-all', '-o', exe, full_exe], check=True)
        dbid = build_id(exe)
        if not dbid or dbid != build_id(debug):
            skip_all('the workload has no build id (a toolchain without --build-id)')
        other_exe = os.path.join(workloads, 'cycles-fp')
        other_debug = os.path.join(tmp, 'other.debug')
        subprocess.run(['objcopy', '--only-keep-debug', other_exe, other_debug], check=True)

        full, stripped, lines = (os.path.join(tmp, n) for n in ('full.db', 'stripped.db', 'lines.db'))
        p = run([cppctl, 'record', '-q', '--db', os.path.join(tmp, 'probe.db'), '-e', 'cpu-time', '--', 'true'])
        if p.returncode != 0:
            skip_all('cppctl record cannot sample here (perf events need root): %s' % p.stderr.strip())
        if not (record(full, full_exe) and record(stripped, exe) and record(lines, exe, '--lines')):
            return done()

        j, p = functions(stripped)
        ok(j is not None and len(addresses(j)) >= 2 and ENERGY not in shares(j),
           'stripped, no server: the hot frames are addresses', p.stderr)
        ok(p.stderr == '', 'and no warning when no debug info was asked for', p.stderr)

        server = Debuginfod(tmp, srv, dbid)
        try:
            if not ok(server.ready, 'debuginfod serves the debug file', open(os.path.join(tmp, 'debuginfod.log')).read()):
                return done()
            env = {'DEBUGINFOD_URLS': server.url, 'DEBUGINFOD_CACHE_PATH': os.path.join(tmp, 'cache')}
            test_views(tmp, full, stripped, env, dbid)
            test_lines(lines, env)
            sym = os.path.join(tmp, 'symbolized.db')
            shutil.copy(stripped, sym)
            test_symbolize(sym, {'DEBUGINFOD_URLS': server.url,
                                 'DEBUGINFOD_CACHE_PATH': os.path.join(tmp, 'cache-symbolize')})
            # record with a server: sampling looks on this machine only, the fetch comes after
            rec = os.path.join(tmp, 'recorded-named.db')
            if record(rec, exe, env={'DEBUGINFOD_URLS': server.url,
                                     'DEBUGINFOD_CACHE_PATH': os.path.join(tmp, 'cache-record')}):
                j, p = functions(rec)
                ok(j is not None and not addresses(j) and ENERGY in shares(j) and j.get('frames_named_later'),
                   'record with DEBUGINFOD_URLS: named at the end of the run, into the store', p.stderr)
            test_clickhouse(tmp, full, stripped, server.url)
            test_daemon(tmp, exe, server.url)
        finally:
            server.stop()
        test_debug_dir(tmp, stripped, debug, dbid)
        test_replaced(tmp, stripped, exe, other_exe, dbid)
        test_hostile(tmp, stripped, other_debug, dbid)
    return done()


sys.exit(main())
