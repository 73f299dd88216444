#!/usr/bin/env python3
"""The fleet benchmark: 1,000 hosts x 24 hours of the daemon's default collection,
synthesized from real recorded stacks, loaded into a private ClickHouse, and asked the fleet's
questions. Prints figures; never fails on speed or size. Not part of the test suite (it takes
minutes and starts a real server); run it by hand.

1. Real stacks. `cppctl record` records real programs on this machine (the workloads of the
   tests, a g++ compile, python3) with the default resources (cpu-time, page-faults,
   context-switches) at finer periods than the daemon's, for more distinct stacks; their stacks
   and each stack's hits per resource and thread are read from the stores.
2. The fleet. --units units (20), each one of the recorded programs at its own busy share;
   every host runs unit 1 (an agent on every machine) and one to three role units. Every host's
   day is --hours hours of 60 s buckets (daemon/config.c: `bucket`), the resources and periods of
   daemon/config.c's defaults (cpu-time/10, page-faults/256, context-switches/64). Each host's
   minute holds about --rows sample rows (distinct resource, thread and stack), drawn from the
   program's rows by their recorded weights, more in the day's busy hours, fewer at night; a
   row's hits are its weight's share of the unit's samples that minute, with noise.
3. The load. Each host's day goes to ClickHouse as one batch per table, TabSeparated over HTTP,
   in the schema's format (schemas/clickhouse/, the rollups' materialized view rolling each
   INSERT up as it lands), markers included; --jobs
   processes generate the next hosts while the server parses this one. The rows and hits that
   arrived are checked against the markers'. Then the daemon's own shape of shipping, one
   batch per host and bucket with the idempotent protocol (marker asked; stacks, runs,
   run_resources, samples; marker written), is sent by --ship-senders hosts at once for
   --ship-seconds into a second database, to compare with the batches 1,000 hosts send a
   minute, while the samples table's active parts are counted.
4. Figures: load rate, bytes per sample row on disk (system.parts) as loaded and after
   OPTIMIZE ... FINAL, and the latency of three questions, each --repeat times (median):
   the function profile of unit 1 across all hosts for the day, the downward profile from
   `main` of the same, and a day-against-day diff (with --hours 48 or more: the first day
   against the second; with less: the first half against the second half, and it says so).
   Each is timed as cppctl runs it over clickhouse://, as the same queries sent alone (the
   aggregation to distinct stacks and the stacks' lookup, common/fleet/ch-read.c), and as the
   least the server must do (the aggregation, then the stacks by the hashes it gave); cppctl
   from the rollups (as it runs) and from the raw samples (CPPD_CLICKHOUSE_ROLLUPS=0).
   With --upgrade the load goes into a version 1 database (no rollups), which `cppctl merge -o`
   of an empty store then upgrades and back-fills as cppd would: timed, the sums compared.
5. With --days D (7: the issue's week): the loaded --hours copied server-side into the days
   after them (INSERT ... SELECT, shifted; the materialized view rolls the copies up like any
   INSERT): generating and loading a week over HTTP would take this VM an hour. Then unit 1's
   function profile over all hosts and the D days, and one host's last hour (and the unit's last
   day, and the fleet's last hour), by cppctl from the rollups and from the raw samples, their
   answers compared.

Needs root for the recordings (perf events), unless --stacks-from names stores already
recorded. Temporary files (the stores, the server's data) are removed at the end.

Usage: sudo tests/bench/bench-fleet.py [BUILD_DIR] [--hosts 1000] [--hours 24] [--days 7] [--rows 20]
                                       [--units 20] [--repeat 3] [--stacks-from DB ...]
(--help lists the rest.) The defaults take about 10 minutes on a 2-CPU VM."""
import argparse
import multiprocessing
import os
import queue
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, os.path.join(here, '..', 'integration'))

# daemon/config.c, config_defaults(): the resources and periods of default collection, and
# the bucket. The recordings use finer periods (more distinct stacks per second of recording);
# WEIGHT turns a recorded hit into its expected share at the daemon's period.
DEFAULTS = {'cpu-time': 10, 'page-faults': 256, 'context-switches': 64}
RECORD = {'cpu-time': 1, 'page-faults': 16, 'context-switches': 1}
UNITS_OF = {'cpu-time': '1 ms of CPU time', 'page-faults': '1 page fault',
            'context-switches': '1 context switch'}
EVENTS = {'cpu-time': 'software:cpu-clock', 'page-faults': 'software:page-faults',
          'context-switches': 'software:context-switches'}
BUCKET = 60
DAY0 = 1795478400       # 2026-11-24 00:00 UTC: one month, so one partition


def log(*args):
    print(*args, flush=True)


# ---------------------------------------------------------------------------------------------
# 1. Real stacks

PYTHON_WORK = r"""
import json, re, random, collections
random.seed(1)
docs = [{'id': i, 'name': 'item%d' % i, 'tags': [random.choice('abcdef') for _ in range(5)],
         'score': random.random()} for i in range(60000)]
text = json.dumps(docs)
back = json.loads(text)
words = re.findall(r'item\d+', text)
c = collections.Counter(d['tags'][0] for d in back)
back.sort(key=lambda d: d['score'])
print(len(words), len(c))
"""

GXX_WORK = r"""
#include <map>
#include <regex>
#include <string>
#include <vector>
#include <algorithm>
std::map<std::string, std::vector<int>> index_words(const std::vector<std::string> &w) {
        std::map<std::string, std::vector<int>> m;
        for (size_t i = 0; i < w.size(); i++)
                m[w[i]].push_back(i);
        return m;
}
bool matches(const std::string &s) { return std::regex_match(s, std::regex("[a-z]+[0-9]*")); }
int main() { std::vector<std::string> v{"a", "b1"}; std::sort(v.begin(), v.end());
        return index_words(v).size() + matches(v[0]); }
"""


def programs(build, tmp):
    """(name, argv) of the programs recorded: unit 1's program first."""
    wl = os.path.join(build, 'tests', 'workloads')
    src = os.path.join(tmp, 'work.cpp')
    with open(src, 'w') as f:
        f.write(GXX_WORK)
    py = os.path.join(tmp, 'work.py')
    with open(py, 'w') as f:
        f.write(PYTHON_WORK)
    progs = [
        ('process_db', [os.path.join(wl, 'process_db-nofp'), '256000']),
        ('recursive', [os.path.join(wl, 'recursive-nofp'), '12', '60']),
        ('reader', [os.path.join(wl, 'reader-nofp'), '65536', '4096']),
        ('pingpong', [os.path.join(wl, 'pingpong-nofp'), '20000']),
        ('syscallstorm', [os.path.join(wl, 'syscallstorm-nofp'), '800']),
        ('manythreads', [os.path.join(wl, 'manythreads-nofp'), '40', '5', '3']),
        ('forker', [os.path.join(wl, 'forker-nofp')]),
    ]
    if shutil.which('g++'):
        progs.append(('g++', ['g++', '-O1', '-c', '-o', os.path.join(tmp, 'work.o'), src]))
    if shutil.which('python3'):
        progs.append(('python3', ['python3', py]))
    return progs


def record(build, tmp):
    """Records each program into its own store; returns [(name, store, wall seconds)]."""
    cppctl = os.path.join(build, 'client', 'cppctl')
    out = []
    spec = ','.join('%s/%d' % (r, p) for r, p in RECORD.items())
    for name, argv in programs(build, tmp):
        db = os.path.join(tmp, 'rec-%s.db' % name)
        t0 = time.monotonic()
        p = subprocess.run([cppctl, 'record', '-q', '--db', db, '-e', spec, '--'] + argv,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - t0
        if p.returncode != 0 or not os.path.exists(db):
            log('  %s: cppctl record failed (%d), left out: %s' % (name, p.returncode, p.stderr.strip()[-300:]))
            continue
        out.append((name, db, wall))
    return out


def fnv1a(data, h=0xcbf29ce484222325):
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return h


class Stack:
    __slots__ = ('hash', 'functions', 'modules', 'build_ids', 'files', 'lines', 'addresses', 'inlined',
                 'unknown')


def stack_hash(frames):
    """common/fleet/ch-write.c, ch_stack_hash(): FNV-1a over each frame's function, module, build
    id and file, each with its NUL, then "line,address,inlined,unknown" and 0x1e. The same stack
    loaded by `cppctl merge -o clickhouse://` gets the same hash."""
    h = 0xcbf29ce484222325
    for name, module, build_id, file, line, address, inlined, unknown in frames:
        data = b''.join(x.encode() + b'\0' for x in (name, module, build_id, file))
        data += b'%d,%d,%d,%d\x1e' % (line, address, inlined, unknown)
        h = fnv1a(data, h)
    return h


def read_store(db):
    """The store's sampled stacks, root first, and its rows: [(resource, comm, thread_comm, exe,
    stack, hits)] with hits summed over buckets, runs and processes."""
    c = sqlite3.connect('file:%s?mode=ro' % db, uri=True)
    frames = {}
    for fid, name, module, build_id, unknown, address, file, line, inlined in c.execute(
            'SELECT fr.id, fn.name, coalesce(m.path, \'\'), coalesce(m.build_id, \'\'), fn.unknown, '
            'coalesce(fr.address, -1), coalesce(fr.file, \'\'), coalesce(fr.line, 0), fr.inlined FROM frame fr '
            'JOIN function fn ON fn.id = fr.function_id LEFT JOIN module m ON m.id = fn.module_id'):
        frames[fid] = (name, module, build_id, file, line, address, inlined, unknown)
    parent = {}
    for sid, pid, fid in c.execute('SELECT id, parent_id, frame_id FROM stack'):
        parent[sid] = (pid, fid)
    stacks = {}

    def stack_of(sid):
        if sid in stacks:
            return stacks[sid]
        chain = []
        s = sid
        while s is not None:
            p, fid = parent[s]
            chain.append(frames[fid])
            s = p
        chain.reverse()
        st = Stack()
        (st.functions, st.modules, st.build_ids, st.files, st.lines, st.addresses, st.inlined,
         st.unknown) = (list(x) for x in zip(*chain))
        st.hash = stack_hash(chain)
        stacks[sid] = st
        return st

    rows = {}
    for res, comm, tcomm, exe, sid, hits in c.execute(
            'SELECT r.name, p.comm, coalesce(t.comm, p.comm), coalesce(p.exe, \'\'), s.stack_id, sum(s.hits) '
            'FROM sample s JOIN resource r ON r.id = s.resource_id JOIN thread t ON t.id = s.thread_id '
            'JOIN process p ON p.id = t.process_id GROUP BY 1, 2, 3, 4, 5'):
        if res not in DEFAULTS:
            continue
        key = (res, comm or '', tcomm or '', exe, stack_of(sid).hash)
        rows[key] = rows.get(key, 0) + hits
    c.close()
    by_hash = {st.hash: st for st in stacks.values()}
    return by_hash, [k + (h,) for k, h in rows.items()]


def store_seconds(db):
    """How long the store's runs ran, in seconds (at least 1): what turns its hits into a rate."""
    c = sqlite3.connect('file:%s?mode=ro' % db, uri=True)
    (secs,) = c.execute('SELECT sum(max(coalesce(ended, started) - started, 1)) FROM run').fetchone()
    c.close()
    return float(secs or 1)


# ---------------------------------------------------------------------------------------------
# 2. The fleet

def tsv(s):
    return s.replace('\\', '\\\\').replace('\t', '\\t').replace('\n', '\\n')


def ch_string(s):
    return "'" + s.replace('\\', '\\\\').replace("'", "\\'").replace('\t', '\\t').replace('\n', '\\n') + "'"


def stack_line(st):
    return '%d\t[%s]\t[%s]\t[%s]\t[%s]\t[%s]\t[%s]\t[%s]\t[%s]\n' % (
        st.hash, ','.join(map(ch_string, st.functions)), ','.join(map(ch_string, st.modules)),
        ','.join(map(ch_string, st.build_ids)), ','.join(map(ch_string, st.files)), ','.join(map(str, st.lines)),
        ','.join(map(str, st.addresses)),        ','.join(map(str, st.inlined)), ','.join(map(str, st.unknown)))


class Unit:
    """One systemd unit of the fleet: a recorded program at a busy share."""

    def __init__(self, index, prog, rng):
        self.index = index
        self.prog = prog                # (name, stacks by hash, rows, samples a minute at full use)
        self.name = 'svc%02d-%s.service' % (index, prog[0])
        self.busy = rng.uniform(0.05, 0.4) if index > 1 else 0.15
        rows = prog[2]
        # A row's weight: its expected samples at the daemon's periods.
        w = [h * RECORD[r] / DEFAULTS[r] for r, _, _, _, _, h in rows]
        total = sum(w) or 1.0
        self.rows = rows
        self.share = [x / total for x in w]
        self.cum = []
        acc = 0.0
        for x in self.share:
            acc += x
            self.cum.append(acc)
        self.per_minute = prog[3] * self.busy     # the unit's samples a minute, all resources
        self.threads = sorted({t for _, _, t, _, _, _ in rows})
        self.indexes = range(len(rows))
        self.stack = [r[4] for r in rows]

    def draws_for(self, distinct):
        """How many weighted draws give DISTINCT different rows on average."""
        lo, hi = 1.0, 1e7

        def expected(k):
            return sum(1.0 - (1.0 - p) ** k for p in self.share)
        for _ in range(60):
            mid = (lo + hi) / 2
            if expected(mid) < distinct:
                lo = mid
            else:
                hi = mid
        return hi


def diurnal(minute_of_day):
    """The fleet's load over a day, mean 1: low at night, high in the afternoon."""
    import math
    return 1.0 + 0.6 * math.sin(2 * math.pi * (minute_of_day - 9 * 60) / 1440)


class Fleet:
    def __init__(self, a, progs):
        self.a = a
        rng = random.Random(19)
        self.units = [Unit(i + 1, progs[i % len(progs)], rng) for i in range(a.units)]
        self.stacks = {}
        for p in progs:
            self.stacks.update(p[1])
        self.hosts = []
        for h in range(a.hosts):
            roles = rng.sample(self.units[1:], rng.randint(1, min(3, len(self.units) - 1)))
            self.hosts.append(('host-%04d' % (h + 1), [self.units[0]] + roles, rng.uniform(0.6, 1.4)))
        # Each unit's draws a minute at the mean load, for its share of --rows: a host's units
        # share its rows evenly, except that a program with few distinct rows cannot give more
        # than it has (90% of them), so the others give more, until hosts hold --rows on average.
        caps = {u.index: 0.9 * len(u.rows) for u in self.units}

        def targets(f):
            return {u.index: min(caps[u.index], f * a.rows / 3) for u in self.units}

        def mean_rows(f):
            t = targets(f)
            return statistics.mean(sum(t[u.index] for u in units) for _, units, _ in self.hosts) if self.hosts else 0
        lo, hi = 0.01, 1000.0
        for _ in range(50):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mean_rows(mid) < a.rows else (lo, mid)
        self.draws = {i: self.units[i - 1].draws_for(t) for i, t in targets(hi).items()}

    def host_buckets(self, host_index, rng):
        """One host's buckets: [(start, sample rows as TabSeparated lines, stack hashes, hits)]."""
        name, units, scale = self.hosts[host_index]
        hn = tsv(name)
        templates = {}
        for u in units:
            pid = rng.randint(300, 4000000)
            tids = {t: pid + i for i, t in enumerate(u.threads)}
            templates[u.index] = ['%s\t%d\t%s\t%d\t%d\t%s\t%s\t%s\t%d\t' % (
                r, DEFAULTS[r], tsv(u.name), pid, tids[t], tsv(comm), tsv(t), tsv(exe), stack)
                for r, comm, t, exe, stack, _ in u.rows]
        buckets = []
        noise = [rng.uniform(0.5, 1.5) for _ in range(4096)]
        j = 0
        for b in range(self.a.hours * 60):
            t = DAY0 + b * BUCKET
            load = diurnal(b % 1440) * scale
            pre = '%d\t%s\t1\t%d\t' % (t, hn, t)
            lines = []
            used = set()
            hits = 0
            for u in units:
                k = int(self.draws[u.index] * load * rng.uniform(0.7, 1.3)) + 1
                picks = set(rng.choices(u.indexes, cum_weights=u.cum, k=k))
                n = u.per_minute * load
                tmpl, share, stack = templates[u.index], u.share, u.stack
                for i in picks:
                    # Noise of +-50% around the row's share, from a table: rng.uniform() per
                    # row was a fifth of the generation's time.
                    h = int(n * share[i] * noise[j & 4095]) or 1
                    j += 1
                    lines.append('%s%s%d\t%d\n' % (pre, tmpl[i], h, h))
                    used.add(stack[i])
                    hits += h
            buckets.append((t, lines, used, hits))
        return buckets

    def host_meta(self, host_index, rng):
        """The host's runs and run_resources rows: one daemon run over the whole time."""
        hn = tsv(self.hosts[host_index][0])
        started = DAY0 - rng.randint(3600, 30 * 86400)
        ended = DAY0 + self.a.hours * 3600
        runs = '%s\t1\tdaemon\tcppd\t\t6.1.0\t0.19\tdwarf\t%d\t%d\t%d\n' % (hn, started, ended, ended * 1000)
        rr = ''.join('%s\t1\t%s\t%s\t%s\t%d\t0\t%d\n' % (hn, r, tsv(UNITS_OF[r]), EVENTS[r], p, ended * 1000)
                     for r, p in DEFAULTS.items())
        return runs, rr

    def marker(self, host_index, t, n_rows, hits):
        return '%s\t1\t%d\t%d\t%d\t%d\n' % (tsv(self.hosts[host_index][0]), t, n_rows, hits, t + BUCKET + 5)

    def host_day(self, host_index, rng):
        """One host's whole time as TabSeparated bodies: (samples, stacks, runs, run_resources,
        batches, sample rows, hits)."""
        buckets = self.host_buckets(host_index, rng)
        runs, rr = self.host_meta(host_index, rng)
        used = set()
        for _, _, u, _ in buckets:
            used |= u
        samples = ''.join(line for _, lines, _, _ in buckets for line in lines)
        markers = ''.join(self.marker(host_index, t, len(lines), h) for t, lines, _, h in buckets)
        stacks = ''.join(stack_line(self.stacks[h]) for h in used)
        return (samples, stacks, runs, rr, markers, sum(len(b[1]) for b in buckets),
                sum(b[3] for b in buckets))


# ---------------------------------------------------------------------------------------------
# 3. ClickHouse

SAMPLE_COLUMNS = ('time, host, run, batch, resource, period, unit, pid, tid, comm, thread_comm, exe, '
                  'stack, hits, samples')
STACK_COLUMNS = 'hash, functions, modules, build_ids, files, lines, addresses, inlined, unknown'
RUN_COLUMNS = 'host, run, kind, command, source, kernel, cppd_version, unwind, started, ended, updated'
RR_COLUMNS = 'host, run, resource, unit, event, period, lost, updated'
BATCH_COLUMNS = 'host, run, batch, rows, hits, sent'


class Server:
    """HTTP to the private server of tests/integration/clickhouse.py."""

    def __init__(self, ch):
        self.ch = ch

    def post(self, sql, body=b'', timeout=600):
        from clickhouse import USER, PASSWORD
        url = 'http://127.0.0.1:%d/?%s' % (self.ch.http, urllib.parse.urlencode({'query': sql}))
        req = urllib.request.Request(url, data=body, method='POST')
        req.add_header('X-ClickHouse-User', USER)
        req.add_header('X-ClickHouse-Key', PASSWORD)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.read().decode()
        except urllib.error.HTTPError as e:
            raise RuntimeError('ClickHouse: %s: %s' % (sql[:120], e.read().decode(errors='replace')[:600]))

    def insert(self, table, columns, body):
        if body:
            self.post('INSERT INTO %s (%s) FORMAT TabSeparated' % (table, columns), body.encode())

    def value(self, sql):
        return self.post(sql).strip()


def schema_statements(path, db):
    """The schema file's statements, as common/fleet/ch-schema.c reads them: ended by ';' at the
    end of a line, whole-line '--' comments left out, {db} replaced."""
    with open(path) as f:
        text = f.read()
    out = []
    for stmt in text.split(';\n'):
        stmt = '\n'.join(line for line in stmt.splitlines() if not line.lstrip().startswith('--'))
        if stmt.strip():
            out.append(stmt.replace('{db}', db))
    return out


def create(server, schemas, db, version=None):
    """The schema as cppctl creates it (ch_schema_create): each file's statements in order (the
    rollups and their materialized view included), then the version row, the number the last
    file's name starts with; with VERSION, the files up to that one only (an older cppd's
    database)."""
    files = sorted(f for f in os.listdir(schemas) if f.endswith('.sql'))
    if version:
        files = [f for f in files if int(f.split('-')[0]) <= version]
    for name in files:
        for s in schema_statements(os.path.join(schemas, name), db):
            server.post(s)
    version = int(files[-1].split('-')[0])
    server.post('INSERT INTO %s.schema_version VALUES (%d, now())' % (db, version))


def upgrade(server, ch, db, cppctl, stores, tmp):
    """The loaded version 1 database upgraded as cppd upgrades it: `cppctl merge -o` of a store
    without samples (one of the recordings, emptied), whose opening upgrades the database and
    back-fills the rollups (common/fleet/ch-schema.c). Returns (seconds, the samples' hits, the
    rollups' hits, the version after)."""
    empty = os.path.join(tmp, 'empty.db')
    shutil.copy(stores[0][1], empty)
    with sqlite3.connect(empty) as c:
        c.execute('DELETE FROM sample')
    env = dict(os.environ, CPPD_CLICKHOUSE_CREDENTIALS=ch.credentials)
    t0 = time.monotonic()
    cppctl_run(cppctl, ['merge', '-o', ch.url(db), empty], env)
    secs = time.monotonic() - t0
    return (secs, server.value('SELECT sum(hits) FROM %s.samples' % db),
            server.value('SELECT sum(sum_hits) FROM %s.samples_hourly' % db),
            server.value('SELECT max(version) FROM %s.schema_version' % db))


def replicate(server, db, span, copies):
    """The loaded SPAN seconds of samples copied COPIES times, each shifted by one more SPAN (a
    day into a week), server-side: INSERT ... SELECT, which the materialized view rolls up as it
    rolls up any INSERT. Returns the seconds it took."""
    t0 = time.monotonic()
    for k in range(1, copies + 1):
        shift = k * span
        server.post('INSERT INTO {db}.samples ({cols}, hits_squared) SELECT toDateTime(toUInt32(time) + {s}) AS t, '
                    'host, run, batch + {s} AS b, resource, period, unit, pid, tid, comm, thread_comm, exe, stack, '
                    'hits, samples, hits_squared FROM {db}.samples WHERE time < toDateTime({end})'
                    .format(db=db, cols=SAMPLE_COLUMNS, s=shift, end=DAY0 + span), timeout=7200)
        log('  copy %d of %d: %.0f s' % (k, copies, time.monotonic() - t0))
    return time.monotonic() - t0


FLEET = None


def generate(host_index):
    """A host's day, in a worker process (forked with FLEET set): its own random stream, so the
    data do not depend on --jobs."""
    return FLEET.host_day(host_index, random.Random(1993 * 100003 + host_index))


def load(server, fleet, db, jobs):
    """Each host's day as one batch per table; JOBS processes generate the next hosts while the
    server parses this one. Returns (seconds, state: rows, hits, seconds inside the inserts...)."""
    q = queue.Queue(maxsize=2)
    state = {'rows': 0, 'hits': 0, 'post': 0.0, 'error': None, 'bytes': 0}

    def sender():
        while True:
            item = q.get()
            if item is None:
                return
            samples, stacks, runs, rr, markers, n_rows, hits = item
            if state['error']:
                continue
            try:
                t0 = time.monotonic()
                server.insert(db + '.stacks', STACK_COLUMNS, stacks)
                server.insert(db + '.runs', RUN_COLUMNS, runs)
                server.insert(db + '.run_resources', RR_COLUMNS, rr)
                server.insert(db + '.samples', SAMPLE_COLUMNS, samples)
                server.insert(db + '.batches', BATCH_COLUMNS, markers)
                state['post'] += time.monotonic() - t0
                state['rows'] += n_rows
                state['hits'] += hits
                state['bytes'] += len(samples)
            except Exception as e:      # noqa: BLE001: reported below, the benchmark goes on
                state['error'] = e

    global FLEET
    FLEET = fleet
    th = threading.Thread(target=sender)
    th.start()
    t0 = time.monotonic()
    step = max(1, len(fleet.hosts) // 10)
    with multiprocessing.get_context('fork').Pool(jobs) as pool:
        for i, day in enumerate(pool.imap(generate, range(len(fleet.hosts)))):
            q.put(day)
            if (i + 1) % step == 0:
                log('  %d hosts generated, %d rows sent, %.0f s' % (i + 1, state['rows'], time.monotonic() - t0))
            if state['error']:
                break
    q.put(None)
    th.join()
    if state['error']:
        raise state['error']
    return time.monotonic() - t0, state


def ship_buckets(server, fleet, db, senders, seconds):
    """The daemon's shape of shipping: each closed bucket of a host is one batch, sent with the
    idempotent protocol of the schema (marker asked; stacks, runs, run_resources, samples;
    marker written: 6 requests). SENDERS threads, each a host going through its day bucket by
    bucket, send as fast as the server takes them for SECONDS, while the active parts of the
    samples table are counted each second (MergeTree refuses inserts at 300 parts a partition).
    Returns (batches, rows, seconds, most parts seen)."""
    state = {'batches': 0, 'rows': 0, 'error': None}
    lock = threading.Lock()
    # Each sender's buckets are made before the clock starts: making them is not shipping.
    work = {}
    for i in range(senders):
        h = i % len(fleet.hosts)
        rng = random.Random(7 + h)
        work[i] = (h, fleet.host_meta(h, rng), fleet.host_buckets(h, rng))
    stop = time.monotonic() + seconds

    def sender(i):
        h, (runs, rr), buckets = work[i]
        hn = ch_string(fleet.hosts[h][0])
        try:
            for t, lines, used, hits in buckets:
                if time.monotonic() >= stop:
                    return
                if server.value('SELECT count() FROM %s.batches WHERE host = %s AND run = 1 AND batch = %d'
                                % (db, hn, t)) != '0':
                    continue
                server.insert(db + '.stacks', STACK_COLUMNS, ''.join(stack_line(fleet.stacks[s]) for s in used))
                server.insert(db + '.runs', RUN_COLUMNS, runs)
                server.insert(db + '.run_resources', RR_COLUMNS, rr)
                server.insert(db + '.samples', SAMPLE_COLUMNS, ''.join(lines))
                server.insert(db + '.batches', BATCH_COLUMNS, fleet.marker(h, t, len(lines), hits))
                with lock:
                    state['batches'] += 1
                    state['rows'] += len(lines)
        except Exception as e:      # noqa: BLE001: reported, the benchmark goes on
            state['error'] = e

    threads = [threading.Thread(target=sender, args=(i,)) for i in range(senders)]
    t0 = time.monotonic()
    for th in threads:
        th.start()
    most = 0
    while any(th.is_alive() for th in threads):
        most = max(most, parts(server, db, 'samples')[3])
        time.sleep(1)
    for th in threads:
        th.join()
    wall = time.monotonic() - t0
    if state['error']:
        log('  shipping stopped: %s' % state['error'])
    return state['batches'], state['rows'], wall, most


def parts(server, db, table):
    """(rows, compressed bytes, uncompressed bytes, active parts) of TABLE."""
    v = server.value("SELECT sum(rows), sum(data_compressed_bytes), sum(data_uncompressed_bytes), count() "
                     "FROM system.parts WHERE active AND database = '%s' AND table = '%s'" % (db, table))
    return tuple(int(x) for x in v.split('\t'))


def column_bytes(server, db):
    """The samples table's compressed bytes per column, largest first."""
    try:
        v = server.value("SELECT name, data_compressed_bytes FROM system.columns WHERE database = '%s' "
                         "AND table = 'samples' ORDER BY data_compressed_bytes DESC" % db)
    except RuntimeError:
        return []
    return [(n, int(b)) for n, b in (line.split('\t') for line in v.splitlines())]


STACKS_SQL = ('SELECT hash, fn, mo, bi, fi, li, ad, il, uk, k FROM %s.stacks ARRAY JOIN functions AS fn, '
              'modules AS mo, build_ids AS bi, files AS fi, lines AS li, addresses AS ad, inlined AS il, '
              'unknown AS uk, arrayEnumerate(functions) AS k WHERE hash IN (%s) FORMAT TabSeparated')


def sql_profile(server, db, unit, since, until, one_scan=False):
    """What cppctl asks the server for one profile (common/fleet/ch-read.c): the selection
    aggregated to distinct stacks, and those stacks' frames, once each (the runs' periods and
    losses aside, a few rows). cppctl selects the stacks by the same filter of the samples, a
    second scan; ONE_SCAN aggregates first and asks for the stacks by the hashes it got, the
    least the server must do. Returns (distinct stacks, hits)."""
    where = ("resource = 'cpu-time' AND unit = %s AND time >= toDateTime(%d) AND time < toDateTime(%d)"
             % (ch_string(unit), since, until))
    if not one_scan:
        server.post(STACKS_SQL % (db, 'SELECT stack FROM %s.samples WHERE %s' % (db, where)))
    agg = server.post('SELECT stack, period, sum(hits), sum(samples) FROM %s.samples WHERE %s '
                      'GROUP BY stack, period FORMAT TabSeparated' % (db, where))
    lines = [x.split('\t') for x in agg.splitlines()]
    if one_scan and lines:
        server.post(STACKS_SQL % (db, ','.join(sorted({x[0] for x in lines}))))
    return len(lines), sum(int(x[2]) for x in lines)


def timed(fn, repeat):
    """Median wall seconds of REPEAT calls of FN, and its last result."""
    times = []
    result = None
    for _ in range(repeat):
        t0 = time.monotonic()
        result = fn()
        times.append(time.monotonic() - t0)
    return statistics.median(times), times, result


def cppctl_run(cppctl, args, env):
    p = subprocess.run([cppctl] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError('cppctl %s: exit %d: %s' % (args[0], p.returncode, p.stderr.strip()[-400:]))
    return p.stdout


def questions(a, server, ch, db, fleet, cppctl):
    unit = fleet.units[0].name
    span = a.hours * 3600
    if a.hours >= 48:
        d0, d1, d2 = DAY0, DAY0 + 86400, DAY0 + 2 * 86400
        diff_what = 'day 1 against day 2'
    else:
        d0, d1, d2 = DAY0, DAY0 + span // 2, DAY0 + span
        diff_what = 'first %g h against last %g h (a day-against-day diff needs --hours 48)' % (
            a.hours / 2, a.hours / 2)
    day_end = DAY0 + min(span, 86400)
    url = ch.url(db)
    env = dict(os.environ, CPPD_CLICKHOUSE_CREDENTIALS=ch.credentials)
    raw = dict(env, CPPD_CLICKHOUSE_ROLLUPS='0')
    sel = ['--unit', unit, '--resource', 'cpu-time']
    day = ['--since', '@%d' % DAY0, '--until', '@%d' % day_end]
    cmds = {
        'function': ['functions', '--db', url] + sel + day,
        'down': ['down', '--db', url, '--root', 'main'] + sel + day,
        'diff': ['diff', '--db', url] + sel + ['--base-unit', unit, '--base-since', '@%d' % d0,
                                                '--base-until', '@%d' % d1, '--since', '@%d' % d1,
                                                '--until', '@%d' % d2],
    }
    sql = {
        'function': lambda one: sql_profile(server, db, unit, DAY0, day_end, one),
        'down': lambda one: sql_profile(server, db, unit, DAY0, day_end, one),
        'diff': lambda one: (sql_profile(server, db, unit, d0, d1, one), sql_profile(server, db, unit, d1, d2, one)),
    }
    rows_scanned = int(server.value("SELECT count() FROM %s.samples WHERE resource = 'cpu-time' AND unit = %s "
                                    "AND time >= toDateTime(%d) AND time < toDateTime(%d)"
                                    % (db, ch_string(unit), DAY0, day_end)))
    hosts_of = int(server.value('SELECT uniqExact(host) FROM %s.samples WHERE unit = %s' % (db, ch_string(unit))))
    log('questions: unit %s on %d hosts, %d cpu-time rows in its day; diff: %s'
        % (unit, hosts_of, rows_scanned, diff_what))
    # Before any view cppctl lists the resources the samples hold (ch_list_resources()).
    listing = timed(lambda: server.post('SELECT DISTINCT resource FROM %s.samples ORDER BY resource '
                                        'FORMAT TabSeparated' % db), a.repeat)[0]
    results = []
    cppctl_error = None
    for name, aim in (('function', 1.0), ('down', 2.0), ('diff', 3.0)):
        med_sql, all_sql, res = timed(lambda: sql[name](False), a.repeat)
        med_one = timed(lambda: sql[name](True), a.repeat)[0]
        med_cli = all_cli = med_raw = None
        if cppctl_error is None:
            try:
                med_cli, all_cli, _ = timed(lambda: cppctl_run(cppctl, cmds[name], env), a.repeat)
                med_raw = timed(lambda: cppctl_run(cppctl, cmds[name], raw), a.repeat)[0]
            except RuntimeError as e:
                cppctl_error = str(e)
        if name == 'function' and cppctl_error is None:
            # What the answer looks like: the first lines of the function profile.
            out = cppctl_run(cppctl, cmds[name], env).splitlines()
            log('\n'.join('  | ' + line for line in out[:14]))
        results.append((name, aim, med_sql, all_sql, med_cli, all_cli, med_one, med_raw))
    return unit, hosts_of, rows_scanned, diff_what, cmds, results, cppctl_error, listing


def week_questions(a, server, ch, db, fleet, cppctl):
    """The issue's two: unit 1's function profile over all hosts and --days days, and one host's
    last hour, each from the rollups (cppctl as it is) and from the raw samples
    (CPPD_CLICKHOUSE_ROLLUPS=0), --repeat times; and what the tables hold."""
    unit = fleet.units[0].name
    end = DAY0 + a.days * 86400
    host = fleet.hosts[0][0]
    url = ch.url(db)
    env = dict(os.environ, CPPD_CLICKHOUSE_CREDENTIALS=ch.credentials)
    raw = dict(env, CPPD_CLICKHOUSE_ROLLUPS='0')
    asks = [
        ('unit %d days' % a.days, 0.5, ['functions', '--db', url, '--unit', unit, '--resource', 'cpu-time',
                                        '--since', '@%d' % DAY0, '--until', '@%d' % end]),
        ('unit last day', None, ['functions', '--db', url, '--unit', unit, '--resource', 'cpu-time',
                                 '--since', '@%d' % (end - 86400), '--until', '@%d' % end]),
        ('host last hour', 0.2, ['functions', '--db', url, '--host', host, '--resource', 'cpu-time',
                                 '--since', '@%d' % (end - 3600), '--until', '@%d' % end]),
        ('fleet last hour', None, ['functions', '--db', url, '--resource', 'cpu-time',
                                   '--since', '@%d' % (end - 3600), '--until', '@%d' % end]),
    ]
    out = {'asks': [], 'unit': unit, 'host': host}
    for name, aim, args in asks:
        row = [name, aim, args]
        answers = []
        for e in (env, raw):
            med, runs, text = timed(lambda: cppctl_run(cppctl, args, e), a.repeat)
            row += [med, runs]
            answers.append(text)
        row.append(answers[0] == answers[1])
        out['asks'].append(row)
    out['rows'] = server.value("SELECT count() FROM %s.samples WHERE resource = 'cpu-time' AND unit = %s AND "
                               "time >= toDateTime(%d) AND time < toDateTime(%d)" % (db, ch_string(unit), DAY0, end))
    out['rolled'] = server.value("SELECT count() FROM %s.samples_hourly WHERE resource = 'cpu-time' AND unit = %s "
                                 "AND hour >= toDateTime(%d) AND hour < toDateTime(%d)"
                                 % (db, ch_string(unit), DAY0, end))
    out['samples'] = parts(server, db, 'samples')
    out['hourly'] = parts(server, db, 'samples_hourly')
    out['sums'] = (server.value('SELECT sum(hits) FROM %s.samples' % db),
                   server.value('SELECT sum(sum_hits) FROM %s.samples_hourly' % db))
    out['listing'] = [timed(lambda: server.post('SELECT DISTINCT resource FROM %s.%s ORDER BY resource '
                                                'FORMAT TabSeparated' % (db, t)), a.repeat)[0]
                      for t in ('samples', 'samples_hourly')]
    return out


def report_week(a, copied, w):
    log('== %d hosts x %d days%s' % (a.hosts, a.days, ', the %d h loaded copied %d times in %.0f s (server-side)'
                                     % (a.hours, a.days * 24 // a.hours - 1, copied) if copied else ''))
    r, c, u, n = w['samples']
    log('  samples: %d rows, %.1f MB compressed; samples_hourly: %d rows, %.1f MB compressed (%d active parts)'
        % (r, c / 1e6, w['hourly'][0], w['hourly'][1] / 1e6, w['hourly'][3]))
    log('  hits in samples %s, in samples_hourly %s%s' % (w['sums'][0], w['sums'][1],
                                                         '' if w['sums'][0] == w['sums'][1] else '  MISMATCH'))
    log('  unit %s, cpu-time, the %d days: %s raw rows, %s rolled-up rows'
        % (w['unit'], a.days, w['rows'], w['rolled']))
    log('  cppctl end to end, median of %d: from the rollups (as it runs), from the raw samples '
        '(CPPD_CLICKHOUSE_ROLLUPS=0)' % a.repeat)
    log('  %-16s %5s %9s %9s  %-6s %s' % ('question', 'aim', 'rollups s', 'raw s', 'same', 'runs (rollups / raw)'))
    for name, aim, args, med, runs, med_raw, runs_raw, same in w['asks']:
        log('  %-16s %5s %9.3f %9.3f  %-6s %s / %s' % (
            name, '%.1fs' % aim if aim else '', med, med_raw, 'yes' if same else 'NO',
            ' '.join('%.3f' % x for x in runs), ' '.join('%.3f' % x for x in runs_raw)))
    log('  a host\'s question reads the raw samples either way (the rollups sum hosts away)')
    log('  the resources listing: %.3f s from samples, %.3f s from samples_hourly' % tuple(w['listing']))
    for name, aim, args, *_ in w['asks']:
        log('  %s: cppctl %s' % (name, ' '.join(args)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--hosts', type=int, default=1000)
    ap.add_argument('--hours', type=int, default=24)
    ap.add_argument('--rows', type=float, default=20, help='sample rows a host-minute, on average')
    ap.add_argument('--units', type=int, default=20)
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--jobs', type=int, default=os.cpu_count(), help='processes generating hosts')
    ap.add_argument('--ship-senders', type=int, default=4, help='hosts sending at once in the shipping test')
    ap.add_argument('--ship-seconds', type=int, default=60, help='how long the shipping test sends')
    ap.add_argument('--no-optimize', action='store_true', help='skip OPTIMIZE ... FINAL (minutes at 1,000 hosts)')
    ap.add_argument('--stacks-from', nargs='+', metavar='DB', help='stores to take stacks from instead of recording')
    ap.add_argument('--days', type=int, default=1,
                    help='days of samples asked over: the loaded --hours copied server-side, shifted, to fill them '
                    '(7: the week of the issue, from a day generated and loaded)')
    ap.add_argument('--schemas', default=os.path.join(top, 'schemas', 'clickhouse'))
    ap.add_argument('--upgrade', action='store_true',
                    help='load into a version 1 database (no rollups), then time its upgrade and back-fill')
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    cppctl = os.path.join(a.build, 'client', 'cppctl')

    import clickhouse
    if not clickhouse.installed():
        log('bench-fleet: clickhouse-server is not installed (packaging/install-deps); skipped')
        return
    if not os.path.isdir(a.schemas):
        log('bench-fleet: no schemas at %s; skipped' % a.schemas)
        return
    if a.days * 24 % a.hours:
        log('bench-fleet: --days %d is no whole number of --hours %d; skipped' % (a.days, a.hours))
        return
    if not a.stacks_from and os.geteuid() != 0:
        log('bench-fleet: needs root to record (perf events), or --stacks-from DB...; skipped')
        return
    log('machine: Linux %s, %d CPUs; ClickHouse %s' % (os.uname().release, os.cpu_count(),
                                                       clickhouse_version()))

    with tempfile.TemporaryDirectory(prefix='bench-fleet-') as tmp:
        os.chmod(tmp, 0o755)
        # 1. Real stacks.
        if a.stacks_from:
            stores = [(os.path.splitext(os.path.basename(db))[0], os.path.abspath(db), store_seconds(db))
                      for db in a.stacks_from]
        else:
            log('recording real programs (cppctl record -e %s):'
                % ','.join('%s/%d' % x for x in RECORD.items()))
            stores = record(a.build, tmp)
        progs = []
        for name, db, wall in stores:
            stacks, rows = read_store(db)
            if not rows:
                log('  %s: no samples of the default resources, left out' % name)
                continue
            full = sum(h * RECORD[r] / DEFAULTS[r] for r, _, _, _, _, h in rows) / max(wall, 0.1) * 60
            by_res = {r: sum(h for rr, _, _, _, _, h in rows if rr == r) for r in DEFAULTS}
            log('  %-13s %5d stacks %5d rows, hits %s, %.1f s'
                % (name, len(stacks), len(rows), ' '.join('%s %d' % x for x in by_res.items()), wall))
            progs.append((name, stacks, rows, full))
        if not progs:
            log('bench-fleet: no recording gave samples; skipped')
            return
        fleet = Fleet(a, progs)
        log('fleet: %d hosts x %d h, %d units (unit 1 on every host, 1-3 roles each), ~%g rows a host-minute'
            % (a.hosts, a.hours, a.units, a.rows))

        with clickhouse.ClickHouse(tmp, 'fleet', timeout=120) as ch:
            server = Server(ch)
            db = 'fleet'
            # A version 1 database, as an older cppd made it, upgraded after the load (--upgrade), or
            # the current one, rolled up as it loads.
            create(server, a.schemas, db, 1 if a.upgrade else None)
            # 3. The load.
            wall, st = load(server, fleet, db, a.jobs)
            rows = st['rows']
            log('loaded %d sample rows (%.1f MB of TabSeparated) from %d hosts in %.1f s'
                % (rows, st['bytes'] / 1e6, a.hosts, wall))
            loaded = parts(server, db, 'samples')
            # What arrived is what was sent: the rows and hits of the samples against the
            # markers' (each host-minute's batch marker counts its rows and hits).
            got = server.value('SELECT count(), sum(hits) FROM %s.samples' % db)
            marked = server.value('SELECT sum(rows), sum(hits), count() FROM %s.batches' % db)
            st['check'] = (got, marked)
            upgraded = None
            if a.upgrade:
                log('upgrading the database to the rollups (cppctl merge -o, ch_schema_create)')
                upgraded = upgrade(server, ch, db, cppctl, stores, tmp)
            stacks_parts = parts(server, db, 'stacks')

            create(server, a.schemas, 'fleet_ship')
            log('shipping as the daemon does, %d senders for %d s' % (a.ship_senders, a.ship_seconds))
            ship = ship_buckets(server, fleet, 'fleet_ship', a.ship_senders, a.ship_seconds)
            server.post('DROP DATABASE fleet_ship')

            optimized = None
            if not a.no_optimize:
                log('OPTIMIZE TABLE samples FINAL')
                t0 = time.monotonic()
                server.post('OPTIMIZE TABLE %s.samples FINAL' % db, timeout=3600)
                optimized = parts(server, db, 'samples') + (time.monotonic() - t0,)
            columns = column_bytes(server, db)

            # 4. The questions.
            unit, hosts_of, scanned, diff_what, cmds, results, cppctl_error, listing = questions(
                a, server, ch, db, fleet, cppctl)

            # 5. The week: the loaded span copied into the days after it, then asked.
            copied = None
            if a.days * 24 > a.hours:
                log('copying the %d h loaded into %d days (INSERT ... SELECT, through the rollups\' view)'
                    % (a.hours, a.days))
                copied = replicate(server, db, a.hours * 3600, a.days * 24 // a.hours - 1)
            week = week_questions(a, server, ch, db, fleet, cppctl)

        report(a, wall, st, loaded, stacks_parts, optimized, columns, ship, unit, hosts_of, scanned, diff_what,
               cmds, results, cppctl_error, listing)
        if upgraded:
            log('== upgrade of the loaded version 1 database: %.1f s (cppctl merge -o of an empty store: the '
                'back-fill of %d rows); hits in samples %s, in the rollups %s%s; version now %s'
                % (upgraded[0], st['rows'], upgraded[1], upgraded[2],
                   '' if upgraded[1] == upgraded[2] else '  MISMATCH', upgraded[3]))
        report_week(a, copied, week)


def clickhouse_version():
    p = subprocess.run(['dpkg-query', '-W', '-f', '${Version}', 'clickhouse-server'], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return p.stdout.strip() or 'unknown'


def report(a, wall, st, loaded, stacks_parts, optimized, columns, ship, unit, hosts_of, scanned, diff_what, cmds,
           results, cppctl_error, listing):
    rows = st['rows']
    host_days = a.hosts * a.hours / 24
    log('')
    log('== load: one batch per table per host (%d hosts x %d h)' % (a.hosts, a.hours))
    log('  sample rows %d (%.1f a host-minute), hits %d' % (rows, rows / (a.hosts * a.hours * 60), st['hits']))
    log('  wall %.1f s: %.0f rows/s, %.1f host-batches/s, %.3f s per host-day (generation overlapped)'
        % (wall, rows / wall, a.hosts / wall, wall / host_days))
    log('  inside the inserts %.1f s: %.0f rows/s, %.3f s per host-day'
        % (st['post'], rows / st['post'], st['post'] / host_days))
    (got_rows, got_hits), (m_rows, m_hits, m_batches) = st['check'][0].split('\t'), st['check'][1].split('\t')
    log('  in ClickHouse: %s rows, %s hits; the %s markers count %s rows, %s hits; sent %d rows, %d hits'
        % (got_rows, got_hits, m_batches, m_rows, m_hits, rows, st['hits']))
    n_batches, ship_rows, ship_wall, most_parts = ship
    log('== shipping as the daemon does: one batch per host-minute, idempotent protocol (6 requests), '
        '%d senders' % a.ship_senders)
    log('  %d batches, %d rows in %.1f s: %.1f batches/s, %.0f rows/s; %d hosts send %.1f batches/s; '
        'at most %d active parts in samples' % (n_batches, ship_rows, ship_wall, n_batches / ship_wall,
                                                ship_rows / ship_wall, a.hosts, a.hosts / BUCKET, most_parts))
    log('== on disk (system.parts, active parts)')
    r, c, u, n = loaded
    log('  samples as loaded: %d rows, %d parts, %.1f MB compressed (%.2f B/row), %.1f MB uncompressed (%.1f B/row)'
        % (r, n, c / 1e6, c / max(r, 1), u / 1e6, u / max(r, 1)))
    if optimized:
        r, c, u, n, secs = optimized
        log('  samples after OPTIMIZE FINAL (%.0f s): %d parts, %.1f MB compressed (%.2f B/row)'
            % (secs, n, c / 1e6, c / max(r, 1)))
    log('  stacks: %d rows, %.2f MB compressed' % (stacks_parts[0], stacks_parts[1] / 1e6))
    if columns:
        total = sum(b for _, b in columns) or 1
        log('  samples by column: ' + ', '.join('%s %.0f%%' % (n, 100 * b / total) for n, b in columns[:6]))
    log('== questions (unit %s on %d hosts; %d cpu-time rows in its day), median of %d'
        % (unit, hosts_of, scanned, a.repeat))
    log('  cppctl s: the command, end to end (from the rollups); raw s: the same from the raw samples')
    log('  (CPPD_CLICKHOUSE_ROLLUPS=0); ClickHouse s: the raw path\'s aggregation and stacks queries alone;')
    log('  one scan s: aggregation first, then the stacks by the hashes it gave (no second scan)')
    log('  %-9s %5s %9s %7s %13s %11s  %s' % ('question', 'aim', 'cppctl s', 'raw s', 'ClickHouse s', 'one scan s',
                                             'runs (cppctl / ClickHouse)'))
    for name, aim, med_sql, all_sql, med_cli, all_cli, med_one, med_raw in results:
        log('  %-9s %4.0fs %9s %7s %13.3f %11.3f  %s / %s' % (
            name, aim, '%.3f' % med_cli if med_cli is not None else 'n/a',
            '%.3f' % med_raw if med_raw is not None else 'n/a', med_sql, med_one,
            ' '.join('%.3f' % x for x in all_cli) if all_cli else '-', ' '.join('%.3f' % x for x in all_sql)))
    log('  diff: %s' % diff_what)
    log('  the resources listing cppctl asks first (SELECT DISTINCT resource FROM samples): %.3f s' % listing)
    for name, args in cmds.items():
        log('  cppctl %s' % ' '.join(args))
    if cppctl_error:
        log('  cppctl over clickhouse:// did not run: %s' % cppctl_error)


if __name__ == '__main__':
    main()
