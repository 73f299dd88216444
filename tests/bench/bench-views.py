#!/usr/bin/env python3
"""Times cppctl import and every view on a synthetic folded file: 1,000,000 samples over
100,000 distinct stacks by default (--stacks 1000000: the store of the analysis target in
BENCHMARKS.md). Each view is timed cold, with an empty cache directory (the view lays out its
index from the store, in a file there, and keeps it if unfiltered; a view filtered by its
samples lays out and keeps the index of every sample, then its own from that one), and with the
index cache (the index mapped, or a filtered view's laid out from it); building the indexes,
which the first view after each change of the store does, is timed on its own. A second resource, page-faults (a fifth of the samples over
a fifth of the stacks, other ones), is there for the views of several resources (-r A,B,
--ratio A/B).
--keep DIR keeps the folded file and the store in DIR and reuses them (a 1 M-stack store takes
a minute to make): the import is then not timed. Prints figures; never fails on speed.

Usage: tests/bench/bench-views.py [BUILD_DIR] [--samples N] [--stacks N] [--quick] [--keep DIR]"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))


def run(argv, keep_output=False, index=None):
    """Runs ARGV; returns its stdout (if KEEP_OUTPUT), wall and CPU seconds and its own peak
    RSS in KiB. Output is not kept by default: a child's peak RSS includes ours at fork time."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        env = dict(os.environ, CPPD_INDEX_DIR=index or '/dev/null/no-index')
        p = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            sys.exit('bench: %s failed (%d): %s' % (' '.join(argv), p.returncode, err.read().decode()))
        return out.read().decode() if keep_output else '', wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--samples', type=int, default=1_000_000)
    ap.add_argument('--stacks', type=int, default=100_000)
    ap.add_argument('--quick', action='store_true', help='10,000 samples: a smoke test for CI')
    ap.add_argument('--keep', metavar='DIR', help='keep (and reuse) the folded file and the store in DIR')
    a = ap.parse_args()
    if a.quick:
        a.samples, a.stacks = 10_000, 1_000
    cppctl = os.path.join(a.build, 'client', 'cppctl')

    with tempfile.TemporaryDirectory() as tmp:
        keep = a.keep or tmp
        os.makedirs(keep, exist_ok=True)
        name = 'bench-%d-%d' % (a.samples, a.stacks)
        folded, db = os.path.join(keep, name + '.folded'), os.path.join(keep, name + '.db')
        if not os.path.exists(folded):
            t0 = time.monotonic()
            subprocess.run([sys.executable, os.path.join(here, 'gen-folded.py'), folded,
                            '--samples', str(a.samples), '--stacks', str(a.stacks)], check=True)
            print('generated %d samples over %d stacks (%.1f MB) in %.1f s'
                  % (a.samples, a.stacks, os.path.getsize(folded) / 1e6, time.monotonic() - t0))

        rows = []
        rate = None
        if not os.path.exists(db):
            out, wall, cpu, rss = run([cppctl, 'import', '--folded', folded, '--db', db, '--resource', 'cpu-time'])
            rows.append(('import', wall, cpu, rss))
            rate, cpu_rate, import_rss = a.samples / max(wall, 1e-3), a.samples / max(cpu, 1e-3), rss
        else:
            print('the store %s is kept from an earlier run: the import is not timed' % db)
        import sqlite3
        with sqlite3.connect(db) as con:
            second = con.execute("SELECT count(*) FROM resource WHERE name = 'page-faults'").fetchone()[0]
        if not second:
            other = os.path.join(keep, 'bench-%d-%d-seed2.folded' % (a.samples // 5, a.stacks // 5))
            if not os.path.exists(other):
                subprocess.run([sys.executable, os.path.join(here, 'gen-folded.py'), other, '--samples',
                                str(a.samples // 5), '--stacks', str(max(1, a.stacks // 5)), '--seed', '2'],
                               check=True)
            run([cppctl, 'import', '--folded', other, '--db', db, '--resource', 'page-faults'])
        views = [
            ('functions', ['functions']),
            ('body', ['body']),
            ('down main', ['down', 'main']),
            ('down main -t 0', ['down', 'main', '-t', '0']),
            ('up util_sort_*', None),
            ('tree', ['tree']),
            ('graph', ['graph']),
            ('functions --since @0', ['functions', '--since', '@0']),
            ('tree --since @0', ['tree', '--since', '@0']),
            ('tree --format json', ['tree', '--format', 'json']),
            ('graph --format dot', ['graph', '--format', 'dot']),
            ('export --format folded', ['export', '--format', 'folded']),
            ('tree -t 0', ['tree', '-t', '0']),
        ]
        # A root in the middle of the stacks: the heaviest non-main function.
        fn, _, _, _ = run([cppctl, 'functions', '--db', db, '--json'], keep_output=True)
        import json
        entries = json.loads(fn)['entries']
        mid = next(e['path'][0] for e in entries if e['path'][0] != 'main')
        views[4] = ('up %s' % mid, ['up', mid])
        views.append(('down %s' % mid, ['down', mid]))
        views.append(('up %s --since @0' % mid, ['up', mid, '--since', '@0']))
        several = ['-r', 'cpu-time,page-faults']
        views += [
            ('functions -r A,B', ['functions'] + several),
            ('down main -r A,B', ['down', 'main'] + several),
            ('up %s -r A,B' % mid, ['up', mid] + several),
            ('down main --ratio B/A', ['down', 'main', '--ratio', 'page-faults/cpu-time']),
            ('functions -r A,B --since @0', ['functions', '--since', '@0'] + several),
        ]
        # The indexes, built once (what the first unfiltered view after a change of the store
        # pays): the tree's by a function profile, the inverted tree's by an upward profile.
        index = os.path.join(tmp, 'index')
        _, build_down, _, build_down_rss = run([cppctl, 'functions', '--db', db], index=index)
        run([cppctl, 'functions', '--db', db, '-r', 'page-faults'], index=index)
        _, build_up, _, build_up_rss = run([cppctl, 'up', mid, '--db', db], index=index)
        # Indexed views three times each: the first may find the index's pages gone from the page
        # cache (a loaded store's view reads most of the file then: see BENCHMARKS.md), the best
        # is a view on a host that uses its store.
        timings = []
        for name, argv in views:
            with tempfile.TemporaryDirectory(dir=keep) as empty:
                _, plain, _, rss = run([cppctl] + argv + ['--db', db], index=empty)
            indexed = []
            for _ in range(3):
                _, t, _, rss_indexed = run([cppctl] + argv + ['--db', db], index=index)
                indexed.append(t)
            timings.append((name, plain, indexed, rss, rss_indexed))

        print('store: %.1f MB for %d samples (%.1f bytes per sample)'
              % (os.path.getsize(db) / 1e6, a.samples, os.path.getsize(db) / a.samples))
        for name, wall, cpu, rss in rows:
            print('%-28s %9.3f s wall %9.3f s CPU %9.1f MiB' % (name, wall, cpu, rss / 1024))
        if rate:
            print('import rate: %.0f samples/s (%.0f per CPU second), peak RSS %.0f MiB'
                  % (rate, cpu_rate, import_rss / 1024))
        print('building the indexes: the tree\'s %.2f s (%.0f MiB), the inverted tree\'s %.2f s (%.0f MiB); on disk '
              '%.0f MB' % (build_down, build_down_rss / 1024, build_up, build_up_rss / 1024,
                          sum(os.path.getsize(os.path.join(index, f)) for f in os.listdir(index)) / 1e6))
        print('%-28s %12s %12s %12s %12s %12s' % ('view', 'cold s', 'indexed s', 'first s', 'MiB cold',
                                                  'MiB indexed'))
        for name, plain, indexed, rss, rss_indexed in timings:
            print('%-28s %12.3f %12.3f %12.3f %12.1f %12.1f' % (name, plain, min(indexed), indexed[0], rss / 1024,
                                                                rss_indexed / 1024))
        print('peak RSS of any view: %.0f MiB cold, %.0f MiB indexed'
              % (max(t[3] for t in timings) / 1024, max(t[4] for t in timings) / 1024))
        print("cold: an empty cache directory, the view's index laid out from the store (a filtered view's from\n"
              "the index of every sample, laid out first); indexed: the index mapped from the cache (a filtered\n"
              "view's laid out from the cached one), the best of three runs; first: the first of them, right\n"
              "after the cold view. MiB: peak RSS, the index's mapped pages included.")


if __name__ == '__main__':
    main()
