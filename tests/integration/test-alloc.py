#!/usr/bin/env python3
"""alloc-bytes and alloc-count: allocations counted in the recorded program by the preloaded
library (common/collect/alloc-preload.c), and by uprobes on glibc's allocator in a process
attached to and in the daemon's [alloc] units (common/collect/alloc-probe.c), sampled with their
stacks. TAP output.

Usage: test-alloc.py CPPCTL CPPD WORKLOADS_DIR

Truth by construction (tests/workloads/allocs.cpp says each path's bytes and calls). Shares are
asserted within twice their printed 95% bar (about four standard deviations: a false failure in
some 10^4 runs per check), and totals within four standard deviations of the weights plus 2% for
the C and C++ runtimes' own allocations at start. With --no-jitter the periods are exact, so the
count of hits is the bytes allocated over the period to within the runtimes' few KiB."""
import gzip
import json
import math
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import daemon
from tap import done, ok, skip_all

cppctl, cppd, workloads = sys.argv[1], sys.argv[2], sys.argv[3]
ALLOCS = os.path.join(workloads, 'allocs')
OWN = os.path.join(workloads, 'ownmalloc-nofp')
ROUNDS = 300
KIB = 1024
# Per round: (path, bytes, calls); allocs.cpp's opening comment.
PATHS = [('small', 3072 * KIB, 3072), ('big', 1024 * KIB, 16), ('zeroed', 256 * KIB, 512),
         ('array', 256 * KIB, 256), ('grow', 255 * KIB, 8)]
ROUND_BYTES = sum(b for _, b, _ in PATHS)
ROUND_CALLS = sum(c for _, _, c in PATHS)

if os.geteuid() != 0:
    skip_all('needs root (perf events on tracepoints)')
if not os.path.exists(ALLOCS):
    skip_all('no C++ compiler: the allocs workload was not built')
if not os.path.isdir('/sys/kernel/tracing/events/syscalls'):
    skip_all('tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)')


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def record(db, args, command):
    return run([cppctl, 'record', '-q', '--db', db] + args + ['--'] + command)


def functions(db, resource, *filters):
    """{function: (fraction, ci95 low, ci95 high, hits)} and the profile's header fields."""
    p = run([cppctl, 'functions', '--db', db, '-r', resource, '-t', '0', '--json'] + list(filters))
    if p.returncode not in (0, 3):
        raise RuntimeError(p.stderr)
    j = json.loads(p.stdout)
    return {e['path'][0]: (e['fraction'], e['ci95'][0], e['ci95'][1], e['hits']) for e in j['entries']}, j


def hits_squared(db, resource):
    con = sqlite3.connect(db)
    row = con.execute('SELECT sum(s.hits), sum(s.hits_squared) FROM sample AS s JOIN resource AS r '
                      'ON r.id = s.resource_id WHERE r.name = ?', (resource,)).fetchone()
    con.close()
    return row[0] or 0, row[1] or 0


def check_shares(db, how, resource, index, total, period, *filters):
    """Each path's share of RESOURCE in DB against the truth; returns the hits and their squares."""
    f, j = functions(db, resource, *filters)
    ok(j['period'] == period and j['unit'] == ('1 byte allocated' if index == 1 else '1 allocation'),
       '%s, %s: the default period %d, its unit' % (how, resource, period), j)
    # A storm of samples (a loaded machine slows the reader, not the program) makes the
    # process (or the kernel) thin itself: samples of weight K, whose count varies K times as much.
    hits, squares = hits_squared(db, resource)
    weight = squares / hits if hits else 1.0
    for name, b, c in PATHS:
        # Against the hits the truth predicts, at four standard deviations of a count of
        # samples of that mean weight: the printed bar of a path with a handful of samples
        # (grow's calls) can be empty.
        truth = (b if index == 1 else c) / total
        share, lo, hi, h = f.get(name, (0.0, 0.0, 0.0, 0))
        expect = truth * j['hits']
        ok(abs(h - expect) <= 4 * math.sqrt(expect * weight) + 2 * weight,
           '%s, %s: %s %.4f [%.4f, %.4f] (%d hits), truth %.4f (%.0f hits; samples weigh %.1f)' %
           (how, resource, name, share, lo, hi, h, truth, expect, weight))
    return hits, squares


def check_paths(d):
    db = os.path.join(d, 'paths.db')
    p = record(db, ['-e', 'alloc-bytes,alloc-count'], [ALLOCS, 'paths', str(ROUNDS)])
    if not ok(p.returncode == 0, 'record -e alloc-bytes,alloc-count of allocs paths', p.stderr):
        return
    for resource, index, total, period in (('alloc-bytes', 1, ROUND_BYTES, 524288),
                                           ('alloc-count', 2, ROUND_CALLS, 1000)):
        hits, squares = check_shares(db, 'record', resource, index, total, period)
        want = ROUNDS * total / period
        ok(abs(hits - want) <= 4 * math.sqrt(squares) + 0.02 * want,
           '%s: %d hits for %.0f periods allocated (bar %.0f)' %
           (resource, hits, want, 4 * math.sqrt(squares) + 0.02 * want))
    # The innermost frame is the allocator's entry point as the program called it; operator
    # new[] stands between array and malloc. Nothing of the counting library shows.
    p = run([cppctl, 'export', '--db', db, '-r', 'alloc-bytes', '--format', 'folded'])
    lines = p.stdout.splitlines()
    leaves = {line.rsplit(' ', 1)[0].split(';')[-1] for line in lines}
    ok(p.returncode == 0 and leaves <= {'malloc', 'calloc', 'realloc'} and 'malloc' in leaves,
       'alloc-bytes: every stack ends in malloc, calloc or realloc', sorted(leaves)[:20])
    # (libstdc++'s operator new[] jumps to operator new: no frame of its own.)
    ok(any(';array;operator new' in line and line.rsplit(' ', 1)[0].endswith(';malloc') for line in lines),
       'alloc-bytes: array -> operator new -> malloc', [x for x in lines if 'array' in x][:5])
    ok(any(line.rsplit(' ', 1)[0].endswith('grow;realloc') for line in lines),
       'alloc-bytes: grow -> realloc', [x for x in lines if 'grow' in x][:5])
    # pprof names them as Go's heap profiles do.
    out = os.path.join(d, 'p.pb.gz')
    p = run([cppctl, 'export', '--db', db, '-r', 'alloc-bytes,alloc-count', '--format', 'pprof', '-o', out])
    data = gzip.open(out).read() if p.returncode == 0 and os.path.exists(out) else b''
    ok(b'alloc_space' in data and b'alloc_objects' in data and b'bytes' in data and b'alloc-bytes' not in data,
       'pprof: sample types alloc_space (bytes) and alloc_objects', p.stderr)


def check_fixed(d):
    db = os.path.join(d, 'fixed.db')
    p = record(db, ['--no-jitter', '-e', 'alloc-bytes/1048576'], [ALLOCS, 'paths', '100'])
    if not ok(p.returncode == 0, 'record --no-jitter -e alloc-bytes/1048576', p.stderr):
        return
    hits, _ = hits_squared(db, 'alloc-bytes')
    want = 100 * ROUND_BYTES / 1048576
    # Fixed periods: every MiB exactly, so the hits are the bytes over the period, give or take
    # the runtimes' allocations before main (a few hundred KiB at most).
    ok(want - 1 <= hits <= want + 1, '--no-jitter: %d hits for %.1f periods allocated' % (hits, want))
    p = run([cppctl, 'functions', '--db', db, '-r', 'alloc-bytes'])
    ok('periods fixed' in p.stdout and 'thinned' not in p.stdout, '--no-jitter: the header says periods fixed',
       p.stdout[:400])


def check_edges(d):
    db = os.path.join(d, 'edges.db')
    p = record(db, ['-e', 'alloc-bytes/1,alloc-count/1'], [ALLOCS, 'edges'])
    ok(p.returncode == 0, 'malloc(0), realloc(p, 0), sizes near 2^64, calloc overflow, every aligned '
       'allocator: each answers as glibc does under the counter', p.stderr)
    f, _ = functions(db, 'alloc-count')
    # Each successful allocation once: malloc(0), malloc(16), reallocarray, aligned_alloc,
    # posix_memalign, memalign, valloc, pvalloc; realloc(p, 0) and the failed ones not.
    names = {n for n in f if n in ('malloc', 'realloc', 'reallocarray', 'calloc', 'aligned_alloc',
                                   'posix_memalign', 'memalign', 'valloc', 'pvalloc')}
    ok({'aligned_alloc', 'posix_memalign', 'memalign', 'valloc', 'pvalloc', 'reallocarray'} <= names,
       'alloc-count/1: every aligned allocator and reallocarray is counted', sorted(f)[:40])
    con = sqlite3.connect(db)
    big = con.execute("SELECT max(s.hits) FROM sample AS s JOIN resource AS r ON r.id = s.resource_id "
                      "WHERE r.name = 'alloc-bytes'").fetchone()[0]
    con.close()
    ok(big is not None and big < 1 << 20, 'alloc-bytes/1: no sample of a failed huge allocation '
       '(largest %s bytes)' % big)


def check_own_allocator(d):
    db = os.path.join(d, 'own.db')
    p = record(db, ['-e', 'alloc-bytes,alloc-count'], [OWN, '2000'])
    ok(p.returncode == 0 and re.search(r'alloc-bytes: not counted in 1 process, ownmalloc', p.stderr),
       'a program with an allocator of its own: record says its allocations are not counted', p.stderr)
    hits, _ = hits_squared(db, 'alloc-bytes')
    ok(hits == 0, 'and stores none of them (%d hits)' % hits)
    # Beside a process that is counted, every view's header names the one that is not, in the
    # store and in a merge of it.
    db = os.path.join(d, 'own-mixed.db')
    p = record(db, ['-e', 'alloc-bytes'], ['/bin/sh', '-c', '"$0" paths 20; "$1" 100', ALLOCS, OWN])
    merged = os.path.join(d, 'own-merged.db')
    q = run([cppctl, 'merge', '--db', merged, db])
    want = 'alloc-bytes: not measured in 1 process, ownmalloc-nofp (pid '
    for store in (db, merged):
        f = run([cppctl, 'functions', '--db', store, '-r', 'alloc-bytes'])
        u = run([cppctl, 'up', '--db', store, '-r', 'alloc-bytes', '--root', 'malloc'])
        _, j = functions(store, 'alloc-bytes')
        ok(p.returncode == 0 and q.returncode == 0 and want in f.stdout and want in u.stdout and
           j.get('not_measured', '').startswith(want),
           'the header of functions, up and JSON names the process not measured (%s)' %
           ('the store' if store == db else 'a merge of it'), f.stdout[:600] + p.stderr + q.stderr)


def check_storm(d):
    db = os.path.join(d, 'storm.db')
    threads, rounds = 8, 300
    calls = threads * rounds * 64
    p = record(db, ['-e', 'alloc-count/1'], [ALLOCS, 'threads', str(threads), str(rounds)])
    if not ok(p.returncode == 0, 'record -e alloc-count/1 of %d threads of tiny allocations' % threads,
              p.stderr):
        return
    check_storm_counts(db, 'storm', calls)


def check_storm_reader_stopped(d):
    """A storm while cppctl is stopped (SIGSTOP: a reader kept from the CPU for good): the rings
    fill and the kernel drops the rest, and since nothing is written into them after the storm
    it never reports those losses in LOST records. The kernel's count of what each event could
    not write (PERF_FORMAT_LOST) still tells them: nothing lost blindly (before it, 0 lost for
    nine tenths of the calls)."""
    db = os.path.join(d, 'stopped.db')
    threads, rounds = 8, 30000
    calls = threads * rounds * 64
    p = subprocess.Popen([cppctl, 'record', '-q', '--db', db, '-e', 'alloc-count/1', '--', ALLOCS, 'threads',
                          str(threads), str(rounds), 'wait'], stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)

    def state(pid):
        with open('/proc/%d/stat' % pid) as f:
            s = f.read()
        return s[s.index('(') + 1:s.rindex(')')], s[s.rindex(')') + 2]

    child, deadline = None, time.time() + 30
    while child is None and time.time() < deadline and p.poll() is None:
        try:
            kids = open('/proc/%d/task/%d/children' % (p.pid, p.pid)).read().split()
            if kids and state(int(kids[0])) == ('allocs', 'S'):  # exec'd, reading its line
                child = int(kids[0])
        except OSError:
            pass
        time.sleep(0.01)
    if not ok(child is not None, 'record -- allocs threads ... wait: the program started', ''):
        p.kill()
        p.communicate()
        return
    os.kill(p.pid, signal.SIGSTOP)
    try:
        p.stdin.write('\n')
        p.stdin.flush()
        while time.time() < deadline and state(child)[1] != 'Z':
            time.sleep(0.01)
    finally:
        os.kill(p.pid, signal.SIGCONT)
    _, err = p.communicate()
    if ok(p.returncode == 0, 'record of a storm while cppctl was stopped', err):
        check_storm_counts(db, 'storm, the reader stopped', calls)


def check_storm_counts(db, how, calls):
    """A storm of CALLS at alloc-count/1, thinned (1 in K kept, each sample weighing K, by the
    process itself or by the kernel): what the rings could not take, and what the kernel's
    throttling dropped all the same (a tick late on a loaded machine), is counted lost, each
    sample of a weight from 1 to the largest K, so the calls lie between the hits plus the
    losses at either weight. Four standard deviations, and 2% for the runtimes' and the
    threads' own start."""
    hits, squares = hits_squared(db, 'alloc-count')
    con = sqlite3.connect(db)
    lost, thinned = con.execute("SELECT sum(rr.lost), max(rr.thinned) FROM run_resource AS rr JOIN resource "
                                "AS r ON r.id = rr.resource_id WHERE r.name = 'alloc-count'").fetchone()
    con.close()
    lost = lost or 0
    bar = 4 * math.sqrt(squares) + 0.02 * calls
    ok(thinned and thinned > 1 and hits + lost - bar <= calls <= hits + lost * thinned + bar,
       '%s: %d hits + %d samples lost (each of weight 1 to %s) for %d calls (bar %.0f): nothing lost '
       'blindly' % (how, hits, lost, thinned, calls, bar))


def heaptrack_shares(path):
    """{function: share of allocation calls in stacks through it} and the total, from heaptrack's
    folded stacks (heaptrack_print -F, cost type allocations); frames it could not name left out."""
    total, through = 0, {}
    with open(path) as f:
        for line in f:
            stack, n = line.rstrip().rsplit(' ', 1)
            total += int(n)
            for name in {re.sub(r' \(.*\)$', '', x) for x in stack.split(';') if x and not x.startswith('0x')}:
                through[name] = through.get(name, 0) + int(n)
    return {k: v / total for k, v in through.items()}, total


def check_heaptrack(d):
    """A real program, Python building and reading a large JSON document with every object
    through malloc (PYTHONMALLOC=malloc), under heaptrack and under cppd: the ten functions with
    the most allocation calls that both name, each one's share within 0.05 of heaptrack's, and
    the calls in all within their bar."""
    python = os.path.realpath('/usr/bin/python3')
    if not shutil.which('heaptrack') or not shutil.which('heaptrack_print') or not os.path.exists(python):
        print('# SKIP heaptrack cross-check: heaptrack or /usr/bin/python3 missing')
        return
    script = os.path.join(d, 'j.py')
    with open(script, 'w') as f:
        f.write("import json\n"
                "d = [{'k%d' % i: [i, str(i), {'x': i * 1.5, 'y': [i] * 3}]} for i in range(60000)]\n"
                "e = json.loads(json.dumps(d))\n")
    env = dict(os.environ, PYTHONMALLOC='malloc')
    out = os.path.join(d, 'ht')
    p = run(['heaptrack', '-o', out, python, script], env=env)
    data = out + '.zst' if os.path.exists(out + '.zst') else out + '.gz'
    folded = os.path.join(d, 'ht.txt')
    q = run(['heaptrack_print', data, '-F', folded, '--flamegraph-cost-type', 'allocations'])
    if not ok(p.returncode == 0 and q.returncode == 0 and os.path.exists(folded),
              'heaptrack ran the JSON program', p.stderr[-500:] + q.stderr[-500:]):
        return
    theirs, calls = heaptrack_shares(folded)
    db = os.path.join(d, 'json.db')
    p = run([cppctl, 'record', '-q', '--db', db, '-e', 'alloc-count/2000', '--', python, script], env=env)
    if not ok(p.returncode == 0 and 'not counted' not in p.stderr, 'record -e alloc-count of the JSON program',
              p.stderr):
        return
    ours, j = functions(db, 'alloc-count')
    top = sorted((f for f in theirs if f in ours), key=lambda f: -theirs[f])[:10]
    worst = max(top, key=lambda f: abs(ours[f][0] - theirs[f]))
    ok(len(top) == 10 and abs(ours[worst][0] - theirs[worst]) <= 0.05,
       'against heaptrack: the top ten functions by allocation calls within 0.05 (the farthest: %s, %.3f '
       'against %.3f)' % (worst, ours[worst][0], theirs[worst]),
       ['%s %.3f %.3f' % (f, ours[f][0], theirs[f]) for f in top])
    # The count: within four standard deviations of cppd's weights, and 1% for what the two
    # runs' starts allocate differently.
    hits, squares = hits_squared(db, 'alloc-count')
    ours_calls, bar = hits * j['period'], (4 * math.sqrt(squares) * j['period'] + 0.01 * calls)
    ok(abs(ours_calls - calls) <= bar,
       'against heaptrack: %d allocation calls counted, heaptrack %d (bar %.0f)' % (ours_calls, calls, bar))


def links_of(pid):
    """The BPF uprobe_multi links process PID holds."""
    n = 0
    try:
        for fd in os.listdir('/proc/%d/fdinfo' % pid):
            try:
                with open('/proc/%d/fdinfo/%s' % (pid, fd)) as f:
                    n += 'link_type:\tuprobe_multi' in f.read()
            except OSError:
                pass
    except OSError:
        pass
    return n


def wait_links(pid, n=1, timeout=30):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if links_of(pid) >= n:
            return True
        time.sleep(0.05)
    return False


def attach(db, args, pid):
    return subprocess.Popen([cppctl, 'attach', '--standalone', '--db', db] + args + [str(pid)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def attach_waiting(db, args, argv, timeout=120):
    """Starts ARGV (which waits for a line on stdin), attaches cppctl to it, lets it go once its
    uprobes are placed. Returns (linked, the program's exit status, cppctl's, its stdout, its
    stderr)."""
    w = subprocess.Popen(argv, stdin=subprocess.PIPE)
    p = attach(db, args, w.pid)
    try:
        linked = wait_links(p.pid)
        w.stdin.write(b'\n')
        w.stdin.close()
        w.wait(timeout=timeout)
        out, err = p.communicate(timeout=timeout)
    finally:
        w.kill()
        p.kill()
    return linked, w.returncode, p.returncode, out, err


def check_attach_paths(d):
    """cppctl attach: uprobes on glibc's allocator, counted and sampled in the kernel."""
    db = os.path.join(d, 'attach.db')
    w = subprocess.Popen([ALLOCS, 'paths', '1000000'])
    try:
        time.sleep(0.2)
        p = attach(db, ['-e', 'alloc-bytes,alloc-count', '--duration', '3'], w.pid)
        out, err = p.communicate(timeout=120)
    finally:
        w.kill()
        w.wait()
    if not ok(p.returncode == 0 and re.search(r'uprobes on glibc 2\.\d+ \(\S*libc\.so\.6\) in 1 process', out),
              'attach -e alloc-bytes,alloc-count to a running program: its allocator probed, said so',
              out + err):
        return
    for resource, index, total, period in (('alloc-bytes', 1, ROUND_BYTES, 524288),
                                           ('alloc-count', 2, ROUND_CALLS, 1000)):
        check_shares(db, 'attach', resource, index, total, period)
    f = run([cppctl, 'functions', '--db', db, '-r', 'alloc-bytes'])
    ok("alloc-bytes: counted by uprobes on glibc's allocator: each allocation call of a probed process trapped "
       "into the kernel (about 0.8 us)" in f.stdout, 'attach: the header says the uprobes and their cost',
       f.stdout[:600])
    # The innermost frame is the probed entry point: its caller's frame is the program's
    # (DWARF unwinding from the breakpoint at the function's first instruction).
    p = run([cppctl, 'export', '--db', db, '-r', 'alloc-bytes', '--format', 'folded'])
    lines = [x.rsplit(' ', 1)[0] for x in p.stdout.splitlines()]
    ok(any(x.endswith('allocs_round;small;malloc') for x in lines) and
       any(x.endswith('array;operator new(unsigned long);malloc') or x.endswith('array;operator new;malloc')
           for x in lines),
       'attach: small -> malloc, array -> operator new -> malloc', lines[:8])


def check_attach_edges(d):
    """Each call counted once under the uprobes, whatever glibc relays to malloc; failed ones not."""
    db = os.path.join(d, 'attach-edges.db')
    linked, w_rc, p_rc, out, err = attach_waiting(db, ['-e', 'alloc-bytes/1,alloc-count/1'], [ALLOCS, 'edges', 'wait'],
                                                  60)
    if not ok(linked and w_rc == 0 and p_rc == 0,
              'attach to allocs edges: every allocator answers as glibc does under the uprobes', err):
        return
    # allocs.cpp's edges(): 64 malloc(8), then malloc(0), malloc(16), reallocarray(NULL, 16, 64)
    # (realloc(NULL, 1024): counted at malloc), aligned_alloc(64, 4096), posix_memalign(4096,
    # 8192), memalign(128, 1000), valloc(100), pvalloc(100); realloc(p, 0), the huge sizes,
    # calloc's and reallocarray's overflows and posix_memalign(3) not.
    calls, _ = hits_squared(db, 'alloc-count')
    nbytes, _ = hits_squared(db, 'alloc-bytes')
    want_calls, want_bytes = 64 + 8, 64 * 8 + 16 + 1024 + 4096 + 8192 + 1000 + 100 + 100
    ok(calls == want_calls, 'attach, alloc-count/1: %d calls counted, %d made' % (calls, want_calls))
    ok(nbytes == want_bytes, 'attach, alloc-bytes/1: %d bytes counted, %d allocated' % (nbytes, want_bytes))


def check_attach_storm(d):
    """A storm of tiny allocations under the uprobes: thinned in the kernel with weights, nothing
    lost blindly."""
    db = os.path.join(d, 'attach-storm.db')
    threads, rounds = 8, 300
    calls = threads * rounds * 64
    linked, w_rc, p_rc, out, err = attach_waiting(db, ['-e', 'alloc-count/1'],
                                                  [ALLOCS, 'threads', str(threads), str(rounds), 'wait'])
    if not ok(linked and w_rc == 0 and p_rc == 0,
              'attach -e alloc-count/1 to %d threads of tiny allocations' % threads, err):
        return
    check_storm_counts(db, 'attach storm', calls)


def check_attach_children(d):
    """A child the target starts and that execs a program is probed as the records tell of it."""
    db = os.path.join(d, 'attach-child.db')
    linked, w_rc, p_rc, out, err = attach_waiting(db, ['-e', 'alloc-bytes'],
                                                  ['/bin/sh', '-c', 'read x; "$0" paths 300', ALLOCS])
    f, _ = functions(db, 'alloc-bytes') if p_rc == 0 else ({}, None)
    small = f.get('small', (0,))[0]
    ok(linked and p_rc == 0 and abs(small - 0.632) < 0.05 and
       re.search(r'in 2 processes', out) and 'were not counted' in err,
       'attach to a shell that starts allocs: the child probed (small %.3f), its first milliseconds '
       'said to be uncounted' % small, out + err)


def check_attach_no_sys_admin(d):
    """uprobe_multi links need CAP_BPF and CAP_PERFMON, not CAP_SYS_ADMIN (which the perf uprobe
    PMU needs since Linux 6.16, and cppd.service does not have)."""
    if not shutil.which('setpriv'):
        print('# SKIP attach without CAP_SYS_ADMIN: no setpriv')
        return
    db = os.path.join(d, 'nocap.db')
    w = subprocess.Popen([ALLOCS, 'paths', '1000000'])
    try:
        time.sleep(0.2)
        p = run(['setpriv', '--bounding-set', '-sys_admin', '--inh-caps', '-sys_admin', '--', cppctl, 'attach',
                 '--standalone', '-q', '--db', db, '-e', 'alloc-bytes', '--duration', '1', str(w.pid)])
    finally:
        w.kill()
        w.wait()
    hits, _ = hits_squared(db, 'alloc-bytes') if p.returncode == 0 else (0, 0)
    ok(p.returncode == 0 and hits > 0, 'attach -e alloc-bytes without CAP_SYS_ADMIN: %d hits' % hits, p.stderr)


def check_attach_fake_libc(d):
    """A process that maps, executable, a file named libc.so.6 that is no glibc (a copy of
    /bin/true) beside its real one: the real one probed, the other ignored."""
    python = '/usr/bin/python3.11' if os.path.exists('/usr/bin/python3.11') else None
    if not python:
        print('# SKIP a fake libc.so.6: no /usr/bin/python3.11')
        return
    fake = os.path.join(d, 'fake', 'libc.so.6')
    os.makedirs(os.path.dirname(fake), exist_ok=True)
    shutil.copy('/bin/true', fake)
    script = os.path.join(d, 'fake', 'f.py')
    with open(script, 'w') as f:
        f.write("import mmap, os, sys, time\n"
                "m = mmap.mmap(os.open(sys.argv[1], os.O_RDONLY), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC, "
                "flags=mmap.MAP_PRIVATE)\n"
                "print('mapped', flush=True)\n"
                "end = time.time() + 60\n"
                "while time.time() < end:\n"
                "    x = [bytes(100) for _ in range(1000)]\n")
    db = os.path.join(d, 'fake.db')
    w = subprocess.Popen([python, script, fake], stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, PYTHONMALLOC='malloc'))
    try:
        w.stdout.readline()
        p = run([cppctl, 'attach', '--standalone', '-q', '--db', db, '-e', 'alloc-count', '--duration', '1',
                 str(w.pid)])
    finally:
        w.kill()
        w.wait()
    hits, _ = hits_squared(db, 'alloc-count') if p.returncode == 0 else (0, 0)
    ok(p.returncode == 0 and hits > 0,
       'attach to a process that maps a fake libc.so.6 beside its glibc: the glibc probed (%d hits)' % hits,
       p.stderr)


def check_attach_own(d):
    w = subprocess.Popen([OWN, '10', '60'])
    try:
        time.sleep(0.2)
        p = run([cppctl, 'attach', '--standalone', '--db', os.path.join(d, 'own-attach.db'), '-e', 'alloc-bytes',
                 '--duration', '1', str(w.pid)])
    finally:
        w.kill()
        w.wait()
    ok(p.returncode != 0 and 'an allocator of its own (ownmalloc-nofp defines malloc)' in p.stderr,
       'attach -e alloc-bytes to a program with an allocator of its own: refused, saying why', p.stderr)


def cgroup_root():
    for d in ('/sys/fs/cgroup', '/sys/fs/cgroup/unified'):
        if os.path.exists(os.path.join(d, 'cgroup.procs')) and \
                run(['stat', '-f', '-c', '%T', d]).stdout.strip() == 'cgroup2fs':
            return d
    return None


def in_cgroup(path):
    def enter():
        with open(os.path.join(path, 'cgroup.procs'), 'w') as f:
            f.write(str(os.getpid()))
    return enter


def check_daemon(d):
    """cppd with [alloc] units: the processes of those units probed, a running one and one started
    later; and alloc-* in [collect] resources refused, naming [alloc]."""
    conf = os.path.join(d, 'cppd.conf')
    with open(conf, 'w') as f:
        f.write('[collect]\nresources = cpu-time/10,alloc-bytes\n[store]\npath = %s\n'
                '[control]\nsocket = %s\n' % (os.path.join(d, 'r.db'), os.path.join(d, 'r.sock')))
    try:
        p = run([cppd, '-c', conf], timeout=20)
        ok(p.returncode != 0 and '[alloc] units' in p.stderr,
           'cppd with alloc-bytes in [collect] resources: refuses to start, naming [alloc] units', p.stderr[-600:])
    except subprocess.TimeoutExpired:
        ok(False, 'cppd with alloc-bytes in [collect] resources: refuses to start', 'it started')
    root = cgroup_root()
    if not root:
        print('# SKIP the daemon\'s [alloc] units: no cgroup2 hierarchy')
        return
    unit = 'cppd-alloc-test-%d.service' % os.getpid()
    other = 'cppd-alloc-other-%d.service' % os.getpid()
    cg, cg_other = os.path.join(root, unit), os.path.join(root, other)
    os.makedirs(cg, exist_ok=True)
    os.makedirs(cg_other, exist_ok=True)
    procs = []
    dm = None
    try:
        procs.append(subprocess.Popen([ALLOCS, 'paths', '1000000'], preexec_fn=in_cgroup(cg)))
        procs.append(subprocess.Popen([ALLOCS, 'paths', '1000000'], preexec_fn=in_cgroup(cg_other)))
        dm = daemon.Daemon(cppd, d, 'alloc', 'cpu-time/10', flush=0.5,
                           extra='[alloc]\nunits = %s\n' % unit)
        if not ok(dm.ready(), 'cppd with [alloc] units = %s started' % unit, dm.log_text()[-800:]):
            return
        procs.append(subprocess.Popen([ALLOCS, 'paths', '1000000'], preexec_fn=in_cgroup(cg)))
        time.sleep(3)
        dm.flush_all()
        st = run([cppctl, 'status', '--socket', dm.sock])
        ok(st.returncode == 0 and re.search(r'uprobes in 2 processes', st.stdout),
           'cppctl status: the unit\'s two processes probed', st.stdout[-1200:] + st.stderr)
    finally:
        for w in procs:
            w.kill()
            w.wait()
        if dm:
            dm.stop()
        for c in (cg, cg_other):
            try:
                os.rmdir(c)
            except OSError:
                pass
    db = dm.store
    con = sqlite3.connect(db)
    pids = {r[0] for r in con.execute(
        "SELECT DISTINCT p.pid FROM sample AS s JOIN thread AS t ON t.id = s.thread_id JOIN process AS p ON "
        "p.id = t.process_id JOIN resource AS r ON r.id = s.resource_id WHERE r.name = 'alloc-bytes'")}
    con.close()
    ok(pids == {procs[0].pid, procs[2].pid},
       'cppd [alloc] units: the unit\'s process running at the start and the one started later, not the '
       'other unit\'s (pids %s; unit %s, other %s)' % (sorted(pids), [procs[0].pid, procs[2].pid], procs[1].pid))
    for resource, index, total, period in (('alloc-bytes', 1, ROUND_BYTES, 524288),
                                           ('alloc-count', 2, ROUND_CALLS, 1000)):
        check_shares(db, 'cppd', resource, index, total, period, '--unit', unit)


def main():
    with tempfile.TemporaryDirectory() as d:
        check_paths(d)
        check_fixed(d)
        check_edges(d)
        check_own_allocator(d)
        check_storm(d)
        check_storm_reader_stopped(d)
        check_heaptrack(d)
        check_attach_paths(d)
        check_attach_edges(d)
        check_attach_storm(d)
        check_attach_children(d)
        check_attach_no_sys_admin(d)
        check_attach_fake_libc(d)
        check_attach_own(d)
        check_daemon(d)
    return done()


sys.exit(main())
