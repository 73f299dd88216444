#!/usr/bin/env python3
"""The daemon's pushes to fleet profilers ([fleet] pyroscope, parca, otlp). No Pyroscope, Parca
or OpenTelemetry collector runs here: a local HTTP receiver stands in for all three, checks each
request's method, path, query and headers, and keeps its body; each body is decoded with the
official schemas by protoc (schemas/profile.proto for pprof, the vendored opentelemetry-proto
files for OTLP), and every sample value is compared with what cppctl reads from the daemon's
store for the same interval and unit (hits times the period, per stack). Then the faults: a
receiver answering HTTP 500, one refusing connections (after a reload), URLs of the wrong
scheme: clear errors, said once, counted in `cppctl status`, the local store untouched; a
receiver that never answers delays no other. TAP.

Usage: test-fleet-push.py CPPD CPPCTL WORKLOADS_DIR SCHEMAS_DIR"""
import base64
import codecs
import gzip
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import daemon
from daemon import run, store_query
from tap import done, ok, skip_all

cppd, cppctl, workloads, schemas = sys.argv[1:5]
# cpu-time/5: a hit is 5 gticks, so values are hits x 5; about 400 samples a second of a busy
# 2-CPU machine, which a daemon built with AddressSanitizer keeps up with (at cpu-time/2 it fell
# minutes behind on a loaded machine, and each reload drained the backlog)
PERIOD = 5
INTERVAL = 2        # push_interval, seconds
OTLP_REQUEST = 'opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest'
OTLP_SERVICE = 'opentelemetry/proto/collector/profiles/v1development/profiles_service.proto'


class Receiver:
    """An HTTP server on a free local port that keeps every request. STATUS and BODY are what
    it answers, changeable while it runs."""

    def __init__(self):
        self.requests = []
        self.status, self.body = 200, b'{}'
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get('Content-Length', '0'))
                outer.requests.append({'method': 'POST', 'path': self.path, 'headers': dict(self.headers),
                                       'body': self.rfile.read(n), 'time': time.time()})
                self.send_response(outer.status)
                self.send_header('Content-Type', 'text/plain')
                self.send_header('Content-Length', str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def free_port():
    """A port nothing listens on (bound, then closed)."""
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


# ---- protoc's text format, parsed into nested dicts of lists ----

def parse_text_format(text):
    tokens = re.findall(r'"(?:[^"\\]|\\.)*"|[{}]|[^\s{}:]+:?', text)
    pos = 0

    def message():
        nonlocal pos
        out = {}
        while pos < len(tokens) and tokens[pos] != '}':
            key = tokens[pos].rstrip(':')
            pos += 1
            if tokens[pos] == '{':
                pos += 1
                value = message()
                pos += 1                                        # '}'
            else:
                value = tokens[pos]
                pos += 1
                if value.startswith('"'):
                    value = codecs.escape_decode(value[1:-1].encode())[0].decode('utf-8', 'replace')
                elif re.fullmatch(r'-?\d+', value):
                    value = int(value)
            out.setdefault(key, []).append(value)
        return out
    return message()


def protoc_decode(message, proto, include, data):
    p = subprocess.run(['protoc', '--decode=' + message, '-I', include, proto], input=data,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise ValueError('protoc --decode=%s: %s' % (message, p.stderr.decode(errors='replace')))
    return parse_text_format(p.stdout.decode(errors='replace'))


def folded_name(name):
    """A name as `cppctl export --format folded` writes it (render-folded.c)."""
    return name.replace(';', ':').replace('\n', ' ').replace('\r', ' ') or '[unknown]'


def pprof_stacks(data):
    """Decodes gzipped pprof DATA with schemas/profile.proto: ({folded stack: value}, profile)."""
    prof = protoc_decode('perftools.profiles.Profile', 'profile.proto', schemas, gzip.decompress(data))
    strings = prof.get('string_table', [])
    strings = [''] + strings if not strings or strings[0] != '' else strings   # "" may print as nothing
    fn = {f['id'][0]: strings[f.get('name', [0])[0]] for f in prof.get('function', [])}
    loc = {l['id'][0]: fn[l['line'][0]['function_id'][0]] for l in prof.get('location', [])}
    out = {}
    for s in prof.get('sample', []):
        ids = s.get('location_id', [])
        if not ids:
            continue
        key = ';'.join(folded_name(loc[i]) for i in reversed(ids))
        out[key] = out.get(key, 0) + s['value'][0]
    return out, prof


def otlp_stacks(data):
    """Decodes an ExportProfilesServiceRequest with the vendored OTLP protos: ({stack: value},
    resource attributes, the profile)."""
    req = protoc_decode(OTLP_REQUEST, OTLP_SERVICE, os.path.join(schemas, 'otlp'), data)
    d = req['dictionary'][0]
    strings = d.get('string_table', [])
    fns = d['function_table']
    locs = d['location_table']
    stacks = d['stack_table']
    rp = req['resource_profiles']
    attrs = {a['key'][0]: a['value'][0]['string_value'][0] for a in rp[0]['resource'][0].get('attributes', [])}
    prof = rp[0]['scope_profiles'][0]['profiles'][0]

    def loc_name(i):
        f = fns[locs[i]['lines'][0].get('function_index', [0])[0]]
        return strings[f.get('name_strindex', [0])[0]]
    out = {}
    for s in prof.get('samples', []):
        idx = stacks[s.get('stack_index', [0])[0]].get('location_indices', [])
        if not idx:
            continue
        key = ';'.join(folded_name(loc_name(i)) for i in reversed(idx))
        out[key] = out.get(key, 0) + s['values'][0]
    return out, attrs, prof, len(rp), strings


def cppctl_stacks(db, since, until, unit=None):
    """What cppctl reads from the store for [SINCE, UNTIL) (and UNIT): {stack: hits x period}."""
    argv = [cppctl, 'export', '--db', db, '-r', 'cpu-time', '-f', 'folded', '--since', '@%d' % since,
            '--until', '@%d' % until]
    if unit:
        argv += ['--unit', unit]
    p = run(argv)
    out = {}
    for line in p.stdout.splitlines():
        stack, hits = line.rsplit(' ', 1)
        out[stack] = int(hits) * PERIOD
    return out


def status(d):
    """The push lines of the status reply, by target."""
    out = {}
    for line in d.request('status\n').splitlines():
        word, *fields = line.split(' ')
        if word == 'push':
            kv = {k: urllib.parse.unquote(v) for k, v in (f.split('=', 1) for f in fields if '=' in f)}
            out[kv['target']] = kv
    return out


def wait_for(cond, timeout):
    """Whether COND holds within TIMEOUT seconds, three times that on a loaded machine: each step
    of a daemon and its threads can take several times as long beside other jobs, and a wait
    ends as soon as COND holds."""
    end = time.monotonic() + 3 * timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.2)
    return cond()


def cgroup_root():
    for d in ('/sys/fs/cgroup', '/sys/fs/cgroup/unified'):
        if os.path.exists(os.path.join(d, 'cgroup.procs')) and \
                run(['stat', '-f', '-c', '%T', d]).stdout.strip() == 'cgroup2fs':
            return d
    return None


SECRET = 'dXNlcjpzM2NyZXQ='      # base64 of user:s3cret


def fleet(pyroscope='', parca='', otlp='', interval='%ds' % INTERVAL, credentials=''):
    return ('ring_size = 4M\nqueue_size = 64M\n[fleet]\npyroscope = %s\nparca = %s\notlp = %s\npush_interval = %s\n'
            'push_credentials = %s\n' % (pyroscope, parca, otlp, interval, credentials))


def write_credentials(path, text, mode=0o600):
    with open(path, 'w') as f:
        f.write(text)
    os.chmod(path, mode)


def check_bad_config(tmp):
    """URLs of the wrong scheme, and an interval that splits buckets: cppd refuses to start,
    naming the line and the problem, and creates no store."""
    for line, want in (('pyroscope = ftp://pyroscope.example:4040', "pyroscope = ftp://pyroscope.example:4040: "
                        "the URL must begin with http:// or https://"),
                       ('otlp = localhost:4318', 'otlp = localhost:4318: the URL must begin with http:// or https://'),
                       ('parca = http://parca:7070/?tenant=x', 'must have no query or fragment'),
                       ('push_interval = 90ms', 'push_interval must be whole seconds from 1s to 1d')):
        conf, db = os.path.join(tmp, 'bad.conf'), os.path.join(tmp, 'bad.db')
        with open(conf, 'w') as f:
            f.write('[store]\npath = %s\n[fleet]\n%s\n' % (db, line))
        p = run([cppd, '-c', conf], timeout=30)
        ok(p.returncode == 1 and (conf + ':4: ') in p.stderr and want in p.stderr and not os.path.exists(db),
           'cppd refuses [fleet] %s: "%s", at its line, and makes no store' % (line, want), p.stderr)
    with open(conf, 'w') as f:
        f.write('[store]\npath = %s\nbucket = 2s\n[fleet]\nparca = http://127.0.0.1:1\npush_interval = 3s\n' % db)
    p = run([cppd, '-c', conf], timeout=30)
    ok(p.returncode == 1 and 'push_interval (3s) must be a multiple of [store] bucket (2s)' in p.stderr
       and not os.path.exists(db), 'a push interval that would split a time bucket is refused', p.stderr)

    # Credentials that others may read, or that do not parse: cppd does not start, and the log
    # never holds the secret.
    creds = os.path.join(tmp, 'bad-credentials')
    for text, mode, want in (('pyroscope Authorization: Basic %s\n' % SECRET, 0o644,
                              'Refusing the push credentials %s: other users may read or write it (chmod o-rw %s)'
                              % (creds, creds)),
                             ('# ok\npyroscope Authorization Basic %s\n' % SECRET, 0o600,
                              '%s:2: expected a header: Name: value' % creds)):
        write_credentials(creds, text, mode)
        db = os.path.join(tmp, 'creds.db')
        with open(conf, 'w') as f:
            f.write('[collect]\nresources = cpu-time/10\n[store]\npath = %s\n[control]\nsocket = %s\ngroup =\n'
                    '[fleet]\npyroscope = http://127.0.0.1:1\npush_credentials = %s\n'
                    % (db, os.path.join(tmp, 'creds.sock'), creds))
        p = run([cppd, '-c', conf], timeout=60)
        ok(p.returncode != 0 and want in p.stderr and SECRET not in p.stderr,
           'cppd refuses credentials: "%s", and does not print the secret' % want, p.stderr[-1500:])


def check_payloads(d, recv, host, unit, cutoff):
    """Every request the receiver got, decoded and compared with the store; Pyroscope's up to
    CUTOFF (when it was moved to a refused port: after it, the intervals it gets again are cut
    short by the daemon's stop, which aborts the pushes in flight)."""
    by_kind = {'pyroscope': [], 'parca': [], 'otlp': []}
    bad = []
    # The interval being pushed when Pyroscope moved (a reload) went to it in part: the new pusher
    # posts its other profiles to the new URL. Its sum over units is left out.
    split = set()
    for r in recv.requests:
        u = urllib.parse.urlsplit(r['path'])
        if u.path == '/ingest' and r['time'] > cutoff:
            split.add(int(urllib.parse.parse_qs(u.query)['from'][0]))
            continue
        kind = {'/ingest': 'pyroscope', '/api/profiles/writeraw': 'parca',
                '/v1development/profiles': 'otlp'}.get(u.path)
        if kind is None or r['method'] != 'POST':
            bad.append((r['method'], r['path']))
            continue
        by_kind[kind].append((u, r))
    ok(not bad and all(by_kind.values()), 'every request is a POST to one of the three paths, each path used: %s'
       % {k: len(v) for k, v in by_kind.items()}, bad)
    headers = {k: {(r['headers'].get('Authorization'), r['headers'].get('X-Scope-OrgID')) for _, r in v}
               for k, v in by_kind.items()}
    ok(headers == {'pyroscope': {('Basic ' + SECRET, 'team-a')}, 'parca': {(None, None)},
                   'otlp': {(None, 'team-b')}},
       'each receiver gets the headers of its lines in push_credentials, and only those', headers)

    # Pyroscope: the query names the app with labels and the interval; the body is gzipped pprof.
    pyro, ends = {}, {}
    problems = []
    # The first interval starts where the daemon did, and may be shorter; the others are whole.
    first = min(int(urllib.parse.parse_qs(u.query)['from'][0]) for u, _ in by_kind['pyroscope'])
    for u, r in by_kind['pyroscope']:
        q = urllib.parse.parse_qs(u.query, strict_parsing=True)
        m = re.fullmatch(r'cppd\.cpu-time\{host=([^,}]*),resource=cpu-time(?:,unit=([^,}]*))?\}', q['name'][0])
        since, until = int(q['from'][0]), int(q['until'][0])
        if not m or m.group(1) != host or q.get('format') != ['pprof'] or q.get('spyName') != ['cppd'] \
                or until % INTERVAL or not 0 < until - since <= INTERVAL or (since % INTERVAL and since != first) or \
                r['headers'].get('Content-Type') != 'application/octet-stream' or r['body'][:2] != b'\x1f\x8b':
            problems.append((r['path'], r['headers'].get('Content-Type')))
            continue
        stacks, prof = pprof_stacks(r['body'])
        if prof.get('time_nanos') != [since * 10**9] or prof.get('duration_nanos') != [(until - since) * 10**9]:
            problems.append(('times', prof.get('time_nanos'), prof.get('duration_nanos')))
        if (since, m.group(2)) in pyro:
            problems.append(('twice', since, m.group(2)))
        pyro[(since, m.group(2))] = stacks
        ends[since] = until
    ok(not problems and pyro, 'Pyroscope: POST /ingest?name=cppd.cpu-time{host=%s,resource=cpu-time[,unit=...]}'
       '&from=&until=&format=pprof&spyName=cppd, application/octet-stream, gzipped pprof with the interval\'s '
       'time_nanos and duration_nanos (%d requests)' % (host, len(pyro)), problems)

    # The values are those cppctl reads for the same interval: per unit, and all units together.
    mismatch = []
    for (since, u), stacks in sorted(pyro.items(), key=lambda kv: (kv[0][0], kv[0][1] or '')):
        want = cppctl_stacks(d.store, since, ends[since], u) if u else None
        if u and stacks != want:
            mismatch.append(('unit', since, u, [(k[-60:], stacks.get(k), want.get(k)) for k in
                                                set(stacks) | set(want) if stacks.get(k) != want.get(k)][:6]))
    for since in sorted({s for s, _ in pyro} - split):
        total = {}
        for (s, _), stacks in pyro.items():
            if s == since:
                for k, v in stacks.items():
                    total[k] = total.get(k, 0) + v
        want = cppctl_stacks(d.store, since, ends[since])
        if total != want:
            mismatch.append(('all', since, [(k[-60:], total.get(k), want.get(k)) for k in
                                            set(total) | set(want) if total.get(k) != want.get(k)][:6]))
    ok(not mismatch, 'Pyroscope: every stack\'s value is its hits x %d as cppctl export reads them for the same '
       'interval from the store: per unit, and summed over the units (%d intervals; %s split by the reload)'
       % (PERIOD, len({s for s, _ in pyro}), sorted(split & {s for s, _ in pyro}) or 'none'), mismatch[:3])
    ok(any(u == unit for _, u in pyro) and sum(sum(s.values()) for (_, u), s in pyro.items() if u == unit) > 0,
       'Pyroscope: the workload\'s unit %s has profiles of its own, with samples' % unit,
       sorted({u for _, u in pyro}, key=str))
    ok(len(by_kind['pyroscope']) == len(pyro) and sorted(ends) == sorted(set(ends)) and
       all(ends[a] == b for a, b in zip(sorted(ends), sorted(ends)[1:])),
       'Pyroscope: each (interval, unit) pushed once, the intervals back to back', sorted(ends.items()))

    # Parca: WriteRawRequest in JSON, labels, the raw pprof in base64.
    parca = {}
    problems = []
    for u, r in by_kind['parca']:
        try:
            req = json.loads(r['body'])
            series = req['series']
            labels = {l['name']: l['value'] for l in series[0]['labels']['labels']}
            raw = base64.b64decode(series[0]['samples'][0]['rawProfile'], validate=True)
        except (ValueError, KeyError, IndexError) as e:
            problems.append(('json', repr(e)))
            continue
        stacks, prof = pprof_stacks(raw)
        since = prof['time_nanos'][0] // 10**9
        if r['headers'].get('Content-Type') != 'application/json' or len(series) != 1 or \
                labels.get('__name__') != 'cpu_time' or labels.get('host') != host or \
                labels.get('resource') != 'cpu-time' or req.get('normalized') is not True or u.query:
            problems.append((labels, r['headers'].get('Content-Type')))
        parca[(since, labels.get('unit'))] = stacks
    ok(not problems and parca, 'Parca: POST /api/profiles/writeraw, application/json, one series with labels '
       '__name__=cpu_time, host, resource, unit, rawProfile base64 of gzipped pprof (%d requests)' % len(parca),
       problems)
    common = parca.keys() & pyro.keys()
    ok(len(common) >= len(pyro) - 1 and all(parca[k] == pyro[k] for k in common),
       'Parca: the same profiles as Pyroscope, interval by interval and unit by unit (%d in common)' % len(common))

    # OTLP: ExportProfilesServiceRequest, resource attributes, dictionary, samples.
    otlp = {}
    problems = []
    for u, r in by_kind['otlp']:
        if r['headers'].get('Content-Type') != 'application/x-protobuf' or r['headers'].get('Content-Encoding'):
            problems.append(('headers', r['headers']))
            continue
        try:
            stacks, attrs, prof, n_rp, strings = otlp_stacks(r['body'])
        except (ValueError, KeyError, IndexError) as e:
            problems.append(('decode', repr(e)))
            continue
        since = prof['time_unix_nano'][0] // 10**9
        st = prof['sample_type'][0]
        if n_rp != 1 or attrs.get('host.name') != host or not 0 < prof['duration_nano'][0] <= INTERVAL * 10**9 or \
                strings[st['type_strindex'][0]] != 'cpu-time' or strings[st['unit_strindex'][0]] != 'milliseconds' \
                or prof.get('period') != [PERIOD]:
            problems.append((attrs, prof.get('duration_nano'), prof.get('period')))
        otlp[(since, attrs.get('service.name'))] = stacks
    ok(not problems and otlp, 'OTLP: POST /v1development/profiles, application/x-protobuf, uncompressed; '
       'decoded as %s with opentelemetry-proto v1.11.0: host.name, service.name = unit, sample type cpu-time '
       'in milliseconds, period %d, the interval\'s time and duration (%d requests)'
       % (OTLP_REQUEST, PERIOD, len(otlp)), problems)
    common = otlp.keys() & pyro.keys()
    ok(len(common) >= len(pyro) - 1 and all(otlp[k] == pyro[k] for k in common),
       'OTLP: the same stacks and values as the pprof pushes, interval by interval and unit by unit (%d in common)'
       % len(common))
    return by_kind


def check_independent(tmp):
    """One thread posted to every receiver in turn: a receiver that takes the connection and never
    answers held each of its requests 30 s, and every other receiver's profiles with them. Now
    a good receiver beside it gets every interval, each soon after its end."""
    good = Receiver()
    hang = socket.socket()
    hang.bind(('127.0.0.1', 0))
    hang.listen(64)
    hang_url = 'http://127.0.0.1:%d' % hang.getsockname()[1]
    conns = []
    d = daemon.Daemon(cppd, tmp, 'independent', 'cpu-time/%d' % PERIOD, flush=0.5, bucket='1s',
                      extra=fleet(good.url, '', hang_url))
    w = None
    try:
        if not ok(d.ready(), 'cppd pushing to a good receiver and to one that never answers', d.log_text()):
            return
        w = subprocess.Popen([os.path.join(workloads, 'recursive-fp'), '12', '100000'])

        def accept():
            hang.settimeout(0.2)
            try:
                conns.append(hang.accept()[0])
            except socket.timeout:
                pass
            return False
        # Long enough for the hanging receiver's first requests to hold 30 s each.
        wait_for(accept, 16)
        arrived = {}
        for r in good.requests:
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(r['path']).query)
            until = int(q['until'][0])
            arrived.setdefault(until, []).append(r['time'] - until)
        ends = sorted(arrived)
        late = max((max(v) for v in arrived.values()), default=None)
        # An interval goes out once the flush says the store holds it: 1 s after its end at the
        # earliest, 3 s more for records still in the kernel's rings, and a loaded machine's lag.
        ok(conns and len(ends) >= 4 and all(b - a == INTERVAL for a, b in zip(ends, ends[1:])) and late < 15,
           'the good receiver gets every interval (%d, back to back), the last profile of each %.1f s after its end '
           'at most, while the other holds its requests' % (len(ends), late or 0),
           '%d connections held; %s' % (len(conns), sorted(arrived.items())))
        st = status(d)
        ok(int(st['pyroscope']['intervals']) > int(st['otlp']['intervals']) and st['pyroscope']['failed'] == '0',
           'status: the hanging receiver falls behind alone (%s intervals against %s)'
           % (st['otlp']['intervals'], st['pyroscope']['intervals']), st)
        p = run([cppctl, 'status', '--socket', d.sock])
        ok(re.search(r'^ +\d+ intervals behind the others$', p.stdout, re.M), 'cppctl status says it is behind',
           p.stdout)
        t0 = time.monotonic()
        wait_status = d.stop()
        ok(os.WIFEXITED(wait_status) and os.WEXITSTATUS(wait_status) == 0 and time.monotonic() - t0 < 10,
           'cppd stops cleanly, the hanging request aborted (%.1f s)' % (time.monotonic() - t0))
    finally:
        if w:
            w.kill()
            w.wait()
        if not d.exited():
            d.stop(signal.SIGKILL)
        for c in conns:
            c.close()
        hang.close()
        good.close()


def main():
    if os.geteuid() != 0:
        skip_all('needs root: system-wide perf events and cgroups')
    if not shutil.which('protoc'):
        skip_all('protoc is not installed (packaging/install-deps)')
    root = cgroup_root()
    if not root:
        skip_all('no cgroup2 hierarchy')
    unit = 'cppd-push-test-%d.service' % os.getpid()
    cg = os.path.join(root, unit)
    os.mkdir(cg)
    tmp = tempfile.mkdtemp()
    os.chmod(tmp, 0o755)
    recv = Receiver()
    procs, ds = [], []
    host = socket.gethostname()
    try:
        check_bad_config(tmp)

        # All three receivers answer 200 at first.
        creds = os.path.join(tmp, 'credentials')
        write_credentials(creds, '# per receiver\npyroscope Authorization: Basic %s\npyroscope X-Scope-OrgID: team-a\n'
                          'otlp X-Scope-OrgID: team-b\n' % SECRET)
        d = daemon.Daemon(cppd, tmp, 'push', 'cpu-time/%d' % PERIOD, flush=0.5, bucket='1s',
                          extra=fleet(recv.url, recv.url + '/', recv.url, credentials=creds))
        ds.append(d)
        if not ok(d.ready(), 'cppd starts with [fleet] pyroscope, parca and otlp', d.log_text()):
            return

        def enter():
            with open(os.path.join(cg, 'cgroup.procs'), 'w') as f:
                f.write(str(os.getpid()))
        procs.append(subprocess.Popen([os.path.join(workloads, 'recursive-fp'), '12', '100000'], preexec_fn=enter))
        procs.append(subprocess.Popen([os.path.join(workloads, 'recursive-fp'), '10', '100000']))
        ok(wait_for(lambda: len({urllib.parse.urlsplit(r['path']).path for r in recv.requests}) == 3 and
                    sum(1 for r in recv.requests if r['path'].startswith('/ingest')) >= 4, 30),
           'profiles arrive at all three receivers within the push interval and its delay',
           [r['path'] for r in recv.requests])
        st = status(d)
        ok(set(st) == {'pyroscope', 'parca', 'otlp'} and all(int(s['pushed']) > 0 and s['failed'] == '0' and
                                                         'error' not in s for s in st.values()),
           'cppctl status: each receiver with profiles pushed and none failed', st)
        p = run([cppctl, 'status', '--socket', d.sock])
        ok(p.returncode == 0 and re.search(r'^pyroscope +\d+ +0  http://127\.0\.0\.1:\d+$', p.stdout, re.M),
           'cppctl status prints a row per receiver: pushed, failed, URL', p.stdout)

        # The receivers answer HTTP 500 with a body.
        recv.status, recv.body = 500, b'ingester overloaded: try later\nsecond line\n'
        n = len(recv.requests)
        ok(wait_for(lambda: int(status(d)['parca']['failed']) >= 4, 30), 'HTTP 500s are counted as failed')
        log = d.log_text()
        want = 'Cannot push to parca at %s/: HTTP 500: ingester overloaded: try later;' % recv.url
        ok(log.count(want) == 1, 'the log names the receiver, its URL, the status and the body\'s first line, '
           'once for many failures', log[-2000:])
        st = status(d)
        ok(st['parca'].get('error') == 'HTTP 500: ingester overloaded: try later' and
           all(s['failed'] != '0' for s in st.values()), 'cppctl status shows the last failure with the counts', st)
        # A proxy's error page: its text, not its first line of markup.
        recv.status, recv.body = 502, (b'<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n'
                                       b'<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n'
                                       b'</body>\r\n</html>\r\n')
        want = 'Cannot push to parca at %s/: HTTP 502: 502 Bad Gateway 502 Bad Gateway nginx;' % recv.url
        ok(wait_for(lambda: want in d.log_text(), 20), 'a new problem is logged again: an HTML page as its text, '
           '"HTTP 502: 502 Bad Gateway 502 Bad Gateway nginx"', d.log_text()[-1500:])
        recv.status, recv.body = 200, b'{}'
        pushed = int(status(d)['parca']['pushed'])
        ok(wait_for(lambda: int(status(d)['parca']['pushed']) > pushed, 30) and
           wait_for(lambda: 'Pushes to parca at %s/ work again' % recv.url in d.log_text(), 10),
           'when it answers 200 again, pushes count again and the log says so once')
        ok(len(recv.requests) > n, 'the failing intervals were posted, not skipped')

        # Pyroscope moves to a port where nothing listens (a reload); the others go on.
        port = free_port()
        cutoff = time.time()
        d.write_conf('cpu-time/%d' % PERIOD, fleet('http://127.0.0.1:%d' % port, recv.url + '/', recv.url,
                                                    credentials=creds))
        os.kill(d.pid, signal.SIGHUP)
        ok(wait_for(lambda: 'pyroscope' in status(d) and int(status(d)['pyroscope']['failed']) >= 3, 30),
           'after a reload, pushes to a refused port fail and are counted')
        log = d.log_text()
        want = 'Cannot push to pyroscope at http://127.0.0.1:%d: connection refused (' % port
        ok(log.count(want) == 1, 'the log says "connection refused" with the URL, once', log[-2000:])
        st = status(d)
        otlp_pushed = int(st['otlp']['pushed'])
        ok(st['pyroscope']['pushed'] == '0' and st['pyroscope']['error'].startswith('connection refused') and
           'error' not in st['otlp'], 'cppctl status: the refused receiver\'s counts (restarted by the reload) and '
           'error; OTLP\'s without one', st)
        ok(wait_for(lambda: int(status(d)['otlp']['pushed']) > otlp_pushed, 15),
           'the other receivers keep getting profiles meanwhile')

        # The local store is untouched by all of it: whole, and still growing.
        before = store_query(d.store, 'SELECT sum(hits) FROM sample')[0][0]
        ok(wait_for(lambda: store_query(d.store, 'SELECT sum(hits) FROM sample')[0][0] > before, 10) and
           store_query(d.store, 'PRAGMA quick_check') == [('ok',)],
           'the local store keeps growing and is whole while receivers fail')
        # A receiver that takes the connection and never answers (a request waits up to 30 s):
        # the loop goes on answering and flushing meanwhile, and stopping aborts the request.
        hang = socket.socket()
        hang.bind(('127.0.0.1', 0))
        hang.listen(64)
        hang_url = 'http://127.0.0.1:%d' % hang.getsockname()[1]
        d.write_conf('cpu-time/%d' % PERIOD, fleet(recv.url, recv.url + '/', hang_url, credentials=creds))
        os.kill(d.pid, signal.SIGHUP)
        conns = []

        def accepted():
            hang.settimeout(0.2)
            try:
                conns.append(hang.accept()[0])
            except socket.timeout:
                pass
            return len(conns) > 0
        ok(wait_for(accepted, 20), 'the OTLP push connects to the receiver that never answers')
        flushes = int(d.status_lines()['state']['flushes'])
        slowest = 0.0
        for _ in range(10):
            t0 = time.monotonic()
            d.request('status\n')
            slowest = max(slowest, time.monotonic() - t0)
            time.sleep(0.3)
        # A loop waiting on that request would answer after it, in 30 s; a loaded machine (and
        # the reload's first symbolization) slows an answer by seconds, up to 9 s seen with
        # AddressSanitizer at a load of 20: half the hang tells them apart.
        ok(slowest < 15.0 and int(d.status_lines()['state']['flushes']) > flushes,
           'while that request hangs (30 s), status answers at once (slowest %.3f s) and flushes go on' % slowest)

        # A reload in the middle of that interval (OTLP back to the good receiver): the new pusher
        # resumes it, and receivers that kept their URL do not get its profiles twice.
        def parca_intervals():
            return [json.loads(r['body'])['series'][0] for r in recv.requests
                    if r['path'] == '/api/profiles/writeraw']
        hung_since = max(pprof_stacks(base64.b64decode(x['samples'][0]['rawProfile']))[1]['time_nanos'][0] // 10**9
                         for x in parca_intervals())
        n_otlp = len([r for r in recv.requests if r['path'] == '/v1development/profiles'])
        d.write_conf('cpu-time/%d' % PERIOD, fleet(recv.url, recv.url + '/', recv.url, credentials=creds))
        os.kill(d.pid, signal.SIGHUP)

        decoded = {}

        def otlp_since():
            """The intervals of the OTLP requests, each decoded once."""
            for i, r in enumerate(recv.requests[:]):
                if r['path'] == '/v1development/profiles' and i not in decoded:
                    decoded[i] = otlp_stacks(r['body'])[2]['time_unix_nano'][0] // 10**9
            return set(decoded.values())
        # Each receiver keeps its own place: the OTLP one, held 30 s a request while the others
        # went on, resumes from the interval it was held in and catches up to Parca's, one
        # interval after the other (a load of the store each on a busy machine).
        ok(wait_for(lambda: len([r for r in recv.requests if r['path'] == '/v1development/profiles']) > n_otlp and
                    hung_since in otlp_since() and max(otlp_since()) > hung_since, 90),
           'after a reload mid-interval, the interval that hung (%d) reaches the new OTLP receiver, and the next'
           % hung_since)
        keys = []
        for x in parca_intervals():
            labels = {lab['name']: lab['value'] for lab in x['labels']['labels']}
            keys.append((pprof_stacks(base64.b64decode(x['samples'][0]['rawProfile']))[1]['time_nanos'][0],
                         labels.get('unit')))
        ok(len(keys) == len(set(keys)), 'Parca, whose URL never changed, got each (interval, unit) once through '
           'every reload (%d profiles)' % len(keys), sorted(k for k in keys if keys.count(k) > 1)[:5])
        for q in procs:
            q.kill()
            q.wait()
        t0 = time.monotonic()
        wait_status = d.stop()
        took = time.monotonic() - t0
        ok(os.WIFEXITED(wait_status) and os.WEXITSTATUS(wait_status) == 0 and took < 10,
           'cppd stops cleanly in %.1f s, the hanging request aborted, its push thread too' % took)
        for c in conns:
            c.close()
        hang.close()
        ok(SECRET not in d.log_text(), 'the credentials are nowhere in the log')

        # Only now every payload is checked: the store has all the intervals pushed.
        check_payloads(d, recv, host, unit, cutoff)
        check_independent(tmp)
    finally:
        for q in procs:
            if q.poll() is None:
                q.kill()
                q.wait()
        for d in ds:
            if not d.exited():
                d.stop(signal.SIGKILL)
        recv.close()
        try:
            for pid in open(os.path.join(cg, 'cgroup.procs')).read().split():
                with open(os.path.join(root, 'cgroup.procs'), 'w') as f:
                    f.write(pid)
            os.rmdir(cg)
        except OSError:
            pass
        subprocess.run(['rm', '-rf', tmp])
    sys.exit(done())


main()
