#!/usr/bin/env python3
"""Big real programs: cppctl record + cppctl functions against perf record + perf
report --children at the same settings (CPU time every 1 ms, DWARF, 16 KiB of stack), per
program of tests/integration/realprograms.py: PyTorch, a PostgreSQL server under pgbench,
Chromium headless, ripgrep, g++. Prints a Markdown table; never fails.

Columns, per profiler:
- CPU beyond the workload: CPU seconds of the profiler's commands and the program under them,
  less the program's own CPU unprofiled (the median of REPEAT runs, interleaved).
- wall: seconds of record + the report (cppctl functions; perf report --children --stdio).
- peak RSS: the largest VmHWM of the profiler's own processes (cppctl; perf record, perf report).
- broken: % of samples whose stack is broken (realprograms.classify: neither main nor a frame
  that starts a process or thread; its outermost frame unsymbolized or a function that starts
  nothing).
- unsymbolized: % of user-space frames without a name (cppd: the header's figure; perf: the
  "[unknown]" frames of perf script).
- top-10 diff: the largest difference between cppd's and perf's shares of a function, over the
  union of both top 10s (realprograms.compare: process and thread start frames left out).

Usage: tests/bench/bench-realprograms.py [BUILD_DIR] [--repeat N] [--only PROGRAM,...] [--quick]
(--quick: ripgrep once, a smoke test)"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'integration'))
import realprograms as rp  # noqa: E402


class Measured:
    """Runs ARGV: its wall time, its CPU (with its waited-for descendants) and its own peak RSS
    (VmHWM of the process itself, read every 20 ms while it runs; KiB)."""

    def __init__(self, argv, **kw):
        before = os.times()
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
        self.hwm = 0
        done = threading.Event()

        def poll():
            while not done.is_set():
                try:
                    for line in open('/proc/%d/status' % p.pid):
                        if line.startswith('VmHWM:'):
                            self.hwm = max(self.hwm, int(line.split()[1]))
                except OSError:
                    pass
                time.sleep(0.02)
        t = threading.Thread(target=poll, daemon=True)
        t.start()
        out, err = p.communicate()
        done.set()
        t.join()
        after = os.times()
        self.wall = time.monotonic() - t0
        self.cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        self.rc, self.stdout, self.stderr = p.returncode, out.decode(errors='replace'), err.decode(errors='replace')


def unsymbolized_perf(stacks):
    frames = sum(len(s) for s in stacks)
    return sum(1 for s in stacks for n in s if n is None) / frames if frames else 0.0


def broken(c):
    total = sum(c.values())
    return (c['unknown'] + c['truncated']) / total if total else 0.0


def bench(name, cppctl, repeat):
    tmp = tempfile.mkdtemp(prefix='bench-real-')
    w = rp.Workload(name, tmp)
    if w.why_not:
        return None, w.why_not
    base, mine, theirs = [], [], []
    db, data = os.path.join(tmp, 'b.db'), os.path.join(tmp, 'perf.data')
    for _ in range(repeat):
        w.before()
        base.append(Measured(w.argv))
        if os.path.exists(db):
            os.unlink(db)
        w.before()
        rec = Measured([cppctl, 'record', '-q', '--db', db, '--'] + w.argv)
        fn = Measured([cppctl, 'functions', '--db', db, '-r', 'cpu-time', '-t', '0.01'])
        if rec.rc or fn.rc or w.check():
            return None, 'cppctl: %s %s %s' % (rec.stderr[-300:], fn.stderr[-300:], w.check())
        mine.append((rec, fn))
        w.before()
        prec = Measured(rp.perf_record_argv(data) + w.argv)
        rep = Measured(['perf', 'report', '--children', '--stdio', '-g', 'none', '--sort', 'sym', '-i', data])
        if prec.rc or rep.rc or w.check():
            return None, 'perf: %s %s %s' % (prec.stderr[-300:], rep.stderr[-300:], w.check())
        theirs.append((prec, rep))
    # The profiles of the last repetition.
    j = json.loads(subprocess.run([cppctl, 'functions', '--db', db, '-r', 'cpu-time', '-t', '0', '--json',
                                   '--inline', 'fold'], stdout=subprocess.PIPE).stdout)
    ours = {e['path'][0]: e['fraction'] for e in j['entries'] if not rp.UNSYMBOLIZED.search(e['path'][0])}
    pstacks = rp.perf_stacks(data)
    perf_shares, n_perf = rp.shares([(s, 1) for s in pstacks])
    rows = rp.compare(ours, perf_shares)
    base_cpu = statistics.median(b.cpu for b in base)
    c_cls, p_cls = rp.classify(rp.cppd_stacks(cppctl, db)), rp.classify([(s, 1) for s in pstacks])
    med = statistics.median
    return {
        'samples': (j['samples'], n_perf),
        'cpu': (med(r.cpu + f.cpu for r, f in mine) - base_cpu, med(r.cpu + f.cpu for r, f in theirs) - base_cpu),
        'wall': (med(r.wall + f.wall for r, f in mine), med(r.wall + f.wall for r, f in theirs)),
        'rss': (max(max(r.hwm, f.hwm) for r, f in mine) / 1024, max(max(r.hwm, f.hwm) for r, f in theirs) / 1024),
        'broken': (broken(c_cls), broken(p_cls)),
        'classes': (c_cls, p_cls),
        'unsym': (j['frames_unsymbolized'], unsymbolized_perf(pstacks)),
        'diff': rows[0] if rows else ('', 0, 0),
        'base': (base_cpu, med(b.wall for b in base)),
    }, ''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--only', default=','.join(rp.PROGRAMS))
    ap.add_argument('--quick', action='store_true', help='ripgrep once: a smoke test')
    a = ap.parse_args()
    if a.quick:
        a.repeat, a.only = 1, 'ripgrep'
    if os.geteuid() != 0:
        print('bench-realprograms: needs root (perf events, the PostgreSQL server\'s user); skipped')
        return
    with tempfile.TemporaryDirectory() as tmp:
        why = rp.working_perf(tmp)
    if why:
        print('bench-realprograms: %s; skipped' % why)
        return
    cppctl = os.path.join(a.build, 'client', 'cppctl')
    perf_version = subprocess.run(['perf', 'version'], stdout=subprocess.PIPE, text=True).stdout.strip()
    print('machine: Linux %s, %d CPUs; %s; median of %d runs, interleaved' %
          (os.uname().release, os.cpu_count(), perf_version, a.repeat))
    print()
    print('| program | workload CPU / wall | samples cppd / perf | CPU beyond the workload, cppd / perf | '
          'wall, cppd / perf | peak RSS MiB, cppd / perf | broken stacks, cppd / perf | '
          'unsymbolized frames, cppd / perf | largest top-10 share difference |')
    print('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |')
    notes = []
    for name in a.only.split(','):
        r, why = bench(name, cppctl, a.repeat)
        if r is None:
            print('| %s | not measured: %s |||||||' % (name, why.replace('\n', ' ')[:200]))
            continue
        n, x, y = r['diff']
        print('| %s | %.2f s / %.2f s | %d / %d | %.2f s / %.2f s | %.2f s / %.2f s | %.0f / %.0f | %.1f%% / %.1f%% | '
              '%.1f%% / %.1f%% | %.3f (%s: %.3f / %.3f) |' %
              (name, r['base'][0], r['base'][1], r['samples'][0], r['samples'][1], r['cpu'][0], r['cpu'][1],
               r['wall'][0], r['wall'][1], r['rss'][0], r['rss'][1], 100 * r['broken'][0], 100 * r['broken'][1],
               100 * r['unsym'][0], 100 * r['unsym'][1], abs(x - y), n[:40], x, y))
        notes.append('%s: stacks cppd %s; perf %s' % (name, r['classes'][0], r['classes'][1]))
        sys.stdout.flush()
    print()
    for line in notes:
        print(line)


if __name__ == '__main__':
    main()
