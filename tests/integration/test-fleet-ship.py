#!/usr/bin/env python3
"""cppd ships its closed time buckets to a private ClickHouse ([fleet] url): killed with SIGKILL
while batches go out and started again, ClickHouse ends up with every hit of the local store
exactly once (compared per run, resource, time bucket, thread and stack text); ClickHouse down
when cppd starts and up later: everything arrives; a tiny spool_max while ClickHouse is down:
the batches that did not fit are counted (batches and hits, in cppctl status, kept across a
restart) and nothing else is lost, and `cppctl merge -o` of the store fills the hole without
counting anything twice; a refused port, a wrong password and a database of another
schema version: a specific error in cppctl status, logged once however often it is tried; a bad
url in the configuration stops cppd with its line. Needs root (system-wide perf events) and
clickhouse-server; TAP.

Usage: test-fleet-ship.py CPPD CPPCTL WORKLOADS"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import clickhouse
from clickhouse import ClickHouse, free_port
from daemon import Daemon, run, store_query, wait_for
from tap import done, ok, skip_all

cppd, cppctl, workloads = sys.argv[1:4]


def fleet(url, credentials=None, spool=None, spool_max=None):
    """The [fleet] section (Daemon's EXTRA goes at the end of [collect]: a section may follow)."""
    text = '\n[fleet]\nurl = %s\n' % url
    if credentials:
        text += 'credentials = %s\n' % credentials
    if spool:
        text += 'spool = %s\n' % spool
    if spool_max:
        text += 'spool_max = %s\n' % spool_max
    return text


def status(d):
    """cppd's fleet status line as a dict ({} if there is none or cppd does not answer)."""
    try:
        return d.status_lines().get('fleet', {})
    except OSError:
        return {}


def decode(v):
    return re.sub(r'%([0-9A-Fa-f]{2})', lambda m: chr(int(m.group(1), 16)), v)


def workload(seconds):
    """A CPU-bound program for about SECONDS (recursive: 10 + 5 ms slices)."""
    return subprocess.Popen([os.path.join(workloads, 'recursive-fp'), '12', str(int(seconds * 1000 / 15))],
                            stdout=subprocess.DEVNULL)


def local_rows(db):
    """{(run, resource, bucket, pid, tid, stack text): (hits, samples)} of the SQLite store."""
    rows = store_query(db, 'SELECT p.run_id, r.name, s.bucket, p.pid, t.tid, st.text, sum(s.hits), '
                       'sum(s.samples) FROM sample AS s JOIN thread AS t ON t.id = s.thread_id '
                       'JOIN process AS p ON p.id = t.process_id JOIN resource AS r ON r.id = s.resource_id '
                       'JOIN stack_text AS st ON st.stack_id = s.stack_id GROUP BY 1, 2, 3, 4, 5, 6')
    return {tuple(r[:6]): (r[6], r[7]) for r in rows}


def remote_rows(ch, db='fleet'):
    """The same from ClickHouse, with the stack text from the stacks table (any row per hash).
    None sent (every batch too big for a small spool, on a loaded machine): no tables, no rows."""
    if ch.query("SELECT count() FROM system.tables WHERE database = '%s' AND name = 'samples'" % db).strip() == '0':
        return {}
    text = ch.query("SELECT run, resource, toUInt32(time), pid, tid, t, sum(hits), sum(samples) FROM %s.samples "
                    "ANY LEFT JOIN (SELECT hash AS stack, arrayStringConcat(any(functions), ';') AS t "
                    "FROM %s.stacks GROUP BY hash) USING stack "
                    "GROUP BY run, resource, time, pid, tid, t FORMAT TabSeparated" % (db, db))
    out = {}
    for line in text.splitlines():
        f = line.split('\t')
        t = f[5].replace('\\\\', '\\')
        out[(int(f[0]), f[1], int(f[2]), int(f[3]), int(f[4]), t)] = (int(f[6]), int(f[7]))
    return out


def compare(what, local, remote):
    """Every local row arrived with the same hits and samples, and nothing else did."""
    wrong = [(k, local.get(k), remote.get(k)) for k in set(local) | set(remote) if local.get(k) != remote.get(k)]
    total = sum(h for h, _ in local.values())
    ok(local and not wrong, '%s: ClickHouse has every hit of the store once (%d rows, %d hits)'
       % (what, len(local), total), '\n'.join(map(str, sorted(wrong, key=str)[:20])))


def duplicates(ch, db='fleet'):
    """Batch keys written more than once: the marker, and the samples rows of a key."""
    markers = ch.query('SELECT count() FROM (SELECT host, run, batch, count() AS n FROM %s.batches '
                       'GROUP BY host, run, batch HAVING n > 1)' % db).strip()
    return int(markers)


def drained(d):
    s = status(d)
    return s if s.get('pending') == '0' else None


def kill_restart(tmp):
    """SIGKILL ClickHouse while batches go out, start it again: every hit arrives once."""
    with ClickHouse(tmp, 'kill') as ch:
        d = Daemon(cppd, tmp, 'kill', resources='cpu-time/1', extra=fleet(ch.url(), ch.credentials))
        try:
            if not ok(d.ready(), 'cppd with [fleet] url starts', d.log_text()):
                return
            w = workload(12)
            ok(wait_for(lambda: int(status(d).get('sent', 0)) >= 3, 20), 'batches go out while ClickHouse is up',
               status(d))
            ch.kill()
            time.sleep(3)
            s = status(d)
            ok(int(s.get('pending', 0)) > 0 and 'Cannot reach ClickHouse' in decode(s.get('last_error', '')),
               'ClickHouse killed: batches wait in the spool, the error says ClickHouse cannot be reached', s)
            ch.start()
            w.wait()
            s = wait_for(lambda: drained(d), 90)
            ok(s and s.get('last_error') == '', 'ClickHouse back: the spool drains, the error clears', status(d))
            d.stop()
            ok(os.WIFEXITED(d.status) and os.WEXITSTATUS(d.status) == 0, 'cppd stops cleanly', d.log_text())
            log = d.log_text()
            # Once per kind of failure: a request cut by the kill may fail otherwise than the
            # refused connections after it, so at most two, for several tries.
            ok(1 <= log.count('Cannot ship to ClickHouse') <= 2 and log.count('takes batches again') == 1,
               'the failure is logged once per kind, not per try, and the recovery once', log)
            compare('killed and restarted', local_rows(d.store), remote_rows(ch))
            ok(duplicates(ch) == 0, 'each batch marker once')
        finally:
            d.stop()


def down_at_start(tmp):
    """ClickHouse down when cppd starts, up later; cppd restarted meanwhile: all arrives."""
    ch = ClickHouse(tmp, 'late')
    d = Daemon(cppd, tmp, 'late', resources='cpu-time/1', extra=fleet(ch.url(), ch.credentials))
    try:
        if not ok(d.ready(), 'cppd starts while its ClickHouse is down', d.log_text()):
            return
        w = workload(4)
        w.wait()
        time.sleep(2)
        s = status(d)
        ok(int(s.get('pending', 0)) > 0 and s.get('sent') == '0' and
           'Cannot reach ClickHouse at 127.0.0.1:%d' % ch.http in decode(s.get('last_error', '')),
           'ClickHouse down: batches wait, status names the address that refused', s)
        d.stop()
        spool = os.path.join(tmp, 'spool')
        files = [f for f in os.listdir(spool) if f.endswith('.batch')]
        ok(files, 'stopped with ClickHouse down: the batches stay in the spool (%d files)' % len(files))
        copies = os.path.join(tmp, 'copies')
        shutil.copytree(spool, copies)
        ch.start()
        d = Daemon(cppd, tmp, 'late', resources='cpu-time/1', extra=fleet(ch.url(), ch.credentials))
        if not ok(d.ready(), 'cppd started again', d.log_text()):
            return
        ok(wait_for(lambda: drained(d), 60), 'ClickHouse up: the spool left by the cppd before drains', status(d))
        d.stop()
        compare('down at start', local_rows(d.store), remote_rows(ch))

        # Every batch again, as after a try whose outcome cppd never learnt: with its marker
        # (nothing is inserted), and without (ClickHouse died between the samples and the
        # marker: only the marker is written).
        for f in files:
            shutil.copy(os.path.join(copies, f), spool)
        d = Daemon(cppd, tmp, 'late', resources='cpu-time/1', extra=fleet(ch.url(), ch.credentials))
        if ok(d.ready(), 'cppd with every batch in its spool again', d.log_text()):
            ok(wait_for(lambda: drained(d), 60), 'they drain', status(d))
        d.stop()
        compare('batches sent twice', local_rows(d.store), remote_rows(ch))
        ch.query('ALTER TABLE fleet.batches DELETE WHERE 1')
        ok(wait_for(lambda: ch.query('SELECT count() FROM fleet.batches').strip() == '0', 30),
           'every marker deleted (ALTER TABLE ... DELETE)')
        for f in files:
            shutil.copy(os.path.join(copies, f), spool)
        d = Daemon(cppd, tmp, 'late', resources='cpu-time/1', extra=fleet(ch.url(), ch.credentials))
        if ok(d.ready(), 'cppd with every batch in its spool again, their markers gone', d.log_text()):
            ok(wait_for(lambda: drained(d), 60), 'they drain', status(d))
        d.stop()
        compare('samples landed, markers lost, sent again', local_rows(d.store), remote_rows(ch))
        ok(duplicates(ch) == 0, 'each batch marker once')
    finally:
        d.stop()
        ch.stop()


def bound(tmp):
    """A spool of 64 KiB (a batch or two), ClickHouse down: what does not fit is counted, the
    rest arrives."""
    ch = ClickHouse(tmp, 'bound')
    spool = os.path.join(tmp, 'bound-spool')
    extra = fleet(ch.url(), ch.credentials, spool=spool, spool_max='64K')
    d = Daemon(cppd, tmp, 'bound', resources='cpu-time/10', extra=extra)
    try:
        if not ok(d.ready(), 'cppd with spool_max = 64K', d.log_text()):
            return
        # Until the spool overflows, however light the machine's load makes the batches.
        w = workload(30)
        wait_for(lambda: int(status(d).get('dropped', 0)) > 0, 30)
        w.kill()
        w.wait()
        time.sleep(1)
        s = status(d)
        ok(int(s.get('dropped', 0)) > 0 and int(s.get('dropped_hits', 0)) > 0 and
           int(s.get('pending_bytes', 0)) <= 64 * 1024, 'the spool full: batches dropped and counted with their hits', s)
        out = run([cppctl, 'status', '--socket', d.sock]).stdout
        m = re.search(r'dropped\s+(\d+) batches, (\d+) hits', out)
        ok(m and int(m.group(1)) >= int(s.get('dropped', 0)) > 0 and int(m.group(2)) >= int(s.get('dropped_hits', 0)),
           'cppctl status shows the drops', out)
        dropped_before = int(s.get('dropped', 0))
        d.stop()
        # Once each: the spool full (after which no batch is spooled until ClickHouse takes one),
        # and batches bigger than all of it (on a loaded machine a second's batch can pass 64 KiB).
        log = d.log_text()
        full, too_big = log.count('is full'), log.count('more than the whole fleet spool')
        ok(full <= 1 and too_big <= 1 and full + too_big >= 1,
           'the full spool is logged once (%d), and batches too big for it once (%d)' % (full, too_big), log)
        dropped_files = sum(1 for f in os.listdir(spool) if f.endswith('.batch'))
        ch.start()
        d = Daemon(cppd, tmp, 'bound', resources='cpu-time/10', extra=extra)
        if not ok(d.ready(), 'cppd started again', d.log_text()):
            return
        s = wait_for(lambda: drained(d), 60)
        ok(s and int(s.get('dropped', 0)) >= dropped_before > 0, 'the drops are kept across a restart', s)
        d.stop()
        # What the stop dropped too (its last buckets, with the spool still full): the state file.
        state = open(os.path.join(spool, 'state')).read()
        m = re.search(r'^dropped (\d+) (\d+)$', state, re.M)
        ok(m and int(m.group(1)) >= int(s.get('dropped', 0)), 'the drops are in the spool\'s state file', state)
        dropped_hits = int(m.group(2)) if m else -1
        local, remote = local_rows(d.store), remote_rows(ch)
        sent = {(k[0], k[2]) for k in remote}
        # What the stop left in the spool (its last buckets, if ClickHouse was slow to take
        # them within the drain) goes at the next start: not lost, and not counted dropped.
        left = {(int(m.group(2)), int(m.group(1))) for m in
                (re.match(r'(\d+)-(\d+)-.*\.batch$', f) for f in os.listdir(spool)) if m}
        missing = {k: v for k, v in local.items() if (k[0], k[2]) not in sent and (k[0], k[2]) not in left}
        compare('spool bound', {k: v for k, v in local.items() if (k[0], k[2]) in sent}, remote)
        ok(sum(h for h, _ in missing.values()) == dropped_hits,
           'the hits missing from ClickHouse are exactly those counted dropped (%d)' % dropped_hits,
           '%d missing, %d counted, %d files were spooled, left: %s\n%s'
           % (sum(h for h, _ in missing.values()), dropped_hits, dropped_files, sorted(left), d.log_text()))
        # The hole is still in the local store: loading the store fills it, counting nothing twice.
        p = run([cppctl, 'merge', '-o', ch.url(), '--credentials', ch.credentials, d.store], timeout=300)
        ok(p.returncode == 0, 'cppctl merge -o clickhouse:// of the store', p.stderr)
        compare('spool bound, then the store merged', local_rows(d.store), remote_rows(ch))
    finally:
        d.stop()
        ch.stop()


def errors(tmp):
    """Refused port, wrong password, another schema version: specific errors, logged once."""
    port = free_port()
    url = 'clickhouse://127.0.0.1:%d/fleet' % port
    d = Daemon(cppd, tmp, 'refused', resources='cpu-time/10', extra=fleet(url))
    try:
        if ok(d.ready(), 'cppd with a port where nothing listens', d.log_text()):
            w = workload(3)
            w.wait()
            # The first batch goes out once its bucket closes (3 s after its end), then tries.
            s = wait_for(lambda: status(d) if status(d).get('last_error') else None, 15) or {}
            ok('Cannot reach ClickHouse at 127.0.0.1:%d' % port in decode(s.get('last_error', '')),
               'refused: status names the address', s)
            out = run([cppctl, 'status', '--socket', d.sock]).stdout
            ok('failing' in out and 'last error' in out and url in out, 'cppctl status says it fails, and why', out)
            d.stop()
            ok(d.log_text().count('Cannot ship to ClickHouse') == 1, 'the refusal is logged once', d.log_text())
    finally:
        d.stop()

    with ClickHouse(tmp, 'errors') as ch:
        creds = os.path.join(tmp, 'wrong-credentials')
        fd = os.open(creds, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, 'w') as f:
            f.write('%s\nnot-the-password\n' % clickhouse.USER)
        d = Daemon(cppd, tmp, 'password', resources='cpu-time/10', extra=fleet(ch.url(), creds))
        try:
            if ok(d.ready(), 'cppd with a wrong password', d.log_text()):
                w = workload(3)
                w.wait()
                s = wait_for(lambda: status(d) if status(d).get('last_error') else None, 15) or {}
                err = decode(s.get('last_error', ''))
                ok(re.search(r'answered \d+', err) and re.search(r'password|Authentication|authenticat', err, re.I),
                   'wrong password: the HTTP status and ClickHouse\'s words (%s)' % err[:160], s)
        finally:
            d.stop()

        ch.query('CREATE DATABASE other')
        ch.query('CREATE TABLE other.schema_version (version UInt32, applied DateTime) ENGINE = TinyLog')
        ch.query('INSERT INTO other.schema_version VALUES (999, now())')
        d = Daemon(cppd, tmp, 'version', resources='cpu-time/10', extra=fleet(ch.url('other'), ch.credentials))
        try:
            if ok(d.ready(), 'cppd shipping to a database of schema version 999', d.log_text()):
                w = workload(3)
                w.wait()
                s = wait_for(lambda: status(d) if status(d).get('last_error') else None, 15) or {}
                err = decode(s.get('last_error', ''))
                ok(re.search(r'schema version 999\b.*versions up to 2\b', err) and int(s.get('pending', 0)) > 0,
                   'another schema version: refused, naming both; the batches wait (%s)' % err, s)
                rows = ch.query("SELECT count() FROM system.tables WHERE database = 'other'").strip()
                ok(rows == '1', 'nothing written into the other database', rows)
        finally:
            d.stop()

    conf = os.path.join(tmp, 'badurl.conf')
    with open(conf, 'w') as f:
        f.write('[store]\npath = %s/badurl.db\n[control]\nsocket = %s/badurl.sock\n[fleet]\nurl = http://x/db\n'
                % (tmp, tmp))
    p = run([cppd, '-c', conf], timeout=30)
    ok(p.returncode == 1 and re.search(r'badurl\.conf:6: url .http://x/db.: the scheme is not clickhouse://', p.stderr),
       'url = http://...: cppd does not start, naming the line', p.stderr)


if os.geteuid() != 0:
    skip_all('needs root for system-wide perf events')
if not clickhouse.installed():
    skip_all('clickhouse-server is not installed')
if subprocess.run(['mountpoint', '-q', '/sys/kernel/tracing']).returncode != 0:
    subprocess.run(['mount', '-t', 'tracefs', 'nodev', '/sys/kernel/tracing'])

with tempfile.TemporaryDirectory(prefix='cppd-fleet-ship-') as tmp:
    which = sys.argv[4:] or ['kill', 'late', 'bound', 'errors']
    for name, f in (('kill', kill_restart), ('late', down_at_start), ('bound', bound), ('errors', errors)):
        if name in which:
            sub = os.path.join(tmp, name)
            os.mkdir(sub)
            f(sub)
sys.exit(done())
