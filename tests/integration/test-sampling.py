#!/usr/bin/env python3
"""Sampling that can be trusted, with real events on tests/workloads/cycles.c.

- Loops of k system calls / k page faults per cycle, split 4:1 and 3:1 between two known paths,
  recorded at the default periods (10 and 16, multiples of k): each path's share is within its
  printed error bars of the truth; with --no-jitter the system calls' recording aliases (the
  share is off by more than twice its bar; the page faults' only printed: a loaded machine's
  other faults can keep it from locking), so the test fails if the intervals stop being random; and the loop's events
  estimated from the hits are the count within 4 standard deviations (sqrt of the sum of squared
  weights), so it fails if the intervals' mean is not the period. Page faults also with
  --every-event (a coin at every event instead of a countdown).
- A loop of 4 context switches (3:1) at the daemon's context-switches/64: within its bars. A
  thread's switches are not exact enough to alias reliably at fixed periods (any preemption
  shifts the phase), so --no-jitter is only printed there.
- record's clock: the hits of a program in 1 ms timer slices (half on a CPU) are its CPU time,
  beside a CPU-bound process that is not recorded and gets none.
- CPU work in 1 ms timer slices (0.3 ms in slice_a, 0.2 ms in slice_b) at cpu-time/1; and in
  10 ms slices in the daemon at cpu-time/10, whose clock is redrawn from user space at each
  sample (with jitter = no only printed: a fixed tick keeps one phase, or no sample at all).
- Error bars: 800 processes (one record of a shell loop), each its own estimate of path_a's share; the 95% intervals the
  views print (hits ± 1.96 sqrt(N p (1-p)) widened by sqrt(hits per sample)) contain the truth
  for at least 93% of them. (At a true 95% coverage, 800 runs fall under 93% with a probability
  of about 0.5%.)
- Nobody else is thinned: perf stat counting raw_syscalls:sys_enter on the same threads inside a
  recording at syscalls/1 counts every call.
- Isolation and thinning: a system-call storm at syscalls/1 beside a CPU-bound process: the
  storm is thinned (header and store say so), its fraction right, and cpu-time loses nothing;
  the same in the daemon, system-wide, at cpu-time/1 and syscalls/10.

A single bar is exceeded 5% of the time by design; the per-path checks allow twice the printed
95% half-width (about 4 standard deviations), which only a bias passes.

Needs root (or perf_event_paranoid <= 1) and BPF (CAP_BPF); skipped otherwise.
"""
import json
import math
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

import daemon
from tap import done, ok, skip_all

cppd, cppctl, workloads = sys.argv[1], sys.argv[2], sys.argv[3]
CYCLES = os.path.join(workloads, 'cycles-nofp')
DEFAULT_PERIODS = {'syscalls': 10, 'page-faults': 16}


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def record(db, args, command):
    return run([cppctl, 'record', '-q', '--db', db] + args + ['--'] + command)


def functions(db, resource):
    """{function: (hits, error)} and the header of the function profile."""
    p = run([cppctl, 'functions', '--db', db, '-r', resource, '-t', '0'])
    if p.returncode not in (0, 3):
        raise RuntimeError(p.stderr)
    out = {}
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2].startswith('[') and parts[3].startswith('±'):
            out[parts[1]] = (int(parts[2][1:]), float(parts[3][1:-1]))
    return out, p.stdout.splitlines()[1] if p.stdout else ''


def share(db, resource, a, b):
    """A's share of A + B, the half-width of its printed bar in share, and the header."""
    f, header = functions(db, resource)
    ha, ea = f.get(a, (0, 0.0))
    hb, _ = f.get(b, (0, 0.0))
    n = ha + hb
    return (ha / n if n else 0.0), (ea / n if n else 1.0), header


def check_cycle(mode, resource, a, b, truth, n, args=(), must_alias=True, events=0):
    what = ' '.join([mode] + list(args))
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, 'r.db')
        p = record(db, list(args) + ['-e', resource], [CYCLES, mode, str(n)])
        if not ok(p.returncode == 0, '%s: record -e %s' % (what, resource), p.stderr):
            return
        s, e, header = share(db, resource.split('/')[0], a, b)
        ok('at random' in header, '%s: the header says the intervals are random' % what, header)
        ok(abs(s - truth) <= 2 * e, '%s at %s: %s = %.4f ±%.4f, truth %.2f' % (what, resource, a, s, e, truth),
           header)
        if events:
            # The intervals' mean: the loop's events (a and b), in periods, against the count.
            period = int(resource.split('/')[1]) if '/' in resource else DEFAULT_PERIODS[resource]
            con = sqlite3.connect(db)
            hits = squares = 0
            for text, h, sq in con.execute("SELECT st.text, sum(s.hits), sum(s.hits_squared) FROM sample AS s "
                                           "JOIN stack_text AS st ON st.stack_id = s.stack_id GROUP BY st.text"):
                if (';%s;' % a) in text + ';' or (';%s;' % b) in text + ';':
                    hits += h
                    squares += sq
            want = events * n / period
            # Samples a full ring refused (a recorder kept from running on a loaded machine) are
            # counted lost, not hidden: each stood for at most the run's largest thinning, which
            # the store keeps as a factor of the period (1 in 2: a sample worth 2 periods).
            lost, thinned = con.execute("SELECT sum(lost), max(thinned) FROM run_resource").fetchone()
            lost_hits = (lost or 0) * max(thinned or 1, 1)
            bar = 4 * math.sqrt(squares) + 2
            ok(hits <= want + bar and hits + lost_hits >= want - bar,
               '%s: the loop\'s %d events estimated at %d (%d hits of %d), within 4 sd (%.0f), %d more at most in '
               'the %d samples counted lost (thinned to 1 in %d at most)' %
               (what, events * n, hits * period, hits, period, bar * period, lost_hits * period, lost or 0,
                thinned or 1))
        if args:
            return
        db2 = os.path.join(d, 'f.db')
        p = record(db2, ['--no-jitter', '-e', resource], [CYCLES, mode, str(n)])
        s2, e2, header2 = share(db2, resource.split('/')[0], a, b)
        ok(p.returncode == 0 and 'periods fixed: may alias' in header2,
           '%s --no-jitter: the header warns of aliasing' % mode, header2)
        if must_alias:
            # Off by more than twice its own printed bar (which random intervals stay within):
            # a fixed period locks onto the loop. Not a fixed 0.1: on a loaded machine other
            # faults and calls of the process break the loop's exact cycle now and then, and the
            # lock loosens (0.844 against 0.75 seen, 4,000 samples: eight times the bar).
            ok(abs(s2 - truth) > max(2 * e2, 0.03),
               '%s --no-jitter aliases: %s = %.4f ±%.4f, truth %.2f' % (mode, a, s2, e2, truth), header2)
        else:
            print('# %s --no-jitter: %s = %.4f ±%.4f, truth %.2f' % (mode, a, s2, e2, truth))


def check_slices():
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, 'r.db')
        p = record(db, ['-e', 'cpu-time/1'], [CYCLES, 'slices', '1500'])
        if not ok(p.returncode == 0, 'slices: record -e cpu-time/1', p.stderr):
            return
        s, e, header = share(db, 'cpu-time', 'slice_a', 'slice_b')
        ok(abs(s - 0.6) <= 2 * e + 0.02, '1 ms slices at cpu-time/1: slice_a = %.4f ±%.4f, truth 0.60' % (s, e),
           header)
        db2 = os.path.join(d, 'f.db')
        record(db2, ['--no-jitter', '-e', 'cpu-time/1'], [CYCLES, 'slices', '1500'])
        s2, e2, _ = share(db2, 'cpu-time', 'slice_a', 'slice_b')
        print('# slices --no-jitter: slice_a = %.4f ±%.4f (a fixed 1 ms timer against a 1 ms cycle)' % (s2, e2))


def check_record_clock():
    """record's clock, one CPU's for every task, gated to the recorded threads and redrawn at
    each overflow: the hits of a program that runs and sleeps by turns (1 ms slices, half of it
    on a CPU) are its CPU time. A clock not redrawn at other tasks' overflows (or in bursts,
    after the reader was away) samples it more often than its mean period; one that lets other
    tasks through, more still."""
    wrapper = ('import resource, subprocess, sys; subprocess.run(sys.argv[1:]); '
               'r = resource.getrusage(resource.RUSAGE_CHILDREN); '
               'print("cpu-ms %.1f" % ((r.ru_utime + r.ru_stime) * 1000), file=sys.stderr)')
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, 'r.db')
        # A CPU-bound neighbour that is not recorded: its time must not be counted.
        spin = subprocess.Popen([CYCLES, 'spin', '2500'])
        try:
            p = record(db, ['-e', 'cpu-time/1'], [sys.executable, '-c', wrapper, CYCLES, 'slices', '2000'])
        finally:
            spin.wait()
        m = re.search(r'cpu-ms ([0-9.]+)', p.stderr)
        if not ok(p.returncode == 0 and m, 'record clock: record -e cpu-time/1 of 1 ms slices beside a spin',
                  p.stderr):
            return
        cpu = float(m.group(1))
        con = sqlite3.connect(db)
        hits, sq, comms = con.execute(
            "SELECT sum(s.hits), sum(s.hits_squared), group_concat(DISTINCT p.comm) FROM sample AS s "
            "JOIN thread AS t ON t.id = s.thread_id JOIN process AS p ON p.id = t.process_id "
            "WHERE p.comm LIKE 'cycles%'").fetchone()
        spun = con.execute("SELECT count(*) FROM function WHERE name = 'spin_a'").fetchone()[0]
        hits, sq = hits or 0, sq or 0
        # 4 standard deviations of the weights, and 5% for the time the kernel spends on the
        # program's behalf (interrupts, the exec) that its rusage and the clock share out
        # differently.
        bar = 4 * math.sqrt(sq) + 0.05 * cpu
        ok(abs(hits - cpu) <= bar and not spun,
           'record clock: %d hits of 1 ms for the slices\' %.0f ms of CPU (bar %.0f); the neighbour\'s spin_a %s' %
           (hits, cpu, bar, 'counted' if spun else 'not counted'), comms)


def daemon_slices(jitter):
    """slice_a's share of the 10 ms slices (cycles slices10) in a daemon at cpu-time/10, whose
    clock, every task on a CPU, is redrawn from user space at each sample; and the header."""
    tmp = tempfile.mkdtemp()
    os.chmod(tmp, 0o755)
    d = daemon.Daemon(cppd, tmp, 'slices' + jitter, 'cpu-time/10', flush=0.5, extra='jitter = %s\n' % jitter)
    try:
        if not ok(d.ready(), 'daemon slices: cppd starts with cpu-time/10, jitter = %s' % jitter, d.log_text()):
            return None
        w = subprocess.Popen([CYCLES, 'slices10', '800'])
        if not ok(w.wait() == 0, 'daemon slices: cycles slices10 ran'):
            return None
        if not ok(d.request('flush\n').strip() == 'ok', 'daemon slices: flushed', d.log_text()):
            return None
        p = run([cppctl, 'functions', '--db', d.store, '--pid', str(w.pid), '-t', '0'])
        # 3: no sample of it (a fixed tick may keep the idle phase of the cycle).
        if not ok(p.returncode in (0, 3), 'daemon slices: its function profile', p.stderr + d.log_text()):
            return None
        out = {}
        for line in p.stdout.splitlines():
            f = line.split()
            if len(f) >= 2 and f[1] in ('slice_a', 'slice_b'):
                out[f[1]] = int(f[2].lstrip('['))
        a, b = out.get('slice_a', 0), out.get('slice_b', 0)
        n = a + b
        s = a / n if n else 0.0
        return s, 1.96 * math.sqrt(s * (1 - s) / max(n, 1)), n, p.stdout.splitlines()[1:2] + [p.stderr]
    finally:
        d.stop()
        d.close_notify()


def check_daemon_slices():
    """The daemon's clock at its default period against a loop of the same period: a timer every
    10 ms, 3 ms of CPU in slice_a and 2 ms in slice_b. Drawn at random, each path gets its share;
    at a fixed 10 ms tick the samples keep one phase of the cycle (here one path, or none)."""
    r = daemon_slices('yes')
    if r is None:
        return
    s, e, n, header = r
    # About 400 samples; a sanitizer build's slow daemon thins and loses some (75 seen in CI).
    # A clock that is not redrawn keeps one phase of the cycle: a dozen samples, or none.
    ok(n >= 40 and abs(s - 0.6) <= 2 * e + 0.02,
       'daemon slices: 10 ms slices at cpu-time/10: slice_a = %.4f ±%.4f of %d samples, truth 0.60' % (s, e, n),
       header)
    r = daemon_slices('no')
    if r is not None:
        print('# daemon slices, jitter = no: slice_a = %.4f ±%.4f of %d samples (a fixed 10 ms tick against a '
              '10 ms cycle)' % r[:3])


def check_coverage(max_rate, what, n_runs, cycles, floor=0.93):
    """The 95% bars the views print contain the truth in >= 93% of 800 runs: unthinned (each
    sample one hit), and thinned by the kernel under a small budget (samples of unequal weights,
    whose bars widen by sqrt(sum w² / sum w): profile_tree_weight())."""
    truth = 0.8
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, 'r.db')
        # 5 calls a cycle at syscalls/50: CYCLES / 10 samples a run, unthinned.
        script = 'for i in $(seq %d); do %s syscalls %d; done' % (n_runs, CYCLES, cycles)
        p = record(db, ['--max-rate', str(max_rate), '-e', 'syscalls/50'], ['sh', '-c', script])
        if not ok(p.returncode == 0, 'coverage %s: %d runs of %d system calls under one record' %
                  (what, n_runs, 5 * cycles), p.stderr):
            return
        con = sqlite3.connect(db)
        rows = con.execute("SELECT p.id, st.text, sum(s.hits), sum(s.samples), sum(s.hits_squared) FROM sample AS s "
                           "JOIN resource AS r ON r.id = s.resource_id AND r.name = 'syscalls' "
                           "JOIN thread AS t ON t.id = s.thread_id JOIN process AS p ON p.id = t.process_id "
                           "JOIN stack_text AS st ON st.stack_id = s.stack_id "
                           "WHERE p.comm LIKE 'cycles%' GROUP BY p.id, st.text").fetchall()
        runs = {}
        for pid, text, h, n, sq in rows:
            r = runs.setdefault(pid, [0, 0, 0, 0, 0])
            r[2] += h
            r[3] += n
            r[4] += sq
            if ';path_a;' in text + ';':
                r[0] += h
            elif ';path_b;' in text + ';':
                r[1] += h
        covered = total = weighted = 0
        for a, b, h, n, sq in runs.values():
            if a + b == 0:
                continue
            total += 1
            weighted += sq > h
            p_hat = a / h
            # What the views print for path_a: profile_tree_error() on this run's hits.
            err = 1.96 * math.sqrt(h * p_hat * (1 - p_hat)) * math.sqrt(max(sq / h, 1))
            covered += abs(a - truth * (a + b)) <= err
        # A loaded machine (the tests run two at a time) starves the consumer, which runs
        # niced, and the unthinned rings overflow: whole runs of a few ms can go, counted lost.
        # Runs missing must be accounted for by the losses, at the samples a run has.
        lost = con.execute("SELECT ifnull(sum(rr.lost), 0) FROM run_resource AS rr JOIN resource AS r ON "
                           "r.id = rr.resource_id WHERE r.name = 'syscalls'").fetchone()[0]
        con.close()
        per_run = sum(r[3] for r in runs.values()) / max(total, 1)
        ok(total + lost / max(per_run, 1) >= n_runs * 0.95,
           'coverage %s: %d of %d runs sampled, %d samples lost (%.0f a run): no run lost blindly' %
           (what, total, n_runs, lost, per_run))
        if max_rate:
            ok(weighted >= n_runs * 0.9, 'coverage %s: %d runs have samples of weight over 1' % (what, weighted))
        ok(total and covered / total >= floor,
           'coverage %s: the 95%% intervals contain the truth in %d of %d runs (%.1f%%)' %
           (what, covered, total, 100.0 * covered / max(total, 1)))


def check_others_see_everything():
    """The tracepoint program lets every hit through: perf counting the same tracepoint, on the
    same threads, inside a recording at syscalls/1 (thinned), still counts every call."""
    perf = shutil.which('perf')
    if not perf:
        print('# skipped: no perf to count beside the recording')
        return
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, 'r.db')
        out = os.path.join(d, 'perf.csv')
        p = record(db, ['-e', 'syscalls/1'], [perf, 'stat', '-x,', '-o', out, '-e', 'raw_syscalls:sys_enter', '--',
                                              CYCLES, 'syscalls', '20000'])
        if not ok(p.returncode == 0, 'beside perf: record -e syscalls/1 -- perf stat -e raw_syscalls:sys_enter',
                  p.stderr):
            return
        counted = 0
        with open(out) as f:
            for line in f:
                fields = line.split(',')
                if len(fields) > 2 and 'raw_syscalls:sys_enter' in fields[2] and fields[0].isdigit():
                    counted = int(fields[0])
        ok(100000 <= counted <= 110000,
           'beside perf: perf stat counts all %d system calls of the workload (100,000 preads and its '
           'start), thinned by nobody' % counted)
        con = sqlite3.connect(db)
        hits, squares = con.execute(
            "SELECT ifnull(sum(s.hits), 0), ifnull(sum(s.hits_squared), 0) FROM sample AS s "
            "JOIN thread AS t ON t.id = s.thread_id JOIN process AS p ON p.id = t.process_id "
            "WHERE p.comm LIKE 'cycles%'").fetchone()
        # Samples a full ring refused are counted lost, not hidden (a reader kept from running on
        # a loaded machine): each stood for at most the largest thinning of the run. Thinned to
        # 1 in K, the estimate is a sum of weights: its standard deviation is about the square
        # root of their squares' sum (K 512 on a loaded machine: some 7,000 calls of 100,000),
        # so the bars are 4 of those and 2% beside.
        lost, thinned = con.execute("SELECT sum(lost), max(thinned) FROM run_resource").fetchone()
        lost_hits = (lost or 0) * max(thinned or 1, 1)
        bar = 4 * math.sqrt(squares) + 0.02 * counted
        ok(hits <= counted + bar and hits + lost_hits >= counted - bar,
           'beside perf: the recording of the same threads (children of perf) estimates %d calls ±%d (4 standard '
           'deviations, thinned to 1 in %d at most), %d more at most in the %d samples counted lost' %
           (hits, bar, thinned or 1, lost_hits, lost or 0))


def check_storm():
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, 'r.db')
        script = '%s spin 1000 & %s syscalls 200000; wait' % (CYCLES, CYCLES)
        p = record(db, ['-e', 'cpu-time/1,syscalls/1'], ['sh', '-c', script])
        if not ok(p.returncode == 0, 'storm: record -e cpu-time,syscalls/1 of a storm beside a loop', p.stderr):
            return
        con = sqlite3.connect(db)
        rr = {name: (lost, sampling, thinned) for name, lost, sampling, thinned in con.execute(
            "SELECT r.name, rr.lost, rr.sampling, rr.thinned FROM run_resource AS rr "
            "JOIN resource AS r ON r.id = rr.resource_id")}
        ok(rr['syscalls'][2] > 1, 'storm: syscalls thinned to 1 in %d under load' % rr['syscalls'][2], rr)
        ok(rr['cpu-time'][0] == 0, 'storm: cpu-time lost %d samples to the storm' % rr['cpu-time'][0], rr)
        # The clock is redrawn by cppctl's reader, which the storm keeps busy: a sample whose
        # interval it was late for stands for those it missed too (doc/sampling.md). What the
        # storm must not do is take cpu-time's samples, or be thinned less than it.
        ok(rr['cpu-time'][2] < rr['syscalls'][2],
           'storm: the storm is the one thinned: syscalls 1 in %d, cpu-time 1 in %d' %
           (rr['syscalls'][2], rr['cpu-time'][2]), rr)
        f, header = functions(db, 'cpu-time')
        spun = f.get('spin_a', (0, 0))[0]
        # 3 standard deviations of the weights' sum (sqrt(sum w^2): sqrt(hits) unweighted).
        sq = con.execute("SELECT ifnull(sum(s.hits_squared), 0) FROM sample AS s "
                         "JOIN resource AS r ON r.id = s.resource_id AND r.name = 'cpu-time' "
                         "JOIN stack_text AS st ON st.stack_id = s.stack_id "
                         "WHERE ';' || st.text || ';' LIKE '%;spin_a;%'").fetchone()[0]
        ok(abs(spun - 1000) <= 3 * math.sqrt(max(sq, 1000)) + 50,
           'storm: the CPU-bound neighbour keeps its cpu-time: %d hits of 1 ms for 1000 ms (bar %.0f)' %
           (spun, 3 * math.sqrt(max(sq, 1000)) + 50), header)
        s, e, header = share(db, 'syscalls', 'path_a', 'path_b')
        ok(abs(s - 0.8) <= 2 * e + 0.02, 'storm: the thinned syscalls keep path_a = %.4f ±%.4f, truth 0.80' % (s, e),
           header)
        ok('thinned to 1 in' in header, 'storm: the header says so', header)


def check_daemon_storm():
    tmp = tempfile.mkdtemp()
    os.chmod(tmp, 0o755)
    d = daemon.Daemon(cppd, tmp, 'storm', 'cpu-time/1, syscalls/10', flush=0.5,
                      extra='ring_size = 4M\nqueue_size = 64M\n')
    try:
        if not ok(d.ready(), 'daemon storm: cppd starts with cpu-time/1 and syscalls/10', d.log_text()):
            return
        spin = subprocess.Popen([CYCLES, 'spin', '1000'])
        storm = subprocess.Popen([CYCLES, 'syscalls', '300000'])
        spin.wait()
        storm.wait()
        ok(d.request('flush\n').strip() == 'ok', 'daemon storm: flushed')
        spun = daemon.pid_hits(d.store, spin.pid, 'cpu-time')
        # 3 standard deviations of the weights' sum: a loaded daemon's late reader weighs its
        # samples (doc/sampling.md, "The redrawn clock"), as thinning does.
        sq = daemon.store_query(d.store, "SELECT ifnull(sum(s.hits_squared), 0) FROM sample s "
                                "JOIN resource r ON r.id = s.resource_id JOIN thread t ON t.id = s.thread_id "
                                "JOIN process p ON p.id = t.process_id WHERE p.pid = ? AND r.name = 'cpu-time'",
                                (spin.pid,))[0][0]
        bar = 3 * math.sqrt(max(sq, 1000)) + 50
        ok(abs(spun - 1000) <= bar,
           'daemon storm: the CPU-bound neighbour keeps its cpu-time: %d hits of 1 ms for 1000 ms (bar %.0f)' %
           (spun, bar))
        rows = daemon.store_query(d.store, "SELECT st.text, sum(s.hits), sum(s.hits_squared) FROM sample AS s "
                                  "JOIN resource AS r ON r.id = s.resource_id AND r.name = 'syscalls' "
                                  "JOIN thread AS t ON t.id = s.thread_id "
                                  "JOIN process AS p ON p.id = t.process_id AND p.pid = ? "
                                  "JOIN stack_text AS st ON st.stack_id = s.stack_id GROUP BY st.text", (storm.pid,))
        a = sum(h for text, h, n in rows if ';path_a;' in text + ';')
        b = sum(h for text, h, n in rows if ';path_b;' in text + ';')
        hits = sum(h for _, h, _ in rows)
        squares = sum(sq for _, _, sq in rows)
        # The samples' weights differ (k moves with the load, most when the rings overflow):
        # the bars are those of the effective number of samples, (sum w)^2 / sum w^2.
        samples = hits * hits / squares if squares else 0
        s = a / (a + b) if a + b else 0.0
        err = 1.96 * math.sqrt(s * (1 - s) / max(samples, 1))
        rr = dict((name, (lost, thinned)) for name, lost, thinned in daemon.store_query(
            d.store, "SELECT r.name, sum(rr.lost), max(rr.thinned) FROM run_resource AS rr "
            "JOIN resource AS r ON r.id = rr.resource_id GROUP BY r.name"))
        ok(rr.get('syscalls', (0, 1))[1] > 1, 'daemon storm: syscalls thinned to 1 in %d' % rr.get('syscalls', (0, 1))[1],
           rr)
        ok(abs(s - 0.8) <= 2 * err + 0.02, 'daemon storm: path_a = %.4f ±%.4f of %d effective samples (%d hits for 150,000 '
           'calls at period 10), truth 0.80' % (s, err, samples, hits), rr)
        # A daemon whose consumer is slow (the sanitizer build: about 1,000 samples a second)
        # thins and loses cpu-time by itself, storm or not; what the storm must not do is take
        # the neighbour's cpu-time (above) or be thinned less than the calm resource.
        ok(rr.get('cpu-time', (0, 1))[1] < rr.get('syscalls', (0, 1))[1],
           'daemon storm: the storm is the one thinned: syscalls 1 in %d, cpu-time 1 in %d' %
           (rr.get('syscalls', (0, 1))[1], rr.get('cpu-time', (0, 1))[1]), rr)
        print('# daemon storm: cpu-time lost %d samples' % rr.get('cpu-time', (0, 1))[0])
    finally:
        d.stop()
        d.close_notify()


def main():
    if os.geteuid() != 0:
        skip_all('needs root for BPF and tracepoints')
    with tempfile.TemporaryDirectory() as d:
        p = record(os.path.join(d, 'probe.db'), ['-e', 'syscalls'], ['true'])
        if p.returncode != 0:
            skip_all('cannot record system calls here: ' + p.stderr.strip())
        con = sqlite3.connect(os.path.join(d, 'probe.db'))
        if con.execute("SELECT sampling FROM run_resource").fetchone()[0] != 'random':
            skip_all('BPF sampling is not available here (periods fixed)')
    check_cycle('syscalls', 'syscalls', 'path_a', 'path_b', 0.8, 20000, events=5)
    # A fixed period locks onto the fault loop on a quiet machine (fault_a = 1.0), but on a
    # loaded one the process's other faults shift the phase, at times enough that it does not
    # lock at all (0.7385, 0.70 and 0.844 seen in CI-loaded runs): only printed, as for the
    # switches; the system calls' loop shows the aliasing every run.
    check_cycle('faults', 'page-faults', 'fault_a', 'fault_b', 0.75, 20000, must_alias=False, events=4)
    check_cycle('faults', 'page-faults', 'fault_a', 'fault_b', 0.75, 20000, args=['--every-event'], events=4)
    check_cycle('switches', 'context-switches/64', 'switch_a', 'switch_b', 0.75, 16000, must_alias=False)
    check_slices()
    check_record_clock()
    check_daemon_slices()
    check_coverage(0, 'unthinned', 800, 5000)
    # Thinned by the kernel to about 200 samples a run (weights 1 to 16): the printed bars, a
    # normal approximation, undercover a little with unequal weights (94% at 110, 91.6% at 50
    # in the sanitizer build; 92.0% and 92.9% seen in full runs on a loaded machine, where the
    # kernel thins harder): at a true 93.5%, 1,200 runs fall under 93% one time in four, so
    # the floor is 91%, which bars that ignored the weights (a half or less) would not reach.
    check_coverage(10000, 'thinned', 1200, 20000, floor=0.91)
    check_others_see_everything()
    check_storm()
    check_daemon_storm()
    return done()


sys.exit(main())
