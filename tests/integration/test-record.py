#!/usr/bin/env python3
"""cppctl record and attach on real perf events, on the workloads of tests/workloads/ (each
file's opening comment says what its profile must show). TAP output.

Usage: test-record.py CPPCTL WORKLOADS_DIR

Tolerances, and why:
- Counts of deterministic events (read(2) calls, bytes read, page faults) are exact up to the
  handful of events of the C runtime's start, so ratios of them are asserted within 5%.
- Shares of CPU time are asserted against generous bounds (the workloads are built so that the
  share that matters is far from the bound): sampling noise at ~500 samples is ~2%, and the VM
  adds jitter.
- Against perf, on page faults (a deterministic count, the same period): each workload
  function's share within 0.05."""
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import stacks
from tap import done, ok, skip_all

cppctl, workloads = sys.argv[1], sys.argv[2]


def workload(name):
    return os.path.join(workloads, name)


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def record(db, args, command):
    return run([cppctl, 'record', '-q', '--db', db] + args + ['--'] + command)


def profile(view, db, resource, root=None, threshold='0'):
    argv = [cppctl, view, '--db', db, '-r', resource, '-t', threshold, '--json']
    if root:
        argv += ['--root', root]
    p = run(argv)
    if p.returncode not in (0, 3):
        raise RuntimeError('%s failed: %s' % (' '.join(argv), p.stderr))
    return json.loads(p.stdout)


def paths(p):
    """{"main uniquify_db": fraction} of a profile."""
    return {' '.join(e['path']): e['fraction'] for e in p['entries']}


def hits(p):
    return {' '.join(e['path']): e['hits'] for e in p['entries']}


def starts_with(p, prefix):
    """The largest fraction among paths whose first names are PREFIX."""
    best = 0.0
    for e in p['entries']:
        if e['path'][:len(prefix)] == prefix:
            best = max(best, e['fraction'])
    return best


def qsort_share(p, caller):
    """The fraction of (main CALLER qsort...) in downward profile P: glibc 2.36's qsort tail-calls
    qsort_r, so the frame may be either."""
    return max([f for path, f in paths(p).items()
                if path in ('main %s qsort' % caller, 'main %s qsort_r' % caller)] or [0.0])


def test_process_db(tmp):
    db = os.path.join(tmp, 'pdb.db')
    p = record(db, ['-e', 'cpu-time,page-faults/4'], [workload('process_db-nofp')])
    if not ok(p.returncode == 0, 'record process_db (no frame pointers) with DWARF unwinding', p.stderr):
        return
    faults = profile('down', db, 'page-faults', 'main')
    share = qsort_share(faults, 'uniquify_db')
    ok(share >= 0.6, 'page faults: (main uniquify_db qsort) has %.2f, as the paper finds most of them there' % share,
       json.dumps(faults['entries'][:10]))
    other = qsort_share(faults, 'print_salary_list')
    ok(other < 0.15, 'page faults: (main print_salary_list qsort) has only %.2f' % other)
    ok(paths(faults).get('main print_salary_list extract_salary_fields', 0) > 0,
       'page faults: (main print_salary_list extract_salary_fields) has some')
    cpu = profile('down', db, 'cpu-time', 'main')
    share = qsort_share(cpu, 'uniquify_db')
    # Not a share of the whole: on a fresh VM the first touch of guest memory makes read_db's
    # writes to the memfd (kernel time) cost more than the sort. Within uniquify_db, the sort is
    # nearly everything, and that takes the unwinding through glibc's qsort to see.
    uniquify = paths(cpu).get('main uniquify_db', 0)
    ok(uniquify >= 0.2 and share >= 0.9 * uniquify, 'cpu-time: (main uniquify_db qsort) has %.2f of '
       '(main uniquify_db)\'s %.2f' % (share, uniquify), json.dumps(cpu['entries'][:10]))
    up = profile('up', db, 'page-faults', 'name_field_lt')
    ok(starts_with(up, ['main', 'uniquify_db']) >= 0.6,
       'upward from name_field_lt: its faults come through (main uniquify_db ...), across glibc')
    ok(faults['lost'] == 0, 'no samples lost (%d)' % faults['lost'])
    ok(faults['frames_unsymbolized'] < 0.02, 'frames unsymbolized: %.3f' % faults['frames_unsymbolized'])

    # Frames are stored as functions: no call sites, and --by line says so. With --lines the
    # same recording keeps them, and the views can show call sites.
    with sqlite3.connect(db) as con:
        located = con.execute('SELECT count(*) FROM frame WHERE address IS NOT NULL OR line IS NOT NULL').fetchall()
    ok(located == [(0,)], 'frames stored as functions by default: no addresses or lines', located)
    p = run([cppctl, 'down', '--db', db, '-r', 'page-faults', '--root', 'uniquify_db', '--by', 'line'])
    ok(p.returncode == 0 and 'keeps its frames as functions' in p.stderr and '--lines' in p.stderr,
       '--by line on it: functions, and a notice that says how to keep call sites', p.stderr)
    db_lines = os.path.join(tmp, 'pdb-lines.db')
    p = record(db_lines, ['-e', 'page-faults/4', '--lines'], [workload('process_db-nofp')])
    if ok(p.returncode == 0, 'record process_db --lines', p.stderr):
        by_line = run([cppctl, 'down', '--db', db_lines, '-r', 'page-faults', '--root', 'uniquify_db', '--by', 'line',
                       '-t', '0', '--json'])
        entries = json.loads(by_line.stdout)['entries'] if by_line.returncode == 0 else []
        ok(any(re.fullmatch(r'uniquify_db \(process_db\.c:\d+\)', e['path'][0]) for e in entries) and
           'keeps its frames as functions' not in by_line.stderr,
           '--by line shows call sites, "uniquify_db (process_db.c:N)"', [e['path'] for e in entries[:3]])
        ok(os.path.getsize(db_lines) > os.path.getsize(db),
           'a store with call sites is the larger (%d bytes against %d)' % (os.path.getsize(db_lines), os.path.getsize(db)))

    db_fp = os.path.join(tmp, 'pdb-fp.db')
    p = record(db_fp, ['-e', 'page-faults/4', '--unwind', 'fp'], [workload('process_db-fp')])
    if ok(p.returncode == 0, 'record process_db with frame pointers, --unwind fp', p.stderr):
        fp = profile('down', db_fp, 'page-faults', 'main')
        share_fp = qsort_share(fp, 'uniquify_db')
        ok(share_fp < 0.3, 'with frame pointers only, the faults in qsort lose their caller uniquify_db '
           '(%.2f against %.2f with DWARF): glibc has no frame pointers' % (share_fp, share))
    return db


def test_reader(tmp):
    db = os.path.join(tmp, 'reader.db')
    # 4 MiB and 3 x 4 MiB in 256 KiB reads: 16 and 48 calls within a millisecond, whose 128
    # samples of 16 KiB of stack fit the ring buffer even if cppctl could not run meanwhile.
    # Exact counts need fixed periods: with random intervals a 256 KiB read makes 0, 1 or 2 hits.
    p = record(db, ['--no-jitter', '-e', 'syscalls/1,bytes-read/262144'], [workload('reader-nofp'), '4096', '262144'])
    if not ok(p.returncode == 0, 'record reader with syscalls and bytes-read', p.stderr):
        return
    for resource, want_config in (('syscalls', 48), ('bytes-read', 48)):
        h = hits(profile('down', db, resource, 'main'))
        config = h.get('main load_config read_chunks', 0)
        data = h.get('main load_data read_chunks', 0)
        ok(abs(config - want_config) <= 1 and data > 0 and abs(config / data - 3) <= 0.15,
           '%s: (main load_config read_chunks) %d and (main load_data read_chunks) %d hits, 3:1 within 5%%'
           % (resource, config, data), json.dumps(h, indent=1))
    # Without --no-jitter the byte counts' intervals are drawn at random, in cppctl: the header
    # says so (it said "periods fixed" while no kernel program was planned for them).
    db2 = os.path.join(tmp, 'reader-random.db')
    p = record(db2, ['-e', 'bytes-read/262144'], [workload('reader-nofp'), '4096', '262144'])
    q = run([cppctl, 'functions', '--db', db2, '-r', 'bytes-read'])
    ok(p.returncode == 0 and 'periods fixed' not in p.stderr and 'at random' in q.stdout,
       'bytes-read: intervals at random, and the header and record say so', p.stderr + q.stdout[:300])
    h = hits(profile('down', db, 'syscalls', 'read_chunks'))
    ok(h.get('read_chunks read syscall:read', 0) + h.get('read_chunks __GI___libc_read syscall:read', 0) +
       h.get('read_chunks __libc_read syscall:read', 0) >= 64,
       'syscall profiles end in the call\'s name: (read_chunks read syscall:read)', json.dumps(h, indent=1))


def test_pingpong(tmp):
    db = os.path.join(tmp, 'pingpong.db')
    p = record(db, ['-e', 'context-switches'], [workload('pingpong-nofp'), '2000'])
    if not ok(p.returncode == 0, 'record pingpong with context-switches', p.stderr):
        return
    fn = paths(profile('functions', db, 'context-switches'))
    ping, pong = fn.get('ping_loop', 0), fn.get('pong_loop', 0)
    ok(0.35 <= ping <= 0.65 and 0.35 <= pong <= 0.65,
       'context switches split between ping_loop (%.2f) and pong_loop (%.2f), two threads' % (ping, pong))
    up = paths(profile('up', db, 'context-switches', 'pong_loop'))
    ok(any(path.startswith('start_thread pong_thread pong_loop') or path.startswith('pong_thread pong_loop')
           for path in up), 'pong_loop is reached from the thread\'s start, not main', json.dumps(up, indent=1))


def test_recursive(tmp):
    db = os.path.join(tmp, 'recursive.db')
    p = record(db, ['-e', 'cpu-time'], [workload('recursive-nofp')])
    if not ok(p.returncode == 0, 'record recursive', p.stderr):
        return
    down = hits(profile('down', db, 'cpu-time', 'recurse'))
    # Counted once however deep: (recurse recurse) never has more hits than (recurse), and has
    # them all but the odd sample whose unwinding stopped in the recursion (one of 362 seen in
    # ten runs beside a CPU hog: a stack of recurse alone, without burn below it).
    r, rr = down.get('recurse', 0), down.get('recurse recurse', 0)
    ok(r > 100 and rr <= r and r - rr <= max(2, 0.01 * r),
       '(recurse recurse) has every sample of (recurse), but for a stray unwinding: 12 levels counted once',
       json.dumps(down, indent=1))
    ok('recurse recurse recurse' not in down, 'there is no (recurse recurse recurse): canonicalized')
    ok(down.get('recurse burn', 0) >= 0.9 * down.get('recurse', 1), '(recurse burn): the leaf under the recursion')
    mutual = hits(profile('down', db, 'cpu-time', 'ping_rec'))
    ok(mutual.get('ping_rec pong_rec ping_rec', 0) > 0 and 'ping_rec pong_rec ping_rec pong_rec' not in mutual,
       'mutual recursion: (ping_rec pong_rec ping_rec) and no longer', json.dumps(mutual, indent=1))


def test_forker(tmp):
    db = os.path.join(tmp, 'forker.db')
    p = record(db, ['-e', 'cpu-time'], [workload('forker-nofp'), workload('shortlived-nofp')])
    if not ok(p.returncode == 0, 'record forker: a thread, a forked child, an exec\'d short-lived child', p.stderr):
        return
    fn = paths(profile('functions', db, 'cpu-time'))
    for name, who in (('thread_work', 'a thread'), ('child_work', 'a forked child'),
                      ('short_lived_burn', 'a child that exec\'d and exited before its samples were read')):
        ok(fn.get(name, 0) >= 0.1, '%s: %s is profiled and symbolized (%.2f)' % (name, who, fn.get(name, 0)),
           json.dumps(fn, indent=1))
    procs = sorted(run(['sqlite3', db, 'SELECT comm FROM process']).stdout.split())
    ok(procs == ['forker-nofp', 'forker-nofp', 'shortlived-nofp'],
       'three processes stored, the exec\'d one by its new name', procs)


def test_attach(tmp):
    db = os.path.join(tmp, 'attach.db')
    # A long run of recursive: 3 s of CPU.
    target = subprocess.Popen([workload('recursive-nofp'), '12', '3000'])
    time.sleep(0.3)

    def cpu_ms():
        fields = open('/proc/%d/stat' % target.pid).read().rsplit(')', 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf('SC_CLK_TCK')
    before, t0 = cpu_ms(), time.monotonic()
    p = run([cppctl, 'attach', str(target.pid), '-q', '--duration', '1', '--db', db, '-e', 'cpu-time'])
    got, wall = cpu_ms() - before, time.monotonic() - t0
    target.kill()
    target.wait()
    if not ok(p.returncode == 0, 'attach to a running process for 1 s', p.stderr):
        return
    # A sample per ms of the target's CPU in the second sampled. The command takes longer than
    # that (its start, its end), and on a loaded machine the target gets less than a whole CPU:
    # its CPU in the second is taken at its rate over the whole command.
    down = hits(profile('down', db, 'cpu-time', 'recurse'))
    in_second = got * min(1.0, 1.0 / wall)
    ok(got >= 50 and down.get('recurse', 0) >= 0.3 * in_second,
       'attach: (recurse) has %d samples of the second, in which it ran about %.0f ms (%.0f ms in the %.1f s '
       'of the command)' % (down.get('recurse', 0), in_second, got, wall))
    missing = 2 ** 22 + 12345
    p = run([cppctl, 'attach', str(missing), '--db', db])
    ok(p.returncode == 1 and 'no process %d' % missing in p.stderr, 'attach to no process: exit 1, "no process"',
       p.stderr)


def test_symbol_sources(tmp):
    """Code with no file behind it (a JIT's, named in /tmp/perf-PID.map), a binary deleted while
    it runs, and the kernel's own frames."""
    def remove_perf_maps():
        for f in os.listdir('/tmp'):
            if f.startswith('perf-') and f.endswith('.map'):
                try:
                    os.unlink(os.path.join('/tmp', f))
                except OSError:
                    pass

    db = os.path.join(tmp, 'jit.db')
    p = record(db, ['-e', 'cpu-time'], [workload('jit-nofp')])
    remove_perf_maps()
    if p.returncode == 77:
        ok(True, '# SKIP the JIT workload runs on x86_64 only')
    elif ok(p.returncode == 0, 'record a program running code it generated', p.stderr):
        fn = paths(profile('functions', db, 'cpu-time'))
        ok(fn.get('jitted_spin', 0) >= 0.8, 'JIT code is named from /tmp/perf-PID.map (%.2f)' % fn.get('jitted_spin', 0),
           json.dumps(fn, indent=1))
        # A map rewritten to the same size (an earlier process's of the same pid, read before the
        # program wrote its own: pid_max is 32,768 on many machines) is read again within a
        # second: 0.3 s under the stale map, then 2.5 s under the true one.
        db = os.path.join(tmp, 'jit-stale.db')
        p = record(db, ['-e', 'cpu-time'], [workload('jit-nofp'), '2500', '300'])
        remove_perf_maps()
        if ok(p.returncode == 0, 'record a program whose perf map is rewritten to the same size', p.stderr):
            fn = paths(profile('functions', db, 'cpu-time'))
            ok(fn.get('jitted_spin', 0) >= 0.4,
               'a perf map rewritten to the same size is read again (jitted_spin %.2f, stale_named %.2f)' %
               (fn.get('jitted_spin', 0), fn.get('stale_named', 0)), json.dumps(fn, indent=1))

    # A binary whose function symbols are only MiniDebugInfo: libdwfl decompresses them into
    # memory, which is no file mapping to give back pages of (that zeroed malloc's data and
    # crashed cppctl on PyTorch's bundled libraries).
    mini = os.path.join(tmp, 'recursive-minidebuginfo')
    p = run([os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'workloads', 'make-minidebuginfo'),
             workload('recursive-nofp'), mini])
    if p.returncode != 0:
        ok(True, '# SKIP cannot make a MiniDebugInfo binary (binutils, xz): %s' % p.stderr.strip()[-200:])
    else:
        db = os.path.join(tmp, 'minidebuginfo.db')
        p = record(db, ['-e', 'cpu-time'], [mini, '12', '30'])
        if ok(p.returncode == 0, 'record a program whose symbols are MiniDebugInfo (.gnu_debugdata)', p.stderr[-2000:]):
            fn = paths(profile('functions', db, 'cpu-time'))
            ok(fn.get('recurse', 0) >= 0.5 and fn.get('ping_rec', 0) >= 0.2 and fn.get('burn', 0) >= 0.9,
               'its static functions are named from it (recurse %.2f, ping_rec %.2f, burn %.2f: 2/3, 1/3, all)'
               % (fn.get('recurse', 0), fn.get('ping_rec', 0), fn.get('burn', 0)), sorted(fn)[:20])

    copy = os.path.join(tmp, 'doomed-recursive')
    shutil.copy(workload('recursive-nofp'), copy)
    target = subprocess.Popen([copy, '12', '3000'])
    time.sleep(0.2)
    os.unlink(copy)
    db = os.path.join(tmp, 'deleted.db')
    p = run([cppctl, 'attach', str(target.pid), '-q', '--duration', '0.5', '--db', db])
    target.kill()
    target.wait()
    if ok(p.returncode == 0, 'attach to a program whose binary was deleted', p.stderr):
        down = hits(profile('down', db, 'cpu-time', 'recurse'))
        # Its names, not its count: on a loaded machine the target gets a part of the half second.
        ok(down.get('recurse recurse', 0) >= 20, 'it still symbolizes, through /proc/PID/map_files',
           json.dumps(down, indent=1))

    db = os.path.join(tmp, 'kernel.db')
    p = record(db, ['-e', 'context-switches', '--kernel'], [workload('pingpong-nofp'), '500'])
    if ok(p.returncode == 0, 'record context switches with --kernel', p.stderr):
        fn = paths(profile('functions', db, 'context-switches'))
        ok(any('schedule' in name for name in fn), 'kernel frames are kept and named from /proc/kallsyms',
           sorted(fn)[:40])
        plain = paths(profile('functions', os.path.join(tmp, 'pingpong.db'), 'context-switches'))
        ok(not any('schedule' in name for name in plain), 'and hidden without --kernel')


def test_errors(tmp):
    db = os.path.join(tmp, 'errors.db')
    p = record(db, [], ['/nonexistent/command'])
    ok(p.returncode == 1 and "Cannot run '/nonexistent/command': No such file or directory" in p.stderr,
       'a command that does not exist: exit 1, said so', p.stderr)
    p = record(db, ['-e', 'bogus'], ['true'])
    ok(p.returncode == 2 and "unknown resource 'bogus'" in p.stderr, 'an unknown resource: exit 2', p.stderr)
    p = record(db, ['--event', 'no_such_event_anywhere'], ['true'])
    ok(p.returncode == 2 and 'not a perf software event' in p.stderr, 'an unknown event: exit 2', p.stderr)
    p = record(db, ['-e', 'cpu-time,fp-assists'], [workload('recursive-nofp'), '3', '100'])
    # perf stat exits 0 either way; a machine without counters prints "<not supported>".
    stat = run(['perf', 'stat', '-x,', '-e', 'cycles', 'true']) if shutil.which('perf') else None
    supported = stat is not None and stat.returncode == 0 and '<not supported>' not in stat.stderr
    if supported:
        ok(p.returncode == 0, 'fp-assists on a machine with counters: recorded (or not counted, said so)', p.stderr)
    else:
        ok(p.returncode == 0 and 'fp-assists: not counted on this machine' in p.stderr,
           'fp-assists without hardware counters: said plainly, and cpu-time recorded anyway', p.stderr)
    p = record(db, ['-e', 'fp-assists'], ['true'])
    if not supported:
        ok(p.returncode == 1 and 'none of the resources can be counted' in p.stderr,
           'only fp-assists, without counters: exit 1', p.stderr)

    paranoid = int(open('/proc/sys/kernel/perf_event_paranoid').read())
    setpriv = shutil.which('setpriv')
    if paranoid >= 2 and setpriv:
        os.chmod(tmp, 0o777)
        p = run([setpriv, '--reuid=65534', '--regid=65534', '--clear-groups', '--inh-caps=-all',
                 cppctl, 'record', '-q', '--db', os.path.join(tmp, 'nobody.db'), '--kernel', '--', 'true'])
        ok(p.returncode == 1 and 'perf_event_paranoid' in p.stderr and 'CAP_PERFMON' in p.stderr,
           'an unprivileged user: exit 1, naming perf_event_paranoid and CAP_PERFMON', p.stderr)
    else:
        ok(True, '# SKIP the permission test needs perf_event_paranoid >= 2 and setpriv')


def test_empty_and_zombie(tmp):
    """-e '' recorded cpu-time as if nothing were said; attach to a zombie said "no process"."""
    db = os.path.join(tmp, 'empty.db')
    for argv in (['record', '-q', '--db', db, '-e', '', '--', 'true'],
                 ['record', '-q', '--db', db, '-e', ',', '--', 'true'],
                 ['attach', '-q', '--db', db, '--duration', '1', '-e', '', str(os.getpid())]):
        p = run([cppctl] + argv, timeout=60)
        ok(p.returncode == 2 and "-e '%s': no resource in it" % argv[argv.index('-e') + 1] in p.stderr and
           not os.path.exists(db), 'cppctl %s -e %r: refused (exit 2), nothing recorded'
           % (argv[0], argv[argv.index('-e') + 1]), p.stderr)
    z = subprocess.Popen(['true'])
    end = time.monotonic() + 10
    while time.monotonic() < end and ') Z ' not in open('/proc/%d/stat' % z.pid).read():
        time.sleep(0.05)
    try:
        for extra in ([], ['--standalone']):
            p = run([cppctl, 'attach', '-q', '--db', db] + extra + [str(z.pid)], timeout=60)
            ok(p.returncode == 1 and 'process %d has exited (a zombie its parent has not reaped)' % z.pid in p.stderr,
               'cppctl attach %sto a zombie: it has exited, said so' % (' '.join(extra) + ' ' if extra else ''),
               p.stderr)
    finally:
        z.wait()


def test_against_perf(tmp):
    if not shutil.which('perf'):
        ok(True, '# SKIP perf is not installed')
        return
    data, db = os.path.join(tmp, 'perf.data'), os.path.join(tmp, 'vs-perf.db')
    # perf itself may not work here (perf 6.1 aborts reading kallsyms once the kernel lists an
    # ftrace trampoline, "[__builtin__ftrace]"): then there is nothing to compare with.
    for argv in (['perf', 'record', '-q', '-o', os.path.join(tmp, 'probe.data'), '-e', 'cpu-clock', 'true'],
                 ['perf', 'script', '-i', os.path.join(tmp, 'probe.data')]):
        probe = run(argv)
        if probe.returncode != 0:
            ok(True, '# SKIP %s cannot run here: %s' % (' '.join(argv[:2]),
                                                       (probe.stderr.strip().splitlines() or [''])[-1][-200:]))
            return
    # -m: perf's default 512 KiB buffer drops bursts of 16 KiB samples, which skews its shares.
    p = run(['perf', 'record', '-q', '-m', '8M', '-o', data, '-e', 'page-faults', '-c', '4',
             '--call-graph', 'dwarf,16384', '--', workload('process_db-nofp')])
    if not ok(p.returncode == 0, 'perf record, page faults every 4, DWARF', p.stderr):
        return
    folds = [frames for frames, _ in stacks.perf_script(data)]
    q = record(db, ['-e', 'page-faults/4'], [workload('process_db-nofp')])
    if not ok(q.returncode == 0 and len(folds) > 100, 'cppctl record, the same event, period and unwinding',
              q.stderr):
        return
    ours = paths(profile('functions', db, 'page-faults'))
    worst = 0.0
    lines = []
    for fn in ('main', 'read_db', 'uniquify_db', 'build_db_ptrs', 'name_field_lt', 'merge_adjacent_records',
               'print_salary_list', 'extract_salary_fields', 'print_salary_stats'):
        theirs = sum(1 for s in folds if fn in s) / len(folds)
        diff = abs(theirs - ours.get(fn, 0.0))
        worst = max(worst, diff)
        lines.append('%-24s perf %.3f cppd %.3f' % (fn, theirs, ours.get(fn, 0.0)))
    # On failure, where cppd's other samples went (seen once in ten runs beside CPU hogs under
    # the sanitizers: main 0.355 against 0.983, not reproduced since), with the run's summary.
    detail = lines
    if worst > 0.05:
        top = run([cppctl, 'functions', '--db', db, '-r', 'page-faults', '-t', '0.02'])
        detail = lines + top.stdout.splitlines()[:18] + [q.stderr[-500:]]
    ok(worst <= 0.05, 'function profiles agree with perf within 0.05 for every workload function (worst %.3f)' % worst,
       '\n'.join(detail))
    for line in lines:
        print('# ' + line)

    # Stacks as whole as perf's: CPU time of the same program, every 1 ms, 16 KiB of stack each
    # (cppctl's default), every stack classified (stacks.py); no more broken than perf's, with an
    # allowance of 2 samples of sampling noise between two runs of ~500.
    data, db = os.path.join(tmp, 'whole.data'), os.path.join(tmp, 'whole.db')
    p = run(['perf', 'record', '-q', '-m', '8M', '-o', data, '-e', 'cpu-clock', '-c', '1000000',
             '--call-graph', 'dwarf,16384', '--', workload('process_db-nofp')])
    q = record(db, ['-e', 'cpu-time/1', '--stack-size', '16384'], [workload('process_db-nofp')])
    if not ok(p.returncode == 0 and q.returncode == 0, 'perf record and cppctl record, CPU time, DWARF, 16 KiB',
              p.stderr + q.stderr):
        return
    theirs = stacks.tally(stacks.perf_script(data, 'process_db-nofp'))
    ours = stacks.tally(stacks.folded(run([cppctl, 'export', '--db', db, '-r', 'cpu-time', '--format',
                                           'folded']).stdout))
    n_theirs, n_ours = sum(theirs[0].values()), sum(ours[0].values())
    allowed = theirs[0]['broken'] / max(n_theirs, 1) * n_ours + 2
    ok(n_ours > 100 and n_theirs > 100 and ours[0]['broken'] <= allowed,
       'stacks as whole as perf\'s: %d of %d broken, at most %.1f allowed (perf: %s)'
       % (ours[0]['broken'], n_ours, allowed, stacks.describe(*theirs)), stacks.describe(*ours))


def policies(pid):
    """{tid: scheduling policy} of process PID's threads (/proc/PID/task/TID/stat's field 41)."""
    out = {}
    for tid in os.listdir('/proc/%d/task' % pid):
        try:
            stat = open('/proc/%d/task/%s/stat' % (pid, tid)).read()
        except OSError:
            continue
        out[int(tid)] = int(stat[stat.rindex(')') + 2:].split()[38])
    return out


def test_realtime_reader(tmp):
    """The thread that reads the rings is in the real-time class (SCHED_FIFO, 1), the others and
    the command are not; --no-realtime leaves it in the normal class, and so does a recording
    where the reader has nothing to do at samples (no redrawn clock, no Python frames)."""
    for args, want in (([], 1), (['--no-realtime'], 0), (['-e', 'page-faults', '--no-python'], 0)):
        db = os.path.join(tmp, 'rt.db')
        p = subprocess.Popen([cppctl, 'record', '-q', '--db', db] + args + ['--', 'sleep', '3'],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        fifo, threads, child = set(), set(), {}
        while p.poll() is None:
            time.sleep(0.1)
            try:
                seen = policies(p.pid)
                kids = open('/proc/%d/task/%d/children' % (p.pid, p.pid)).read().split()
                child.update(policies(int(kids[0])) if kids else {})
            except (OSError, ValueError):
                continue
            threads |= set(seen)
            fifo |= {t for t, pol in seen.items() if pol == 1}
        p.communicate()
        ok(p.returncode == 0 and len(fifo) == want and len(threads) > 1 and child and set(child.values()) == {0},
           'record %s: %d of cppctl\'s %d threads in SCHED_FIFO (want %d), the command\'s in the normal class'
           % (' '.join(args) or '(defaults)', len(fifo), len(threads), want), (fifo, threads, child))


def main():
    if os.geteuid() != 0 and int(open('/proc/sys/kernel/perf_event_paranoid').read()) > 1:
        skip_all('needs root, or perf_event_paranoid <= 1')
    if not os.path.exists(workload('process_db-nofp')):
        skip_all('the workloads are not built')
    with tempfile.TemporaryDirectory() as tmp:
        test_process_db(tmp)
        test_reader(tmp)
        test_realtime_reader(tmp)
        test_pingpong(tmp)
        test_recursive(tmp)
        test_forker(tmp)
        test_attach(tmp)
        test_symbol_sources(tmp)
        test_errors(tmp)
        test_empty_and_zombie(tmp)
        test_against_perf(tmp)
    sys.exit(done())


if __name__ == '__main__':
    main()
