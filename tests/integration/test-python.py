#!/usr/bin/env python3
"""Python frames: CPython's functions in the call paths, read in the kernel at each sample
(common/collect/sampling-bpf.c, emit_python(); collector-python.c). TAP output.

Usage: test-python.py CPPCTL CPPD WORKLOADS_DIR WORKLOADS_SOURCE_DIR

Truth by construction and by measure (tests/workloads/pyshares.py): three functions spend CPU
time in the proportions 0.50, 0.30, 0.20 by construction, one through a recursion, one in a thread,
one in a coroutine, and the program measures each one's time with its thread's CPU clock: the
thread's units cost more or less than the main thread's from one run to the next (0.23 to 0.37 of
the three seen on a busy VM), so the truth is what the run measured. Their shares must be within
twice their printed 95% bar of it (plus 0.02 for the interpreter's own work around the units),
recorded by `cppctl record` and by the daemon; and within 0.03 of what the
program measures of itself with an ITIMER_PROF sampler of its own frames (pyshares.py selfcheck,
an independent sampler). Native frames stay where they are: a C extension's (zlib's deflate) under
the Python function that called it, a system call's under the Python function that made it.
Hostile input (tests/workloads/fakepython.c): frames that loop, cycle, are garbage or unmapped,
an unknown version, a library named libpython that is none: no crash, native stacks kept,
unreadable frames counted."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import daemon
from tap import done, ok, skip_all

cppctl, cppd, workloads, sources = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
PYTHON = '/usr/bin/python3.11'
SHARES = os.path.join(sources, 'pyshares.py')
FAKE = os.path.join(workloads, 'fakepython')
LIBPYTHON = os.path.join(workloads, 'libpython3.11.so')
# pyshares.py's functions and their shares of its CPU work (its opening comment).
TRUTH = {'Work.alpha': 0.50, 'beta_thread': 0.30, 'gamma_coro': 0.20}
SLACK = 0.02

if os.geteuid() != 0:
    skip_all('needs root (perf events for every task, BPF)')
if not os.path.exists(PYTHON):
    skip_all('no %s (Debian 12\'s python3.11)' % PYTHON)
if not os.path.exists('/sys/kernel/btf/vmlinux'):
    skip_all('the kernel has no BTF (/sys/kernel/btf/vmlinux): Python frames cannot be read')


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def record(db, args, command):
    return run([cppctl, 'record', '-q', '--db', db] + args + ['--'] + command)


def functions(db, resource='cpu-time', *filters):
    """{function: (fraction, ci95 low, ci95 high, hits)} and the JSON header."""
    p = run([cppctl, 'functions', '--db', db, '-r', resource, '-t', '0', '--json'] + list(filters))
    if p.returncode not in (0, 3):
        raise RuntimeError(p.stderr)
    j = json.loads(p.stdout)
    return {e['path'][0]: (e['fraction'], e['ci95'][0], e['ci95'][1], e['hits']) for e in j['entries']}, j


def folded(db, resource='cpu-time', *filters):
    p = run([cppctl, 'export', '--db', db, '-r', resource, '--format', 'folded'] + list(filters))
    out = []
    for line in p.stdout.splitlines():
        stack, n = line.rsplit(' ', 1)
        out.append((stack.split(';'), int(n)))
    return out


def measured(out):
    """The three functions' shares of the CPU time the run measured (pyshares.py's `spent` lines)."""
    spent = {}
    for line in out.splitlines():
        w = line.split()
        if len(w) == 3 and w[0] == 'spent':
            spent[w[1]] = int(w[2])
    total = sum(spent.get(n, 0) for n in TRUTH)
    return {n: spent.get(n, 0) / total for n in TRUTH} if total else None


def check_truth(who, db, out, *filters):
    """Each function's share among the three against the run's measure (OUT, its output), within
    twice its bar."""
    truths = measured(out)
    if not ok(truths is not None, '%s: pyshares.py measured its functions\' CPU time' % who, out[-2000:]):
        return {}
    f, j = functions(db, 'cpu-time', *filters)
    total = sum(f.get(n, (0, 0, 0, 0))[3] for n in TRUTH)
    ok(total > 200, '%s: %d hits in the three functions (of %d)' % (who, total, j['hits']), j.get('python'))
    if total == 0:
        return {}
    shares = {}
    for name, truth in truths.items():
        fr, lo, hi, hits = f.get(name, (0.0, 0.0, 0.0, 0))
        share = hits / total
        # The bar of the share among the three: the printed bar scaled the same way.
        half = (hi - lo) / 2 * j['hits'] / total
        shares[name] = share
        ok(abs(share - truth) <= 2 * half + SLACK,
           '%s: %s %.3f of the three (bar ±%.3f), truth %.3f by its thread\'s clock (%.2f by '
           'construction)' % (who, name, share, half, truth, TRUTH[name]))
    return shares


def check_cpu(d):
    db = os.path.join(d, 'cpu.db')
    p = record(db, [], [PYTHON, SHARES, 'cpu', '3'])
    if not ok(p.returncode == 0, 'record of pyshares.py cpu', p.stderr):
        return
    check_truth('record', db, p.stdout)
    f, j = functions(db)
    eval_share = f.get('_PyEval_EvalFrameDefault', (0, 0, 0, 0))[0]
    ok(eval_share < 0.05, 'record: the interpreter\'s loop is replaced by the functions it ran '
       '(_PyEval_EvalFrameDefault %.3f)' % eval_share)
    m = re.search(r'Python frames in (\d+) samples', j.get('python', ''))
    ok(m and int(m.group(1)) >= 0.9 * j['samples'], 'record: the header says %s of %d samples had Python frames'
       % (m.group(1) if m else 'none', j['samples']), j.get('python'))
    stacks = folded(db)
    # The recursion counts once per sample: alpha's callers include the recursive function many
    # times over, and its share is alpha's, not a multiple.
    rec = [s for s, _ in stacks if 'Work.alpha' in s]
    depth = max((s.count('Work.recurse') for s in rec), default=0)
    ok(depth >= 5, 'record: alpha is reached through %d frames of Work.recurse' % depth)
    rshare = f.get('Work.recurse', (0, 0, 0, 0))[0]
    ok(rshare <= f.get('<module>', (1, 0, 0, 0))[0] + 1e-9 and rshare > 0,
       'record: the recursive function counts once per sample (%.3f)' % rshare)
    # The thread's and the coroutine's frames under theirs: threading's and asyncio's own.
    ok(any('beta_thread' in s and 'Thread.run' in s for s, _ in stacks), 'record: beta_thread under Thread.run')
    ok(any('gamma_coro' in s and any(n.startswith('BaseEventLoop') for n in s) for s, _ in stacks),
       'record: gamma_coro under the event loop')
    # Native frames outer than the interpreter's loop stay: Py_BytesMain above <module>.
    ok(any(s[:1] == ['_start'] and 'Py_BytesMain' in s and '<module>' in s and
           s.index('Py_BytesMain') < s.index('<module>') for s, _ in stacks),
       'record: _start ... Py_BytesMain ... <module>: the native frames around the Python ones')
    # A Python function is a function like any other: its module is its file.
    p = run([cppctl, 'functions', '--db', db, '-t', '0.05', '--by', 'module'])
    ok('pyshares.py' in p.stdout, 'record: --by module names pyshares.py', p.stdout[-2000:])
    p = run([cppctl, 'sql', '--db', db, "SELECT count(*) FROM function AS f JOIN module AS m ON m.id = f.module_id "
             "WHERE m.path LIKE '%pyshares.py' AND f.name IN ('Work.alpha', 'beta_thread', 'gamma_coro')"])
    ok(p.returncode == 0 and re.search(r'\b3\b', p.stdout), 'sql: the three functions have pyshares.py as their module',
       p.stdout + p.stderr)
    # Lines: --lines keeps each frame's file:line.
    db2 = os.path.join(d, 'lines.db')
    p = record(db2, ['--lines'], [PYTHON, SHARES, 'cpu', '1'])
    p = run([cppctl, 'functions', '--db', db2, '-t', '0.05', '--by', 'line'])
    ok(re.search(r'Work\.alpha \(pyshares\.py:\d+\)', p.stdout), 'record --lines: Work.alpha (pyshares.py:LINE)',
       p.stdout[-2000:])


def check_selfcheck(d):
    """The program's own sampler of its frames (ITIMER_PROF) and cppd, on the same run: 12 s, so
    that the difference of the two samplings' noise (some 3,000 samples of the program's own, at
    the kernel's 4 ms tick, and 12,000 of cppd's) is a third of the 0.03 allowed."""
    db = os.path.join(d, 'selfcheck.db')
    p = record(db, [], [PYTHON, SHARES, 'selfcheck', '12'])
    own = {}
    for line in p.stdout.splitlines():
        w = line.split()
        if len(w) == 3 and w[0] == 'share':
            own[w[1]] = float(w[2])
    if not ok(p.returncode == 0 and all(n in own for n in TRUTH), 'pyshares.py selfcheck under cppctl record',
              p.stdout + p.stderr):
        return
    f, j = functions(db)
    total = sum(f.get(n, (0, 0, 0, 0))[3] for n in TRUTH)
    mine_total = sum(own[n] for n in TRUTH)
    for n in TRUTH:
        theirs = f.get(n, (0, 0, 0, 0))[3] / total if total else 0.0
        mine = own[n] / mine_total if mine_total else 0.0
        ok(abs(theirs - mine) <= 0.03, 'cross-check: %s %.3f by cppd, %.3f by the program\'s own sampler of the '
           'same run' % (n, theirs, mine))


def check_no_python(d):
    db = os.path.join(d, 'native.db')
    p = record(db, ['--no-python'], [PYTHON, SHARES, 'cpu', '1'])
    f, j = functions(db)
    ok(p.returncode == 0 and 'Work.alpha' not in f and f.get('_PyEval_EvalFrameDefault', (0,))[0] > 0.5 and
       'python' not in j, '--no-python: native frames only (_PyEval_EvalFrameDefault %.3f)' %
       f.get('_PyEval_EvalFrameDefault', (0,))[0], p.stderr)


def check_native_under_python(d):
    db = os.path.join(d, 'zlib.db')
    p = record(db, [], [PYTHON, SHARES, 'zlib', '2'])
    stacks = folded(db)
    ok(p.returncode == 0 and any('compress_loop' in s and 'deflate' in s and s.index('compress_loop') < s.index('deflate')
                                 for s, _ in stacks),
       'zlib: deflate (libz) under the Python function that called zlib.compress',
       '\n'.join(';'.join(s[-8:]) for s, _ in stacks[:10]))
    db = os.path.join(d, 'syscalls.db')
    p = record(db, ['-e', 'syscalls,context-switches'], [PYTHON, SHARES, 'syscalls', '2'])
    stacks = folded(db, 'syscalls')
    leafs = {}
    for s, n in stacks:
        if s[-1].startswith('syscall:') and 'getppid_loop' in s:
            leafs[s[-1]] = leafs.get(s[-1], 0) + n
    total = sum(n for _, n in stacks)
    ok(p.returncode == 0 and leafs.get('syscall:getppid', 0) > 0.5 * total,
       'syscalls: syscall:getppid under getppid_loop (%d of %d hits)' % (leafs.get('syscall:getppid', 0), total),
       '\n'.join(';'.join(s[-6:]) for s, _ in stacks[:10]))
    stacks = folded(db, 'context-switches')
    total = sum(n for _, n in stacks)
    blocked = sum(n for s, n in stacks if 'sleep_loop' in s)
    ok(total > 0 and blocked > 0.5 * total, 'context-switches: a Python call path that blocks (sleep_loop: %d of %d)'
       % (blocked, total))


def check_daemon(d):
    dm = daemon.Daemon(cppd, d, 'py', 'cpu-time/5,context-switches', flush=0.5)
    try:
        if not ok(dm.ready(), 'cppd started', dm.log_text()[-800:]):
            return
        p = subprocess.Popen([PYTHON, SHARES, 'cpu', '4'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = p.communicate()
        time.sleep(1)
        dm.flush_all()
    finally:
        dm.stop()
    if not ok(p.returncode == 0, 'daemon: pyshares.py cpu ran beside it', err):
        return
    check_truth('daemon', dm.store, out, '--pid', str(p.pid))


def check_fork_exec(d):
    """A Python parent forks a Python child (frames from the child's first samples, its entry
    inherited), which execs a second Python (re-registered)."""
    script = os.path.join(d, 'forker.py')
    with open(script, 'w') as f:
        f.write('''import os, sys, time
def spin(seconds):
    end = time.time() + seconds
    while time.time() < end:
        sum(range(1000))
def parent_work():
    spin(0.8)
def child_work():
    spin(0.8)
    os.execv(sys.executable, [sys.executable, sys.argv[0], 'second'])
def second_work():
    spin(0.8)
if sys.argv[1:] == ['second']:
    second_work()
else:
    pid = os.fork()
    if pid == 0:
        child_work()
    parent_work()
    os.waitpid(pid, 0)
''')
    db = os.path.join(d, 'fork.db')
    p = record(db, [], [PYTHON, script])
    f, j = functions(db)
    for name in ('parent_work', 'child_work', 'second_work'):
        ok(p.returncode == 0 and f.get(name, (0,))[0] > 0.1, 'fork and exec: %s %.3f' % (name, f.get(name, (0,))[0]),
           p.stderr)


def check_hostile(d):
    for mode in ('loop', 'cycle', 'garbage', 'unmapped', 'version'):
        db = os.path.join(d, 'fake-%s.db' % mode)
        if mode == 'version':
            p = run([cppctl, 'record', '--db', db, '--', FAKE + '314', 'loop', '1'])
        else:
            p = run([cppctl, 'record', '--db', db, '--', FAKE, mode, '1'])
        f, j = functions(db)
        spin = f.get('spin', (0,))[0]
        ok(p.returncode == 0 and spin > 0.9, 'hostile %s: recorded, the native spin %.3f kept' % (mode, spin),
           p.stderr)
        stacks = folded(db)
        if mode == 'garbage':
            unreadable = sum(n for s, n in stacks if '[python: unreadable]' in s)
            ok(unreadable > 0 and re.search(r'frames unreadable', j.get('python', '')),
               'hostile garbage: code objects that are none stored as [python: unreadable], counted: %s'
               % j.get('python'), '\n'.join(';'.join(s[-6:]) for s, _ in stacks[:5]))
        if mode in ('loop', 'cycle'):
            deepest = max((len(s) for s, _ in stacks), default=0)
            ok(deepest < 64 + 20, 'hostile %s: the walk is bounded (deepest stack %d frames)' % (mode, deepest))
        if mode == 'version':
            warnings = [x for x in p.stderr.splitlines() if 'Python frames' in x]
            ok(len(warnings) == 1 and '3.14' in warnings[0] and 'python' not in j,
               'hostile version: one warning, no Python frames: %s' % warnings, p.stderr)
    db = os.path.join(d, 'fake-named.db')
    p = run([cppctl, 'record', '--db', db, '--', FAKE + '-named', 'named', '1', LIBPYTHON])
    f, j = functions(db)
    ok(p.returncode == 0 and 'python' not in j and 'Python frames' not in p.stderr and f.get('spin', (0,))[0] > 0.9,
       'hostile: a library named libpython3.11.so that defines nothing is no Python', p.stderr)


def main():
    with tempfile.TemporaryDirectory() as d:
        check_cpu(d)
        check_selfcheck(d)
        check_no_python(d)
        check_native_under_python(d)
        check_fork_exec(d)
        check_hostile(d)
        check_daemon(d)
    return done()


if __name__ == '__main__':
    sys.exit(main())
