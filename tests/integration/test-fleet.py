#!/usr/bin/env python3
"""The ClickHouse fleet store against a private clickhouse-server: two recordings and a folded
import under three host names loaded with `cppctl merge -o clickhouse://...`; every view, diff,
export and the shell over clickhouse:// equal, row for row, the same over `cppctl merge` of the
SQLite stores, with and without --host, --unit and the other filters; loading twice counts once;
cppctl sql passes reads and refuses writes; bad URLs, a refused connection, an HTTP error, a
schema of another version and bad credentials give clear errors.

Usage: test-fleet.py CPPCTL WORKLOADS_DIR"""
import atexit
import difflib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clickhouse  # noqa: E402
from tap import done, ok, skip_all  # noqa: E402

cppctl, workloads = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
clickhouse.skip_unless_installed()


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def workload(name):
    return os.path.join(workloads, name)


def record(db, resources, command):
    return run([cppctl, 'record', '-q', '--lines', '--db', db, '-e', resources, '--'] + command)


def set_host_unit(db, host, unit):
    """Names the recording's host and unit, as a daemon on that host under that unit would."""
    with sqlite3.connect(db) as c:
        c.execute('UPDATE run SET host = ?', (host,))
        c.execute('UPDATE process SET unit = ?', (unit,))


def sqlite_sum(db, resource):
    with sqlite3.connect(db) as c:
        return c.execute('SELECT coalesce(sum(s.hits), 0) FROM sample AS s JOIN resource AS r '
                         'ON r.id = s.resource_id WHERE r.name = ?', (resource,)).fetchone()[0]


def main():
    # The recordings need perf events, as test-record.py's do.
    if os.geteuid() != 0 and int(open('/proc/sys/kernel/perf_event_paranoid').read()) > 1:
        skip_all('needs root, or perf_event_paranoid <= 1 (the recordings)')
    tmp = tempfile.mkdtemp(prefix='cppd-fleet-views-')
    atexit.register(shutil.rmtree, tmp, True)
    os.chdir(tmp)
    web1, web2, web3 = 'web1.db', 'web2.db', 'web3.db'

    # Two hosts' recordings: page faults at different periods, so the fleet's tree is weighted by
    # their gcd; call sites kept (--lines) so --by line has something to show. cxxnames faults in
    # main at least once (on a page of its own), every fault sampled: but a recording thinned
    # under load (the sanitizer build beside others) may keep none of those one or two, so the
    # checks that must have main's faults (the shell session) look at web1's hundreds.
    p = record(web1, 'cpu-time,page-faults/4', [workload('process_db-nofp')])
    if not ok(p.returncode == 0, 'record process_db as host web1', p.stderr.decode()):
        return done()
    p = record(web2, 'cpu-time,page-faults/1', [workload('cxxnames')])
    if not ok(p.returncode == 0, 'record cxxnames (C++ names) as host web2', p.stderr.decode()):
        return done()
    set_host_unit(web1, 'web1', 'db.service')
    set_host_unit(web2, 'web2', 'web.service')
    # A third host's folded stacks whose names hold what TabSeparated must escape.
    with open('odd.folded', 'w') as f:
        f.write('main;back\\slash;tab\there;quote\'s 7\nmain;semi colon;tab\there 5\nmain;work 3\n')
    p = run([cppctl, 'import', '--folded', 'odd.folded', '--db', web3, '-r', 'cpu-time', '--host', 'web3',
             '--period', '3', '--time', '@1700000000'])
    ok(p.returncode == 0, 'import folded stacks with tabs, backslashes and quotes as host web3', p.stderr.decode())

    p = run([cppctl, 'merge', '--db', 'merged.db', web1, web2, web3])
    if not ok(p.returncode == 0, 'cppctl merge of the three SQLite stores', p.stderr.decode()):
        return done()

    try:
        ch = clickhouse.ClickHouse(tmp)
        ch.start()
    except RuntimeError as e:
        ok(False, 'start clickhouse-server', str(e))
        return done()
    try:
        check_fleet(ch)
    finally:
        ch.stop()
    return done()


def check_fleet(ch):
    url = ch.url('fleet')
    cred = ['--credentials', ch.credentials]
    env = dict(os.environ, CPPD_CLICKHOUSE_CREDENTIALS=ch.credentials)

    p = run([cppctl, 'merge', '-o', url] + cred + ['web1.db', 'web2.db', 'web3.db'])
    ok(p.returncode == 0, 'cppctl merge -o clickhouse://... loads the three stores', p.stderr.decode())
    out = p.stdout.decode()
    ok(out.count('batch sent') + out.count('batches sent') == 3 and ', 0 already there' in out,
       'each store sent its batches', out)
    totals = {r: int(ch.query("SELECT sum(hits) FROM fleet.samples WHERE resource = '%s'" % r) or 0)
              for r in ('cpu-time', 'page-faults')}
    expect = {r: sum(sqlite_sum(db, r) for db in ('web1.db', 'web2.db', 'web3.db')) for r in totals}
    ok(totals == expect, 'ClickHouse holds every hit of the stores', (totals, expect))

    # Loading again: every batch is there already, nothing counts twice.
    p = run([cppctl, 'merge', '--db', url, 'web1.db', 'web2.db', 'web3.db'], env=env)
    again = {r: int(ch.query("SELECT sum(hits) FROM fleet.samples WHERE resource = '%s'" % r) or 0)
             for r in totals}
    ok(p.returncode == 0 and p.stdout.decode().count('0 batches sent') == 3 and again == totals,
       'loading the same stores again (--db URL, credentials from the environment) sends nothing',
       p.stdout.decode() + p.stderr.decode() + str(again))
    # The marker gone (a send that died before writing it): the samples are found, not doubled.
    ch.query("ALTER TABLE fleet.batches DELETE WHERE host = 'web3'")
    # A mutation runs in the background: the marker is gone once ClickHouse says so.
    end = time.monotonic() + 60
    while ch.query("SELECT count() FROM fleet.batches WHERE host = 'web3'").strip() != '0' and time.monotonic() < end:
        time.sleep(0.1)
    p = run([cppctl, 'merge', '-o', url] + cred + ['web3.db'])
    again = int(ch.query("SELECT sum(hits) FROM fleet.samples WHERE resource = 'cpu-time'"))
    markers = ch.query("SELECT count() FROM fleet.batches WHERE host = 'web3'").strip()
    ok(p.returncode == 0 and again == totals['cpu-time'] and markers == '1',
       'a batch whose marker is missing is completed without sending its samples twice',
       p.stdout.decode() + p.stderr.decode() + ' %d %s' % (again, markers))

    check_views(url, cred)
    check_rollups(ch, url, cred)
    check_upgrade(ch, cred)
    check_sql(ch, url, cred)
    check_sql_bounded(url, cred)
    check_errors(ch, url, cred)


RAW = dict(os.environ, CPPD_CLICKHOUSE_ROLLUPS='0')


def same(args, url, cred, what, rcs=(0,)):
    """Runs cppctl ARGS over the merged SQLite store and over the fleet twice: from the rollups
    where the filters allow (the default) and from the raw samples only
    (CPPD_CLICKHOUSE_ROLLUPS=0). The three outputs must be equal, the store's name aside."""
    a = run([cppctl] + args + ['--db', 'merged.db'])
    sa = a.stdout.replace(b'merged.db', b'STORE') + a.stderr.replace(b'merged.db', b'STORE')
    good = a.returncode in rcs and sa
    detail = ''
    for path, env in (('rollups', None), ('raw', RAW)):
        b = run([cppctl] + args + ['--db', url] + cred, env=env)
        sb = b.stdout.replace(url.encode(), b'STORE') + b.stderr.replace(url.encode(), b'STORE')
        if a.returncode == b.returncode and sa == sb:
            continue
        good = False
        detail += '%s: rc %d %d\n%s%s\n' % (path, a.returncode, b.returncode, a.stderr.decode(), b.stderr.decode())
        detail += '\n'.join(difflib.unified_diff(sa.decode(errors='replace').splitlines(),
                                                 sb.decode(errors='replace').splitlines(), lineterm='', n=1))
    return ok(good, what, detail)


VIEWS = [
    ['functions', '-t', '0'],
    ['functions', '--json', '-t', '0'],
    ['functions', '--format', 'csv', '-t', '0'],
    ['body', '-t', '0'],
    ['down', '--root', 'main', '-t', '0'],
    ['up', '--root', 'main', '-t', '0'],
    ['tree', '-t', '0'],
    ['tree', '--json', '-t', '0'],
    ['graph', '-t', '0'],
    ['export', '--format', 'folded'],
    ['export', '--format', 'pprof', '-o', '-'],
    ['export', '--format', 'speedscope', '-o', '-'],
    ['export', '--format', 'dot'],
]

FILTERS = [
    [],
    ['--host', 'web1'],
    ['--host', 'web2'],
    ['--unit', 'db.service'],
    ['--unit', 'web.service', '--host', 'web2'],
    ['--by', 'line'],
    ['--by', 'module'],
    ['--no-demangle'],
    ['--inline', 'fold'],
    ['--focus', 'main'],
    ['--ignore', 'msort'],
    ['--hide', '^_'],
    ['--comm', 'process_db-nofp'],
    ['--exe', 'cxxnames'],
    ['--no-idle'],
]


def check_views(url, cred):
    for resource in ('cpu-time', 'page-faults'):
        for view in VIEWS:
            same(view + ['-r', resource], url, cred, '%s -r %s equals over clickhouse://' % (' '.join(view), resource))
    for f in FILTERS:
        for view in (['functions', '-t', '0'], ['down', '--root', 'main', '-t', '0'], ['export', '--format', 'folded']):
            same(view + ['-r', 'page-faults'] + f, url, cred,
                 '%s %s equals over clickhouse://' % (' '.join(view), ' '.join(f)), rcs=(0, 3))
    # Time windows: web3's bucket starts at 1699999980 (imports use the minute of --time).
    # The rollups answer whole hours (1699999200 is one's start) and the raw samples the rest:
    # windows of whole hours, of parts at either end, of no whole hour, and past the ends.
    for window in (['--since', '@1699999980'], ['--until', '@1699999981'], ['--since', '@1699999981'],
                   ['--since', '@1600000000', '--until', '@1800000000'], ['--since', '-1h'],
                   ['--since', '@1699999200', '--until', '@1700002800'], ['--since', '@1699999200'],
                   ['--until', '@1700002800'], ['--since', '@1699999900', '--until', '@1700000100'],
                   ['--since', '@1699999000', '--until', '@1700006400'], ['--since', '-3h', '--until', 'now'],
                   ['--since', '@1699999200', '--until', '@1699999200'], ['--since', '@0'],
                   ['--until', '@5000000000']):
        same(['functions', '-r', 'cpu-time', '-t', '0'] + window, url, cred,
             'functions %s equals over clickhouse://' % ' '.join(window), rcs=(0, 3))
    same(['functions', '-r', 'cpu-time,page-faults', '-t', '0'], url, cred, 'functions -r A,B over clickhouse://')
    same(['functions', '--ratio', 'page-faults/cpu-time', '-t', '0'], url, cred,
         'functions --ratio over clickhouse://')
    same(['tree', '-r', 'cpu-time,page-faults', '--format', 'pprof', '-o', '-'], url, cred,
         'tree -r A,B --format pprof over clickhouse://')
    same(['diff', '--base-host', 'web1', '--host', 'web2', '-r', 'page-faults'], url, cred,
         'diff of two hosts equals over clickhouse://')
    same(['diff', '--base-host', 'web1', '--host', 'web2', '-r', 'page-faults', '--view', 'down',
          '--root', 'main'], url, cred, 'diff --view down equals over clickhouse://')
    same(['diff', '--base-unit', 'db.service', '--unit', 'web.service', '-r', 'cpu-time', '--json'], url, cred,
         'diff of two units, --json, equals over clickhouse://')
    same(['functions', '--host', 'web9'], url, cred, 'a host with no samples: the same refusal', rcs=(3,))
    # The shell: the same session, the same answers (rooted at main's page faults: web1's).
    session = b'resource page-faults\nroot main\nthreshold 0\ndown\nfilter host=web1\nfunctions\nup\n'
    a = run([cppctl, 'shell', '--db', 'merged.db'], input=session)
    b = run([cppctl, 'shell', '--db', url] + cred, input=session)
    ok(a.returncode == 0 and a.returncode == b.returncode and
       a.stdout.replace(b'merged.db', b'S') == b.stdout.replace(url.encode(), b'S'),
       'a shell session over clickhouse:// equals the same over the merged store',
       a.stderr.decode() + b.stderr.decode() + ''.join(difflib.unified_diff(
           a.stdout.replace(b'merged.db', b'S').decode().splitlines(True),
           b.stdout.replace(url.encode(), b'S').decode().splitlines(True), 'merged.db', 'clickhouse://')))
    p = run([cppctl, 'functions', '--db', url] + cred + ['-r', 'nonesuch'])
    ok(p.returncode == 1 and b'has no samples of resource' in p.stderr,
       'a resource the fleet does not hold is named', p.stderr.decode())


def rollup_sums(ch, db):
    """Per resource: the raw samples' (rows' hits, samples) against the rollups' sums."""
    raw = ch.query('SELECT resource, sum(hits), sum(samples) FROM %s.samples GROUP BY resource ORDER BY resource' % db)
    rolled = ch.query('SELECT resource, sum(sum_hits), sum(sum_samples) FROM %s.samples_hourly GROUP BY resource '
                      'ORDER BY resource' % db)
    return raw, rolled


def check_rollups(ch, url, cred):
    """The rollups hold every sample once, and the views read them: a row added to the rollups
    alone shows in the rollups' answer and not in the raw one."""
    raw, rolled = rollup_sums(ch, 'fleet')
    ok(raw == rolled and raw, 'the rollups hold every hit and sample of the samples once', (raw, rolled))
    row = ch.query("SELECT resource, unit, hour, stack, period, busy FROM fleet.samples_hourly "
                   "WHERE resource = 'page-faults' LIMIT 1").rstrip('\n')
    args = ['functions', '-r', 'page-faults', '-t', '0', '--db', url] + cred
    before = run([cppctl] + args).stdout
    ch.query('INSERT INTO fleet.samples_hourly FORMAT TabSeparated', row + '\t1000000\t1000000\t0\n')
    with_rollups, without = run([cppctl] + args).stdout, run([cppctl] + args, env=RAW).stdout
    ch.query('ALTER TABLE fleet.samples_hourly DELETE WHERE sum_hits = 1000000')
    end = time.monotonic() + 60
    while rollup_sums(ch, 'fleet')[1] != rolled and time.monotonic() < end:
        time.sleep(0.1)
    ok(with_rollups != before and without == before and run([cppctl] + args).stdout == before,
       'cppctl answers from the rollups, and from the raw samples with CPPD_CLICKHOUSE_ROLLUPS=0',
       (before, with_rollups, without))


def check_upgrade(ch, cred):
    """A version 1 database (no rollups) with the fleet's samples, upgraded by three writers at
    once while a shipper keeps sending batches into it: afterwards version 2, every hit in the
    rollups once (the back-filled ones, the shipper's, whichever side of the upgrade they fell),
    none lost, and the views as before, from the rollups and from the raw samples."""
    old = 'fleet_v1'
    old_url = ch.url(old)
    schema = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'schemas', 'clickhouse',
                          '0001-fleet.sql')
    for stmt in open(schema).read().split(';\n'):
        stmt = '\n'.join(line for line in stmt.splitlines() if not line.lstrip().startswith('--'))
        if stmt.strip():
            ch.query(stmt.replace('{db}', old))
    ch.query('INSERT INTO %s.schema_version VALUES (1, now())' % old)
    for t in ('runs', 'run_resources', 'stacks', 'samples', 'batches'):
        ch.query('INSERT INTO %s.%s SELECT * FROM fleet.%s' % (old, t, t))
    views = [['functions', '-r', 'cpu-time', '-t', '0'], ['functions', '-r', 'page-faults', '--unit', 'db.service'],
             ['down', '--root', 'main', '-r', 'page-faults', '-t', '0'], ['export', '--format', 'folded'],
             ['functions', '-r', 'cpu-time', '--since', '@1699999200', '--until', '@1700002800'],
             ['diff', '--base-unit', 'db.service', '--unit', 'web.service', '-r', 'cpu-time']]
    before = [run([cppctl] + v + ['--db', old_url] + cred) for v in views]
    ok(all(p.returncode == 0 for p in before), 'a version 1 database is read (from the raw samples)',
       b''.join(p.stderr for p in before).decode())

    # The shipper: batch after batch of a resource of its own, each sent again after a failure
    # unless its rows are there (the marker protocol's check), as cppd's shipper does.
    stack = ch.query("SELECT stack FROM fleet.samples LIMIT 1").strip()
    state = {'sent': 0, 'hits': 0, 'failures': 0, 'stop': False}

    def shipper():
        i = 0
        while not state['stop'] or i < state['stop']:
            i += 1
            while True:
                try:
                    ch.query("INSERT INTO %s.samples (time, host, run, batch, resource, period, unit, pid, tid, "
                             "stack, hits, samples) VALUES (%d, 'shipper', 1, %d, 'shipped', 1, 'ship.service', 1, "
                             "1, %s, %d, 1)" % (old, 1700000000 + 60 * i, i, stack, i))
                    break
                except (urllib.error.URLError, OSError):
                    state['failures'] += 1
                    time.sleep(0.02)
                    try:
                        if ch.query("SELECT count() FROM %s.samples WHERE host = 'shipper' AND batch = %d"
                                    % (old, i)).strip() != '0':
                            break
                    except (urllib.error.URLError, OSError):
                        pass
            state['sent'] = i
            state['hits'] += i

    th = threading.Thread(target=shipper)
    th.start()
    while state['sent'] < 20:
        time.sleep(0.01)
    writers = [subprocess.Popen([cppctl, 'merge', '-o', old_url] + cred + ['web3.db'], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE) for _ in range(3)]
    outs = [w.communicate() + (w.returncode,) for w in writers]
    upgraded_at = state['sent']
    while state['sent'] < upgraded_at + 20:
        time.sleep(0.01)
    state['stop'] = state['sent'] + 1
    th.join()
    busy = [o for o in outs if o[2] != 0]
    ok(len(busy) < 3 and all(b'being upgraded' in o[1] for o in busy),
       'three writers upgrade at once: one does, the others are told it is being upgraded and to come back',
       '\n'.join(o[1].decode() for o in outs))
    ok(ch.query('SELECT max(version) FROM %s.schema_version' % old).strip() == '2' and
       ch.query("SELECT name, engine FROM system.tables WHERE database = '%s' AND name LIKE 'samples%%' "
                "ORDER BY name" % old) == 'samples\tMergeTree\nsamples_hourly\tSummingMergeTree\n'
                                           'samples_hourly_mv\tMaterializedView\n',
       'the database is at version 2, its samples in place, the rollups beside them',
       ch.query("SELECT name, engine FROM system.tables WHERE database = '%s'" % old))
    shipped = ch.query("SELECT count(), sum(hits) FROM %s.samples WHERE resource = 'shipped'" % old).split()
    ok(shipped == [str(state['sent']), str(state['hits'])],
       'every batch shipped during the upgrade is in the samples once (%d batches, %d sent again)'
       % (state['sent'], state['failures']), (shipped, state))
    raw, rolled = rollup_sums(ch, old)
    ok(raw == rolled and 'shipped' in raw, 'the rollups hold every hit once: the back-filled and the shipped',
       (raw, rolled))
    for v, b in zip(views, before):
        for env in (None, RAW):
            a = run([cppctl] + v + ['--db', old_url] + cred, env=env)
            ok(a.returncode == b.returncode and a.stdout == b.stdout,
               '%s after the upgrade, from the %s, as before' % (' '.join(v), 'raw samples' if env else 'rollups'),
               a.stderr.decode() + '\n'.join(difflib.unified_diff(b.stdout.decode().splitlines(),
                                                                 a.stdout.decode().splitlines(), lineterm='')))
    p = run([cppctl, 'merge', '-o', old_url] + cred + ['web3.db'])
    ok(p.returncode == 0 and rollup_sums(ch, old) == (raw, rolled) and
       ch.query('SELECT max(version) FROM %s.schema_version' % old).strip() == '2',
       'a writer after the upgrade changes nothing', p.stderr.decode())
    ch.query('DROP DATABASE %s' % old)


def check_sql(ch, url, cred):
    p = run([cppctl, 'sql', url] + cred + ["SELECT host, sum(hits) AS hits FROM samples WHERE resource = 'cpu-time' "
                                          "GROUP BY host ORDER BY host"])
    with sqlite3.connect('merged.db') as c:
        rows = c.execute("SELECT host, sum(hits) FROM sample_text JOIN run ON run.id = run_id "
                         "WHERE resource = 'cpu-time' GROUP BY host ORDER BY host").fetchall()
    expect = 'host  hits\n----------\n' + ''.join('%s  %d\n' % r for r in rows)
    ok(p.returncode == 0 and p.stdout.decode() == expect, 'cppctl sql passes a read through; a table as for SQLite',
       p.stdout.decode() + p.stderr.decode() + expect)
    p = run([cppctl, 'sql', '--format', 'json', url] + cred + ["SELECT 'a\tb' AS s, 2 AS n, NULL AS z"])
    ok(p.returncode == 0 and p.stdout == b'[{"s": "a\\tb", "n": 2, "z": null}]\n', 'sql --format json: numbers, '
       'strings and NULL typed', p.stdout.decode() + p.stderr.decode())
    before = ch.query('SELECT count() FROM fleet.batches')
    for stmt in ("INSERT INTO batches VALUES ('x', 1, 2, 3, 4, now())", 'DROP TABLE samples',
                 'SET readonly = 0'):
        p = run([cppctl, 'sql', url] + cred + [stmt])
        ok(p.returncode == 2 and b'read-only' in p.stderr, 'sql refuses "%s"' % stmt.split()[0], p.stderr.decode())
    ok(ch.query('SELECT count() FROM fleet.batches') == before and 'samples' in ch.query('SHOW TABLES FROM fleet'),
       'nothing was written')
    p = run([cppctl, 'sql', url] + cred + ['SELECT throwIf(number = 3000000) AS x FROM system.numbers '
                                          'LIMIT 4000000'])
    ok(p.returncode == 1 and p.stdout == b'' and b'Code: 395' in p.stderr,
       'an error after a million rows fails the query, with no half answer', p.stderr.decode())
    long_sql = 'SELECT 1 AS one /* %s */' % ('x' * 100000)
    p = run([cppctl, 'sql', url] + cred + [long_sql])
    ok(p.returncode == 0 and p.stdout == b'one\n---\n1\n', 'a statement of 100 KB (sent as the body, not in the URL)',
       p.stderr.decode()[:300])
    p = run([cppctl, 'sql', url] + cred + ['SELEC 1'])
    ok(p.returncode == 1 and b'Syntax error' in p.stderr and b'answered 400' in p.stderr,
       'an HTTP error carries ClickHouse\'s own words', p.stderr.decode())


def check_sql_bounded(url, cred):
    """cppctl sql clickhouse:// held the whole answer, up to 1 GiB, before its first row: 20
    million rows now stream through a bounded memory, in the order they come."""
    rows = 20000000
    child = subprocess.Popen([cppctl, 'sql', '--format', 'csv', url] + cred +
                             ['SELECT number FROM system.numbers LIMIT %d' % rows],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    n, size, tail = 0, 0, b''
    for chunk in iter(lambda: child.stdout.read(1 << 20), b''):
        n += chunk.count(b'\n')
        size += len(chunk)
        tail = (tail + chunk)[-64:]
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    last = tail.rstrip(b'\r\n').rsplit(b'\n', 1)[-1]
    # cppctl's own memory is libcurl, its buffers and a line at a time.
    rss_mib = usage.ru_maxrss / 1024
    ok(child.returncode == 0 and n == rows + 1 and last == b'%d' % (rows - 1),
       'cppctl sql streams %d rows of ClickHouse\'s answer through' % rows, '%d lines, last %r\n%s' % (n, last, err))
    ok(rss_mib < 64, 'within a bounded memory: peak RSS %.1f MiB (< 64 MiB) for %.0f MiB of answer'
       % (rss_mib, size / 1048576))
    # One row past the bound on a line (16 MiB): stopped there, and said so.
    p = run([cppctl, 'sql', '--format', 'csv', url] + cred +
            ["SELECT number AS n, if(n = 2, arrayStringConcat(arrayMap(x -> 'xxxxxxxxxxxxxxxx', range(1100000))), "
             "'') AS big FROM system.numbers LIMIT 3"])
    ok(p.returncode == 1 and p.stdout.startswith(b'n,big\r\n0,\r\n1,\r\n') and
       b'answered a line longer than 16 MiB: cppctl stops there' in p.stderr,
       'a row of 17 MiB: the rows before it printed, then a true message', p.stdout[:100] + p.stderr[-300:])
    p = run([cppctl, 'sql', url] + cred + ['KILL QUERY WHERE 1'])
    ok(p.returncode == 2 and b'read-only: KILL refused' in p.stderr, 'sql refuses KILL QUERY, which readonly=1 allows',
       p.stderr.decode())
    p = run([cppctl, 'sql', url] + cred + ['SYSTEM DROP DNS CACHE'])
    ok(p.returncode == 2 and b'read-only: SYSTEM refused' in p.stderr, 'and SYSTEM', p.stderr.decode())


def check_errors(ch, url, cred):
    def err(args, what, *words, env=None):
        p = run([cppctl] + args, env=env)
        e = p.stderr.decode()
        return ok(p.returncode != 0 and all(w in e for w in words), what, '%d %s' % (p.returncode, e))

    port = ch.http
    err(['functions', '--db', 'clickhouse:/127.0.0.1/x'], 'a URL without // is no URL', 'clickhouse:/127.0.0.1/x')
    err(['functions', '--db', 'clickhouse://127.0.0.1:%d' % port], 'a URL without /DB', 'no database')
    err(['functions', '--db', 'clickhouse:///fleet'], 'a URL without a host', 'no host')
    err(['functions', '--db', 'clickhouse://127.0.0.1:99999/fleet'], 'a bad port', 'bad port')
    err(['functions', '--db', 'clickhouse://127.0.0.1:80a/fleet'], 'a port that is no number', 'bad port')
    err(['functions', '--db', 'clickhouse://127.0.0.1:%d/fl-eet' % port], 'a database name SQL cannot hold',
        'database name')
    err(['merge', '-o', 'http://127.0.0.1/x', 'web1.db'], 'merge -o of anything but a clickhouse:// URL',
        'never a store')
    free = clickhouse.free_port()
    err(['functions', '--db', 'clickhouse://127.0.0.1:%d/fleet' % free], 'a refused connection',
        'Cannot reach ClickHouse at 127.0.0.1:%d: connection refused' % free)
    err(['merge', '-o', 'clickhouse://no-such-host.invalid/fleet', 'web1.db'], 'an unknown host',
        'Cannot reach ClickHouse at no-such-host.invalid:8123: unknown host')
    err(['functions', '--db', ch.url('nosuchdb')] + cred, 'a database that does not exist',
        'has no cppd fleet database nosuchdb', "doesn't exist")
    # Credentials: another password, a file others may read, none at all.
    bad = os.path.join(os.path.dirname(ch.credentials), 'bad-credentials')
    fd = os.open(bad, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, b'cppd\nwrong\n')
    os.close(fd)
    err(['functions', '--db', url, '--credentials', bad], 'a wrong password: ClickHouse\'s words',
        'answered', 'assword')
    os.chmod(bad, 0o640)
    err(['functions', '--db', url, '--credentials', bad], 'a credentials file the group may read is refused',
        'chmod 600')
    err(['functions', '--db', url, '--credentials', bad + '.missing'], 'a missing credentials file is named',
        bad + '.missing')
    # Another schema version: refused with both versions named, and the tables left alone.
    ch.query('CREATE DATABASE v9')
    ch.query('CREATE TABLE v9.schema_version (version UInt32, applied DateTime) ENGINE = TinyLog')
    ch.query('INSERT INTO v9.schema_version VALUES (9, now())')
    err(['functions', '--db', ch.url('v9')] + cred, 'a newer fleet schema is refused (read)',
        'version 9', 'versions up to 2')
    err(['merge', '-o', ch.url('v9')] + cred + ['web1.db'], 'a newer fleet schema is refused (load)',
        'version 9', 'versions up to 2')
    ok(ch.query('SHOW TABLES FROM v9') == 'schema_version\n', 'the other version\'s database is left alone')
    # Two hosts that made the database at once each wrote the version; an upgrade adds a row:
    # the highest is the version.
    ch.query('INSERT INTO fleet.schema_version VALUES (2, now())')
    ch.query('INSERT INTO fleet.schema_version VALUES (1, now())')
    p = run([cppctl, 'functions', '--db', url] + cred)
    ok(p.returncode == 0, 'rows of versions 2, 2 and 1 are version 2', p.stderr.decode())
    ch.query('INSERT INTO v9.schema_version VALUES (1, now())')
    err(['functions', '--db', ch.url('v9')] + cred, 'versions 9 and 1 are version 9, refused', 'version 9')
    ch.query('CREATE TABLE v9.empty (version UInt32, applied DateTime) ENGINE = TinyLog')
    ch.query('DROP TABLE v9.schema_version')
    ch.query('RENAME TABLE v9.empty TO v9.schema_version')
    err(['functions', '--db', ch.url('v9')] + cred, 'a version table with no row is refused', 'holds no version')


if __name__ == '__main__':
    sys.exit(main())
