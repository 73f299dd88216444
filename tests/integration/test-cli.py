#!/usr/bin/env python3
"""cppctl's command line against hostile but ordinary input: what -o may overwrite,
endless lines, counts that would overflow, time bounds at 0, stores one may read but not write,
the profiled command's exit status, perf.data advice that works with Debian's perf, sql output
that streams, errors that name their cause, and the ClickHouse side without a ClickHouse:
credentials files that are FIFOs or another user's, passwords in URLs, KILL and SYSTEM, and a
server's error page full of terminal escapes. TAP output; the parts that need root or perf
(another user, a read-only mount, perf events) skip themselves without them.
CPPD_CLI_PARTS=until_zero,sql_streams,... runs only those parts.

Usage: test-cli.py CPPCTL DATA_DIR WORKLOADS_DIR"""
import hashlib
import http.server
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

from tap import done, ok

cppctl, data, workloads = sys.argv[1:4]
FOLDED = os.path.join(data, 'process_db.folded')


def run(argv, **kw):
    kw.setdefault('timeout', 60)
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def say(p):
    """A finished process's output, for a failed test's detail."""
    return 'exit %d\n%s\n%s' % (p.returncode, p.stdout[-1500:], p.stderr[-1500:])


def make_store(path, folded=FOLDED, *extra):
    p = run([cppctl, 'import', '--folded', folded, '-r', 'cpu-time', '--db', path] + list(extra))
    assert p.returncode == 0, say(p)


def until_zero(tmp):
    """--until @0 and 1970-01-01 are bounds like any other: no sample lies before them."""
    db = os.path.join(tmp, 'until.db')
    make_store(db, FOLDED, '--time', '@1700000000')
    for bound in ('@0', '1970-01-01 00:00'):
        p = run([cppctl, 'functions', '--db', db, '--until', bound], env=dict(os.environ, TZ='UTC'))
        ok(p.returncode == 3 and 'no samples' in p.stderr, '--until %s selects nothing' % bound, say(p))
    p = run([cppctl, 'functions', '--db', db, '--since', '@0'])
    ok(p.returncode == 0 and '9950 samples' in p.stdout, '--since @0 selects every sample', say(p))
    p = run([cppctl, 'sql', db, "SELECT count(*) FROM functions WHERE until = 0"])
    ok(p.returncode == 0 and p.stdout.split()[-1] == '0', 'and the SQL functions\' until = 0 likewise', say(p))


def max_rss_mib(argv, stdin_bytes):
    """Runs ARGV with STDIN_BYTES zero bytes piped in (no newline); returns its exit status,
    stderr and peak resident memory in MiB."""
    feeder = subprocess.Popen(['head', '-c', str(stdin_bytes), '/dev/zero'], stdout=subprocess.PIPE)
    errf = tempfile.TemporaryFile()
    child = subprocess.Popen(argv, stdin=feeder.stdout, stdout=subprocess.DEVNULL, stderr=errf)
    feeder.stdout.close()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    feeder.wait()
    errf.seek(0)
    return child.returncode, errf.read().decode(errors='replace'), usage.ru_maxrss / 1024


def endless_lines(tmp):
    """A newline-free stream is refused at the 16 MiB line bound as it is read: 200 MiB of zeros
    through import --folded and shell --replay never take more than the bound's worth of memory."""
    db = os.path.join(tmp, 'endless.db')
    make_store(db)
    size = 200 << 20
    status, err, rss = max_rss_mib([cppctl, 'import', '--folded', '-', '-r', 'cpu-time', '--db', db], size)
    ok(status == 1 and ':1: line longer than 16777216 bytes' in err, 'import --folded of a newline-free stream: '
       'refused, naming line 1', (status, err))
    ok(rss < 120, 'in %.0f MiB of memory, not the stream\'s 200' % rss, (status, err))
    status, err, rss = max_rss_mib([cppctl, 'shell', '--replay', '/dev/stdin', db], size)
    ok(status == 1 and ':1: line longer than 16777216 bytes' in err, 'shell --replay of one: refused', (status, err))
    ok(rss < 120, 'in %.0f MiB of memory' % rss, (status, err))


def sha256(path):
    return hashlib.sha256(open(path, 'rb').read()).hexdigest()


def output_never_a_store(tmp):
    """-o is a report's file in every command, never a store: a view's -o that names a store (the
    one it reads, another, through a symbolic link) is refused and the store left as it was;
    record, attach and merge take the store as --db and refuse -o."""
    db, other = os.path.join(tmp, 'o.db'), os.path.join(tmp, 'other.db')
    make_store(db)
    make_store(other)
    link = os.path.join(tmp, 'link.html')
    os.symlink(db, link)
    before = {db: sha256(db), other: sha256(other)}
    cases = [('functions -o the store it reads', ['functions', '--db', db, '-o', db], db),
             ('functions -o another store', ['functions', '--db', db, '-o', other], other),
             ('export -o a store', ['export', '--db', db, '-o', other], other),
             ('tree --format html -o a symbolic link to a store', ['tree', '--db', db, '--format', 'html',
                                                                    '-o', link], db),
             ('diff -o a store', ['diff', db, other, '-o', other], other)]
    for what, argv, target in cases:
        p = run([cppctl] + argv)
        ok(p.returncode == 1 and 'is a store' in p.stderr and 'never over a store' in p.stderr,
           '%s: refused, saying why' % what, say(p))
        ok(sha256(target) == before[target], '%s: the store is byte for byte the same' % what)
    p = run([cppctl, 'shell', db], input='save %s\n' % other)
    ok('is a store' in p.stderr and sha256(other) == before[other], 'the shell\'s save refuses a store too', say(p))
    report = os.path.join(tmp, 'report.txt')
    open(report, 'w').write('x' * 100000)
    p = run([cppctl, 'functions', '--db', db, '-o', report])
    ok(p.returncode == 0 and open(report).read().startswith('Body+Descendants') and
       os.path.getsize(report) < 100000, 'a report over an old report: written, the rest cut', say(p))
    for cmd in (['record', '-o', os.path.join(tmp, 'r.db'), '--', 'true'], ['attach', '-o', os.path.join(tmp, 'r.db'), '1'],
                ['merge', '-o', os.path.join(tmp, 'm.db'), db]):
        p = run([cppctl] + cmd)
        ok(p.returncode == 2 and '--db' in p.stderr and not os.path.exists(cmd[2]),
           '%s -o: refused, pointing at --db' % cmd[0], say(p))
    p = run([cppctl, 'merge', '--db', os.path.join(tmp, 'm.db'), db])
    ok(p.returncode == 0, 'merge --db OUT IN', say(p))


def record_status(tmp):
    """record exits with the profiled command's status, as perf record and time do, once the run
    is stored; 128 + N when signal N killed it."""
    db = os.path.join(tmp, 'status.db')
    p = run([cppctl, 'record', '-q', '--db', db, '--', 'true'])
    if p.returncode != 0:
        ok(True, '# SKIP record cannot open perf events here: ' + p.stderr.strip()[-200:])
        return
    p = run([cppctl, 'record', '-q', '--db', db, '--', 'sh', '-c', 'exit 3'])
    ok(p.returncode == 3 and 'exited with status 3' in p.stderr, 'a command that exits 3: record exits 3', say(p))
    p = run([cppctl, 'record', '-q', '--db', db, '--', 'sh', '-c', 'kill -TERM $$'])
    ok(p.returncode == 128 + 15, 'one killed by SIGTERM: 143', say(p))
    runs = sqlite3.connect(db).execute("SELECT count(*) FROM run WHERE ended IS NOT NULL").fetchone()[0]
    ok(runs == 3, 'and every run is stored, ended', runs)


def counts_bounded(tmp):
    """No sum of hits can wrap: a resource holds at most 2^62 gticks (hits times period) in a
    store; import refuses the line that would pass it, merge the store, and a view of a store
    edited past it says so rather than wrap."""
    big = os.path.join(tmp, 'big.folded')
    open(big, 'w').write('main;f 3000000000000000000\n')
    db = os.path.join(tmp, 'big.db')
    p = run([cppctl, 'import', '--folded', big, '-r', 'cpu-time', '--db', db])
    ok(p.returncode == 0, 'an import of 3e18 hits', say(p))
    open(big, 'w').write('main;g 1\nmain;f 3000000000000000000\n')
    p = run([cppctl, 'import', '--folded', big, '-r', 'cpu-time', '--db', db])
    ok(p.returncode == 1 and 'big.folded:2: the counts would add up to more than 2^62' in p.stderr,
       'a second one: refused, naming the line that would overflow', say(p))
    p = run([cppctl, 'functions', '--db', db])
    ok(p.returncode == 0 and '3000000000000000000 samples' in p.stdout,
       'and the store holds the first alone', say(p))

    periods = os.path.join(tmp, 'periods.db')
    small = os.path.join(tmp, 'small.folded')
    open(small, 'w').write('main;f 2\nmain;g 1\n')
    p = run([cppctl, 'import', '--folded', small, '-r', 'cpu-time', '--period', '1000000000000000000', '--db', periods])
    ok(p.returncode == 0, 'three samples at period 1e18', say(p))
    p = run([cppctl, 'import', '--folded', small, '-r', 'cpu-time', '--period', '1000000000000000000', '--db', periods])
    ok(p.returncode == 1 and 'small.folded:1:' in p.stderr, 'three more would pass 2^62 gticks: refused', say(p))
    p = run([cppctl, 'import', '--folded', small, '-r', 'cpu-time', '--period', '3', '--db', periods])
    p = run([cppctl, 'functions', '--db', periods])
    ok(p.returncode == 0 and '3000000000000000009 hits in 6 samples' in p.stdout,
       'periods 1e18 and 3 mixed: the total is exact, not wrapped', say(p))

    other = os.path.join(tmp, 'big2.db')
    open(big, 'w').write('main;h 2000000000000000000\n')
    make_store(other, big)
    out = os.path.join(tmp, 'fleet.db')
    p = run([cppctl, 'merge', '--db', out, db, other])
    ok(p.returncode == 1 and 'more than 2^62 gticks of cpu-time' in p.stderr and 'nothing of it was merged' in p.stderr,
       'merge refuses the store that would pass the bound', say(p))
    p = run([cppctl, 'functions', '--db', out])
    ok(p.returncode == 0 and '3000000000000000000 samples' in p.stdout, 'and keeps the first', say(p))

    c = sqlite3.connect(other)
    c.execute('UPDATE sample SET hits = 9000000000000000000')
    c.execute("INSERT INTO sample SELECT resource_id, bucket + 60, thread_id, stack_id, hits, samples, hits_squared "
              "FROM sample")
    c.commit()
    c.close()
    p = run([cppctl, 'functions', '--db', other])
    ok(p.returncode == 1 and 'more than 2^63' in p.stderr and 'bound of 2^62' in p.stderr,
       'a store edited past the bound: the view says so', say(p))


def perf_advice(tmp):
    """For the perf.data files cppd does not read (pipe mode, perf record -z) the error gives
    advice that works with the perf at hand (Debian 12's is 6.1, where perf inject does not):
    following it word for word imports the samples."""
    work = [os.path.join(workloads, 'recursive-fp'), '10', '5']
    pipe, packed = os.path.join(tmp, 'pipe.data'), os.path.join(tmp, 'packed.data')
    with open(pipe, 'wb') as f:
        p = subprocess.run(['perf', 'record', '-q', '-e', 'cpu-clock', '-g', '-o', '-', '--'] + work, stdout=f,
                           stderr=subprocess.PIPE)
    q = run(['perf', 'record', '-q', '-z', '-e', 'cpu-clock', '-g', '-o', packed, '--'] + work)
    if p.returncode != 0 or q.returncode != 0:
        ok(True, '# SKIP perf record cannot run here')
        return
    for what, path in (('pipe mode', pipe), ('perf record -z', packed)):
        db = os.path.join(tmp, 'advice.db')
        p = run([cppctl, 'import', '--db', db, path])
        advice = p.stderr.split("fold it with perf: '")[-1].split("'")[0]
        ok(p.returncode == 1 and advice.startswith('perf script'), '%s: refused, with advice' % what, say(p))
        shell = advice.replace('-i FILE', '-i ' + path).replace('cppctl', cppctl).replace('EVENT', 'cpu-clock')
        p = run(['sh', '-c', shell + ' --db ' + db])
        v = run([cppctl, 'functions', '--db', db])
        ok(p.returncode == 0 and ' burn ' in v.stdout, '%s: the advice, followed, imports the samples' % what,
           say(p) + say(v))
        if os.path.exists(db):
            os.unlink(db)


def read_only_stores(tmp):
    """A store one may read but not write is read: as a real unprivileged user in the store's
    group, in a directory the user may not write (the packaged /var/lib/cppd, cppd stopped), and
    on a read-only mount. Where it cannot be (a write-ahead log with changes, no read permission)
    the error names the real cause."""
    import grp
    if os.geteuid() != 0:
        ok(True, '# SKIP needs root: another user, a read-only mount')
        return
    group = grp.getgrnam('nogroup').gr_gid
    as_reader = ['setpriv', '--reuid=nobody', '--regid=%d' % group, '--clear-groups']
    d = os.path.join(tmp, 'lib')
    os.mkdir(d)
    db = os.path.join(d, 'cppd.db')
    make_store(db)
    os.chown(d, 0, group)
    os.chmod(d, 0o750)
    os.chown(db, 0, group)
    os.chmod(db, 0o640)
    p = run(as_reader + [cppctl, 'functions', '--db', db])
    ok(p.returncode == 0 and '9950 samples' in p.stdout, 'group member, directory not writable: functions', say(p))
    p = run(as_reader + [cppctl, 'sql', db, 'SELECT count(*) FROM run'])
    ok(p.returncode == 0 and p.stdout.split()[-1] == '1', 'and sql', say(p))
    p = run(as_reader + [cppctl, 'shell', db], input='body\n')
    ok(p.returncode == 0 and 'Body Profile' in p.stdout, 'and the shell', say(p))
    out = os.path.join(tmp, 'merged')
    os.mkdir(out)
    os.chmod(out, 0o777)
    p = run(as_reader + [cppctl, 'merge', '--db', os.path.join(out, 'fleet.db'), db])
    ok(p.returncode == 0 and 'Merged' in p.stdout, 'and merge it into a store of one\'s own', say(p))
    ok(sorted(os.listdir(d)) == ['cppd.db'], 'nothing written beside it', os.listdir(d))

    c = sqlite3.connect(db)
    c.execute('PRAGMA wal_autocheckpoint = 0')
    c.execute("UPDATE run SET command = 'changed'")
    c.commit()
    saved = os.path.join(tmp, 'wal-copy')
    os.mkdir(saved)
    shutil.copy(db, saved)
    shutil.copy(db + '-wal', saved)
    c.close()
    os.rename(os.path.join(saved, 'cppd.db-wal'), db + '-wal')
    os.chown(db + '-wal', 0, group)
    os.chmod(db + '-wal', 0o640)
    p = run(as_reader + [cppctl, 'functions', '--db', db])
    ok(p.returncode == 1 and 'write-ahead log' in p.stderr and 'readonly database' not in p.stderr,
       'a write-ahead log left with changes: the error says so', say(p))
    os.unlink(db + '-wal')

    os.chmod(db, 0o600)
    p = run(as_reader + [cppctl, 'functions', '--db', db])
    ok(p.returncode == 1 and 'permission denied' in p.stderr.lower(), 'no read permission: "permission denied"',
       say(p))
    os.chmod(db, 0o640)

    mnt = os.path.join(tmp, 'ro-mount')
    os.mkdir(mnt)
    if run(['mount', '--bind', d, mnt]).returncode != 0:
        ok(True, '# SKIP cannot bind-mount here')
        return
    try:
        if run(['mount', '-o', 'remount,ro,bind', mnt]).returncode != 0:
            ok(True, '# SKIP cannot remount read-only here')
            return
        ro = os.path.join(mnt, 'cppd.db')
        p = run([cppctl, 'functions', '--db', ro])
        ok(p.returncode == 0 and '9950 samples' in p.stdout, 'a read-only file system: functions', say(p))
        p = run([cppctl, 'sql', ro, 'SELECT count(*) FROM run'])
        ok(p.returncode == 0 and p.stdout.split()[-1] == '1', 'and sql', say(p))
        p = run([cppctl, 'import', '--folded', FOLDED, '-r', 'page-faults', '--db', ro])
        ok(p.returncode == 1 and 'no such store' not in p.stderr and 'read-only' in p.stderr.lower(),
           'import there: refused, blaming the read-only file system', say(p))
    finally:
        run(['umount', mnt])


def sql_streams(tmp):
    """cppctl sql's table output streams: rows come out as they are read (widths measured over
    the first 1,000), so those before a row that fails are out already, and a long result costs
    time in proportion (tests/bench/bench-sql.py has the figures)."""
    db = os.path.join(tmp, 'sql.db')
    make_store(db)
    rows = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d) "
    p = run([cppctl, 'sql', db, rows % 3000 + "SELECT x, CASE WHEN x = 2500 THEN abs(-9223372036854775807 - 1) "
             "ELSE 'v' || x END AS value FROM c"])
    lines = p.stdout.splitlines()
    ok(p.returncode == 1 and 'integer overflow' in p.stderr and len(lines) == 2 + 2499 and
       lines[-1].split() == ['2499', 'v2499'], 'a row that fails at 2,500: the 2,499 before it are out', say(p))
    ok(lines[0].split() == ['x', 'value'] and set(lines[1]) == {'-'} and lines[2] == '1     v1',
       'under a header, aligned to the first rows\' widths', lines[:3])
    # The first rows come at once; the last one only after SQLite counts to 3,000,000 (a second or
    # more): streamed, the first line comes early in the run; held, at its very end.
    t0 = time.monotonic()
    p = subprocess.Popen([cppctl, 'sql', db, rows % 3000000 + "SELECT x FROM c WHERE x <= 1100 OR x = 3000000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline()
    t_first = time.monotonic() - t0
    out = p.stdout.read()
    err = p.stderr.read()
    p.wait()
    t_all = time.monotonic() - t0
    ok(first.split() == ['x'] and t_first < t_all / 2, 'the first rows come out while the statement still runs '
       '(%.2f s of %.2f s)' % (t_first, t_all), err)
    lines = (first + out).splitlines()
    ok(p.returncode == 0 and len(lines) == 2 + 1101 and lines[-2:] == ['1100', '3000000'], 'and the rest after',
       (p.returncode, len(lines), lines[-3:], err))


def errors_name_cause(tmp):
    """Errors name their cause: a 100 KB argument keeps the reason after it (the middle of a
    long message goes, not its end); folded input with a NUL byte or a count out of range says
    which, with the line."""
    db = os.path.join(tmp, 'errors.db')
    make_store(db)
    p = run([cppctl, 'down', '--db', db, '--root', 'x' * 100000])
    ok(p.returncode == 3 and p.stderr.rstrip().endswith("appears in no sample of cpu-time; 'cppctl functions' lists "
                                                        "those that do") and len(p.stderr) < 4096,
       'a 100 KB root: the reason comes through, the name shortened', p.stderr[-300:])
    bad = os.path.join(tmp, 'bad.folded')
    open(bad, 'wb').write(b'main;f 3\nma\0in;g 2\n')
    p = run([cppctl, 'import', '--folded', bad, '-r', 'cpu-time', '--db', db])
    ok(p.returncode == 1 and 'bad.folded:2: a NUL byte at byte 3' in p.stderr, 'a NUL byte: said so, with the line',
       say(p))
    open(bad, 'w').write('main;f 3\nmain;g 9223372036854775808\n')
    p = run([cppctl, 'import', '--folded', bad, '-r', 'cpu-time', '--db', db])
    ok(p.returncode == 1 and 'bad.folded:2: a count past 9223372036854775807' in p.stderr,
       'a count out of range: said so, with the line', say(p))


def clickhouse_without_server(tmp):
    """What cppctl refuses before it asks ClickHouse, and what it prints of what a server says."""
    url = 'clickhouse://127.0.0.1:1/fleet'     # nothing listens on port 1
    # A FIFO as the credentials file: cppctl sql waited in open() for ever.
    fifo = os.path.join(tmp, 'ch-fifo')
    os.mkfifo(fifo, 0o600)
    try:
        p = run([cppctl, 'sql', '--credentials', fifo, url, 'SELECT 1'], timeout=20)
        ok(p.returncode == 1 and 'cannot open the credentials file %s: not a regular file' % fifo in p.stderr,
           'a FIFO as the credentials file: refused at once, not waited on', say(p))
    except subprocess.TimeoutExpired:
        ok(False, 'a FIFO as the credentials file: refused at once, not waited on (cppctl still waits after 20 s)')
    # A credentials file of another user, mode 600: root reads it, but that user may change it.
    secret = os.path.join(tmp, 'ch-secret')
    fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, b'cppd\ns3cret-pw\n')
    os.close(fd)
    if os.geteuid() != 0:
        ok(True, 'a credentials file of another user # SKIP chown needs root')
    else:
        os.chown(secret, 65534, 65534)
        p = run([cppctl, 'sql', '--credentials', secret, url, 'SELECT 1'])
        ok(p.returncode == 1 and 'the credentials file %s belongs to another user' % secret in p.stderr and
           's3cret' not in p.stderr, 'a credentials file of another user (mode 600): refused', say(p))
    # A password in the URL: refused, and never echoed.
    for argv in (['sql', 'clickhouse://ops:s3cret-pw@127.0.0.1:1/fleet', 'SELECT 1'],
                 ['functions', '--db', 'clickhouse://ops:s3cret-pw@127.0.0.1:1/fleet'],
                 ['merge', '-o', 'clickhouse://ops:s3cret-pw@127.0.0.1:1/fleet', 'x.db']):
        p = run([cppctl] + argv)
        ok(p.returncode != 0 and 's3cret' not in p.stderr + p.stdout and 'clickhouse://ops:***@127.0.0.1:1/fleet' in
           p.stderr and 'a password in the URL' in p.stderr,
           'cppctl %s with a password in the URL: refused, shown as ops:***@' % argv[0], say(p))
    # KILL and SYSTEM pass ClickHouse's readonly=1: refused here, before anything is sent.
    for stmt, word in (('KILL QUERY WHERE 1', 'KILL'), ('  /* x */ -- y\n system DROP DNS CACHE', 'SYSTEM'),
                       ('kill mutation where 1', 'KILL')):
        p = run([cppctl, 'sql', url, stmt])
        ok(p.returncode == 2 and 'cppctl sql is read-only: %s refused' % word in p.stderr and
           'Cannot reach' not in p.stderr, 'sql refuses %r (exit 2)' % stmt, say(p))
    p = run([cppctl, 'sql', url, 'SELECT killed, system_name FROM t'])
    ok(p.returncode == 1 and 'Cannot reach ClickHouse at 127.0.0.1:1' in p.stderr,
       'a SELECT naming kill... and system... columns goes through', say(p))

    # A server whose error page is full of terminal escapes: an ESC reached the terminal.
    answer = [500, b'Code: 999. \x1b[2J\x1b]0;pwned\x07 \x9b31m evil\r\nsecond line\n']

    class Evil(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            sql = self.rfile.read(int(self.headers.get('Content-Length', 0)))
            # cppctl asks for the fleet schema's version first: version 1, once the errors are done.
            status, body = answer if answer[0] != 200 or b'schema_version' not in sql else (200, b'1\n')
            self.send_response(status)
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Evil)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        p = subprocess.run([cppctl, 'sql', 'clickhouse://127.0.0.1:%d/fleet' % server.server_port, 'SELECT 1'],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        err = p.stderr
        ok(p.returncode == 1 and b'\x1b' not in err and b'\x07' not in err and b'\x9b' not in err and
           b'answered 500: Code: 999. \\x1b[2J\\x1b]0;pwned\\x07 \\x9b31m evil\\x0d' in err,
           'a server\'s control characters reach the terminal escaped (\\x1b), never raw', repr(err))
        # An answer that is no table with names and types: its types line has a column too many.
        answer[:] = [200, b'one\ttwo\nString\tUInt8\tString\n1\t2\n']
        p = run([cppctl, 'sql', 'clickhouse://127.0.0.1:%d/fleet' % server.server_port, 'SELECT 1'])
        ok(p.returncode == 1 and 'answered in a form cppctl cannot read' in p.stderr,
           'an answer whose types line has a column too many: said so', say(p))
    finally:
        server.shutdown()


def main():
    tmp = tempfile.mkdtemp(prefix='cppd-cli-')
    os.chmod(tmp, 0o755)
    try:
        parts = (until_zero, endless_lines, output_never_a_store, record_status, counts_bounded, perf_advice, read_only_stores, sql_streams, errors_name_cause,
                 clickhouse_without_server)
        # CPPD_CLI_PARTS=until_zero,... runs only those.
        chosen = os.environ.get('CPPD_CLI_PARTS', '').split(',')
        for part in [p for p in parts if p.__name__ in chosen] if chosen != [''] else parts:
            part(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(done())


if __name__ == '__main__':
    main()
