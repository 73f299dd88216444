#!/usr/bin/env python3
"""The fleet store sharded over two ClickHouse servers, set up as schemas/README.md ("Sharding
over several servers") says, with the statements of its sql block: a cluster `fleet` of two
shards, the local tables in fleet_local on each, Distributed tables over them in fleet. Loaded
with `cppctl merge -o` (two recordings and a folded import, three hosts) and shipped by two
daemons of their own host names, one to each server: each shard holds some hosts, every hit and
every batch marker is there once, each shard rolls up its own samples (a Distributed table over
the rollups), loading again sends nothing, and every view over either server, from the rollups
and from the raw samples, equals the same over the SQLite stores merged and over one plain
server loaded alike.

Usage: test-fleet-shards.py CPPD CPPCTL WORKLOADS_DIR SCHEMAS_DIR"""
import difflib
import glob
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

import clickhouse
from clickhouse import ClickHouse
from daemon import Daemon, store_query, wait_for
from tap import done, ok, skip_all

cppd, cppctl, workloads, schemas = (os.path.abspath(a) for a in sys.argv[1:5])

# Host names whose cityHash64 puts some on each shard (the test checks it does).
HOSTS = ('web1', 'web2', 'web3')
SHIPPERS = ('ship1', 'ship2')


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def workload(name):
    return os.path.join(workloads, name)


def statements(text):
    """The statements of SQL TEXT, as cppd sends them (ch-schema.c): split at ';' ending a line,
    whole-line comments left out."""
    out = []
    for stmt in text.split(';\n'):
        lines = [line for line in stmt.splitlines() if not line.strip().startswith('--')]
        stmt = '\n'.join(lines).strip().rstrip(';')
        if stmt:
            out.append(stmt)
    return out


def readme_sql():
    """The sql block of schemas/README.md's "Sharding over several servers": what the test runs."""
    text = open(os.path.join(schemas, 'README.md')).read()
    m = re.search(r'^### Sharding over several servers\n.*?^```sql\n(.*?)^```', text, re.S | re.M)
    return m.group(1) if m else ''


def setup_shard(ch, readme):
    """The local tables (the schema's sources with {db} = fleet_local), then README's statements."""
    for path in sorted(glob.glob(os.path.join(schemas, 'clickhouse', '*.sql'))):
        for stmt in statements(open(path).read()):
            ch.query(stmt.replace('{db}', 'fleet_local'))
    for stmt in statements(readme):
        ch.query(stmt)


def set_host_unit(db, host, unit):
    with sqlite3.connect(db) as c:
        c.execute('UPDATE run SET host = ?', (host,))
        c.execute('UPDATE process SET unit = ?', (unit,))


def sqlite_sum(db, resource):
    return store_query(db, 'SELECT coalesce(sum(s.hits), 0) FROM sample AS s JOIN resource AS r '
                       'ON r.id = s.resource_id WHERE r.name = ?', (resource,))[0][0]


def sqlite_batches(db):
    return store_query(db, 'SELECT count(*) FROM (SELECT DISTINCT p.run_id, s.bucket FROM sample AS s JOIN thread '
                       'AS t ON t.id = s.thread_id JOIN process AS p ON p.id = t.process_id)')[0][0]


def record_stores():
    """web1 and web2 recorded (page faults at two periods, units set), web3 folded stacks with
    names TabSeparated escapes; as test-fleet.py."""
    p = run([cppctl, 'record', '-q', '--lines', '--db', 'web1.db', '-e', 'cpu-time,page-faults/4', '--',
             workload('process_db-nofp')])
    if not ok(p.returncode == 0, 'record process_db as host web1', p.stderr.decode()):
        return False
    p = run([cppctl, 'record', '-q', '--lines', '--db', 'web2.db', '-e', 'cpu-time,page-faults/1', '--',
             workload('cxxnames')])
    if not ok(p.returncode == 0, 'record cxxnames as host web2', p.stderr.decode()):
        return False
    set_host_unit('web1.db', 'web1', 'db.service')
    set_host_unit('web2.db', 'web2', 'web.service')
    with open('odd.folded', 'w') as f:
        f.write('main;back\\slash;tab\there;quote\'s 7\nmain;semi colon;tab\there 5\nmain;work 3\n')
    p = run([cppctl, 'import', '--folded', 'odd.folded', '--db', 'web3.db', '-r', 'cpu-time', '--host', 'web3',
             '--period', '3', '--time', '@1700000000'])
    return ok(p.returncode == 0, 'import folded stacks as host web3', p.stderr.decode())


def fleet_conf(ch, spool):
    return '\n[fleet]\nurl = %s\ncredentials = %s\nspool = %s\n' % (ch.url('fleet'), ch.credentials, spool)


def fleet_status(d):
    """cppd's fleet status line as a dict ({} if cppd does not answer)."""
    try:
        return d.status_lines().get('fleet', {})
    except OSError:
        return {}


def ship(tmp, servers):
    """Two daemons, each under its own host name (a UTS namespace of its own), each shipping to
    one server while a workload runs; stopped once batches went out. Returns their stores."""
    daemons, stores = [], []
    try:
        for name, ch in zip(SHIPPERS, servers):
            wrapper = ('unshare', '--uts', 'sh', '-c', 'hostname %s && exec "$@"' % name, 'sh')
            # python = no: the machine's Python processes (this test among them) would put
            # "Python frames in N samples" in the SQLite views' headers, which ClickHouse's
            # run_resources do not carry (schemas/README.md), and the views are compared byte
            # for byte.
            daemons.append(Daemon(cppd, tmp, name, resources='cpu-time/1', wrapper=wrapper,
                                  extra='python = no\n' + fleet_conf(ch, os.path.join(tmp, name + '.spool'))))
        for d, name in zip(daemons, SHIPPERS):
            if not ok(d.ready(), 'cppd as host %s ships to a server of the cluster' % name, d.log_text()):
                return []
        w = subprocess.Popen([workload('recursive-fp'), '12', '200'], stdout=subprocess.DEVNULL)
        w.wait()
        for d, name in zip(daemons, SHIPPERS):
            st = wait_for(lambda: fleet_status(d) if int(fleet_status(d).get('sent', 0)) >= 2 else None, 20)
            st = st or fleet_status(d)
            ok(int(st.get('sent', 0)) >= 2 and st.get('last_error') == '',
               '%s sent batches through the Distributed tables' % name, st)
        for d, name in zip(daemons, SHIPPERS):
            d.stop()
            ok(os.WIFEXITED(d.status) and os.WEXITSTATUS(d.status) == 0, '%s stops cleanly' % name, d.log_text())
            stores.append(d.store)
    finally:
        for d in daemons:
            d.stop()
    return stores


def main():
    if os.geteuid() != 0:
        skip_all('needs root (system-wide perf events, a UTS namespace per daemon)')
    clickhouse.skip_unless_installed()
    readme = readme_sql()
    if not ok(readme and 'Distributed(fleet' in readme, "schemas/README.md's sharding statements found"):
        return done()
    if subprocess.run(['mountpoint', '-q', '/sys/kernel/tracing']).returncode != 0:
        subprocess.run(['mount', '-t', 'tracefs', 'nodev', '/sys/kernel/tracing'])
    with tempfile.TemporaryDirectory(prefix='cppd-fleet-shards-') as tmp:
        os.chdir(tmp)
        if not record_stores():
            return done()
        a, b = ClickHouse(tmp, 'a'), ClickHouse(tmp, 'b')
        for ch in (a, b):
            ch.cluster('fleet', [a, b], {'insert_distributed_sync': 1})
        try:
            a.start()
            b.start()
        except RuntimeError as e:
            ok(False, 'start two clickhouse-servers', str(e))
            a.stop()
            return done()
        try:
            for ch in (a, b):
                setup_shard(ch, readme)
            ok(True, "README's statements run on both servers")
            check(tmp, a, b)
        finally:
            os.chdir('/')
            a.stop()
            b.stop()
    return done()


def total(ch):
    """The hits of each resource, summed over the Distributed table from server CH."""
    return {r: int(ch.query("SELECT sum(hits) FROM fleet.samples WHERE resource = '%s'" % r) or 0)
            for r in ('cpu-time', 'page-faults')}


def check(tmp, a, b):
    cred = ['--credentials', a.credentials]
    ua, ub = a.url('fleet'), b.url('fleet')
    shippers = ship(tmp, (a, b))
    if not shippers:
        return
    stores = ['web1.db', 'web2.db', 'web3.db']
    # Everything through server a: the daemons' batches are found, whichever server they went
    # through; what a daemon had not sent when it stopped is sent now (doc/fleet.md's way to
    # fill a hole).
    everything = stores + shippers
    p = run([cppctl, 'merge', '-o', ua] + cred + everything)
    loaded = {os.path.basename(m[0]): (int(m[1]), int(m[2])) for m in re.findall(
        r'^Loaded (\S+) into .*?: (\d+) batch(?:es)? sent .*?, (\d+) already there', p.stdout.decode(), re.M)}
    ok(p.returncode == 0 and all(loaded.get(db, (0, 1))[1] == 0 for db in stores) and
       all(loaded.get(os.path.basename(db), (0, 0))[1] >= 2 for db in shippers),
       'cppctl merge -o through server a: the three stores sent, the batches the daemons shipped through '
       'either server found there %s' % loaded, p.stdout.decode() + p.stderr.decode())
    p = run([cppctl, 'merge', '--db', 'merged.db'] + everything)
    ok(p.returncode == 0, 'cppctl merge of the five SQLite stores', p.stderr.decode())
    # One plain server's answer: the same stores into a database of server a made by cppctl.
    p = run([cppctl, 'merge', '-o', a.url('single')] + cred + everything)
    ok(p.returncode == 0, 'and into one plain database', p.stderr.decode())

    # Sharded by host: each host's rows on one shard, some on each.
    where = {}
    for name, ch in (('a', a), ('b', b)):
        for h in ch.query('SELECT DISTINCT host FROM fleet_local.samples').split():
            where.setdefault(h, []).append(name)
    ok(sorted(where) == sorted(HOSTS + SHIPPERS) and all(len(v) == 1 for v in where.values()) and
       {v[0] for v in where.values()} == {'a', 'b'}, 'each host\'s samples on one shard, some on each', where)
    markers = {name: ch.query('SELECT DISTINCT host FROM fleet_local.batches ORDER BY host').split()
               for name, ch in (('a', a), ('b', b))}
    ok(all(sorted(markers[s]) == sorted(h for h, v in where.items() if v == [s]) for s in markers),
       'each host\'s batch markers on the shard of its samples', (markers, where))
    # Stacks by hash: on both shards, so that a shard's samples name stacks on the other, which a
    # plain IN (each shard's stacks against its own samples) would lose.
    stacks = [int(ch.query('SELECT count() FROM fleet_local.stacks')) for ch in (a, b)]
    elsewhere = [int(ch.query('SELECT count() FROM fleet_local.samples WHERE stack NOT IN '
                              '(SELECT hash FROM fleet_local.stacks)')) for ch in (a, b)]
    ok(all(stacks) and all(elsewhere), 'stacks on both shards (%d, %d), samples on each whose stacks are on the '
       'other (%d, %d rows)' % tuple(stacks + elsewhere))
    expect = {r: sum(sqlite_sum(db, r) for db in everything) for r in ('cpu-time', 'page-faults')}
    for name, ch in (('a', a), ('b', b)):
        ok(total(ch) == expect, 'every hit once, summed over the Distributed table from server %s' % name,
           (total(ch), expect))
    # The rollups: each shard's view rolled up the samples that landed there, and the
    # Distributed table over them holds every hit once.
    rolled = [(ch.query('SELECT resource, sum(hits) FROM fleet_local.samples GROUP BY resource ORDER BY resource'),
               ch.query('SELECT resource, sum(sum_hits) FROM fleet_local.samples_hourly GROUP BY resource '
                        'ORDER BY resource')) for ch in (a, b)]
    ok(all(x == y and x for x, y in rolled), 'each shard\'s rollups hold its own samples\' hits', rolled)
    for name, ch in (('a', a), ('b', b)):
        got = {r: int(ch.query("SELECT sum(sum_hits) FROM fleet.samples_hourly WHERE resource = '%s'" % r) or 0)
               for r in expect}
        ok(got == expect, 'every hit once in the rollups, summed over their Distributed table from server %s'
           % name, (got, expect))
    n = sum(sqlite_batches(db) for db in everything)
    ok(a.query('SELECT count(), uniqExact(host, run, batch) FROM fleet.batches') == '%d\t%d\n' % (n, n),
       'every batch marker once: %d' % n, a.query('SELECT count(), uniqExact(host, run, batch) FROM fleet.batches'))

    # Loading again, through either server: every batch is found, nothing is sent.
    for name, url in (('a', ua), ('b', ub)):
        p = run([cppctl, 'merge', '-o', url] + cred + everything)
        out = p.stdout.decode()
        ok(p.returncode == 0 and out.count('0 batches sent') == len(everything) and total(a) == expect,
           'loading the five stores again through server %s sends nothing' % name, out + p.stderr.decode())

    check_views([ua, ub, a.url('single')], cred)
    check_questions(a, b)

    # cppctl symbolize through server a: its names table is README's Distributed one, read by
    # the views of either server (the queries of kept names cross the shards: GLOBAL IN).
    p = run([cppctl, 'symbolize', '--db', ua] + cred)
    kept = [int(ch.query('SELECT count() FROM fleet_local.names')) for ch in (a, b)]
    named = re.search(rb'^named (\d+) of', p.stdout, re.M)
    ok(p.returncode == 0 and (b'nothing to name' in p.stdout or (named and int(named.group(1)) == sum(kept))),
       'cppctl symbolize through server a: the names it found on the shards (%d, %d)' % tuple(kept),
       p.stdout.decode() + p.stderr.decode())
    same(['functions', '-t', '0', '-r', 'cpu-time'], [ua, ub], cred, 'after symbolize: functions equals over both '
         'servers')


def questions():
    """doc/fleet.md's fleet questions, asked of the fleet's hosts: its unit and call path made
    ones these stores hold, every row kept (LIMIT 1000: no tie cut at the limit)."""
    text = open(os.path.join(schemas, '..', 'doc', 'fleet.md')).read()
    out = []
    for sql in re.findall(r'^```sql\n(.*?)^```', text, re.S | re.M):
        if 'FROM samples' in sql:
            sql = re.sub(r'LIMIT \d+', 'LIMIT 1000', sql.replace('nginx.service', 'db.service'))
            out.append(sql.replace(';main;handle_request;', ';main;'))
    return out


def check_questions(a, b):
    """Each question's answer through either server of the cluster equals one plain server's."""
    qs = questions()
    ok(len(qs) == 3, "doc/fleet.md's three fleet questions found", qs)
    for i, sql in enumerate(qs):
        one = sorted(a.query(sql, db='single').splitlines())
        both = [sorted(ch.query(sql, db='fleet').splitlines()) for ch in (a, b)]
        ok(one and both == [one, one], "doc/fleet.md's question %d: the same rows over the shards as over one "
           "server (%d rows)" % (i + 1, len(one)), (one[:5], both[0][:5], both[1][:5]))


RAW = dict(os.environ, CPPD_CLICKHOUSE_ROLLUPS='0')


def same(args, urls, cred, what, rcs=(0,)):
    """cppctl ARGS over the merged SQLite store and over each of URLS, from the rollups and (the
    first URL) from the raw samples only: equal outputs."""
    a = run([cppctl] + args + ['--db', 'merged.db'])
    sa = a.stdout.replace(b'merged.db', b'STORE') + a.stderr.replace(b'merged.db', b'STORE')
    detail, good = '', a.returncode in rcs and sa
    for url, env in [(u, None) for u in urls] + [(urls[0], RAW)]:
        b = run([cppctl] + args + ['--db', url] + cred, env=env)
        sb = b.stdout.replace(url.encode(), b'STORE') + b.stderr.replace(url.encode(), b'STORE')
        if a.returncode != b.returncode or sa != sb:
            good = False
            detail += '%s: rc %d %d\n%s%s\n' % (url, a.returncode, b.returncode, a.stderr.decode(), b.stderr.decode())
            detail += '\n'.join(difflib.unified_diff(sa.decode(errors='replace').splitlines(),
                                                     sb.decode(errors='replace').splitlines(), lineterm='', n=1))
    return ok(good, what, detail[:6000])


VIEWS = [
    ['functions', '-t', '0'],
    ['functions', '--json', '-t', '0'],
    ['down', '--root', 'main', '-t', '0'],
    ['up', '--root', 'main', '-t', '0'],
    ['tree', '-t', '0'],
    ['export', '--format', 'folded'],
]

FILTERS = [
    ['--host', 'web1'],
    ['--host', 'web2'],
    ['--host', 'ship1'],
    ['--unit', 'db.service'],
    ['--unit', 'web.service', '--host', 'web2'],
    ['--since', '@1699999980', '--until', '@1699999981'],
    ['--since', '@1699999200', '--until', '@1700002800'],
    ['--since', '-2h'],
]


def check_views(urls, cred):
    # A page fault in main is luck (the programs fault in what they call, and built with ASan
    # otherwise than without): rooted there, both may refuse, alike.
    for resource in ('cpu-time', 'page-faults'):
        for view in VIEWS:
            rcs = (0, 3) if resource == 'page-faults' and '--root' in view else (0,)
            same(view + ['-r', resource], urls, cred, '%s -r %s equals over both servers and one'
                 % (' '.join(view), resource), rcs=rcs)
    for f in FILTERS:
        for view in (['functions', '-t', '0'], ['down', '--root', 'main', '-t', '0']):
            same(view + ['-r', 'cpu-time'] + f, urls, cred, '%s %s equals over both servers and one'
                 % (' '.join(view), ' '.join(f)), rcs=(0, 3))
    same(['diff', '--base-host', 'web1', '--host', 'web2', '-r', 'page-faults'], urls, cred,
         'diff of two hosts on two shards equals')
    same(['diff', '--base-host', 'ship1', '--host', 'ship2', '-r', 'cpu-time'], urls, cred,
         'diff of the two shippers equals')
    same(['diff', '--base-unit', 'db.service', '--unit', 'web.service', '-r', 'cpu-time', '--json'], urls, cred,
         'diff of two units equals')
    session = b'resource cpu-time\nroot main\nthreshold 0\ndown\nfilter host=web2\nfunctions\nup\n'
    a = run([cppctl, 'shell', '--db', 'merged.db'], input=session)
    good = a.returncode == 0
    for url in urls:
        b = run([cppctl, 'shell', '--db', url] + cred, input=session)
        good = good and b.returncode == 0 and \
            a.stdout.replace(b'merged.db', b'S') == b.stdout.replace(url.encode(), b'S')
    ok(good, 'a shell session equals over both servers and one')


if __name__ == '__main__':
    sys.exit(main())
