#!/usr/bin/env python3
"""Times cppctl import and every view on a synthetic folded file: 1,000,000 samples over
100,000 distinct stacks by default. Prints figures; never fails on speed.

Usage: tests/bench/bench-views.py [BUILD_DIR] [--samples N] [--stacks N] [--quick]"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))


def run(argv, keep_output=False):
    """Runs ARGV; returns its stdout (if KEEP_OUTPUT), wall and CPU seconds and its own peak
    RSS in KiB. Output is not kept by default: a child's peak RSS includes ours at fork time."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=out, stderr=err)
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
    a = ap.parse_args()
    if a.quick:
        a.samples, a.stacks = 10_000, 1_000
    cppctl = os.path.join(a.build, 'client', 'cppctl')

    with tempfile.TemporaryDirectory() as tmp:
        folded, db = os.path.join(tmp, 'bench.folded'), os.path.join(tmp, 'bench.db')
        t0 = time.monotonic()
        subprocess.run([sys.executable, os.path.join(here, 'gen-folded.py'), folded,
                        '--samples', str(a.samples), '--stacks', str(a.stacks)], check=True)
        print('generated %d samples over %d stacks (%.1f MB) in %.1f s'
              % (a.samples, a.stacks, os.path.getsize(folded) / 1e6, time.monotonic() - t0))

        rows = []
        out, wall, cpu, rss = run([cppctl, 'import', '--folded', folded, '--db', db, '--resource', 'cpu-time'])
        rows.append(('import', wall, cpu, rss))
        rate = a.samples / wall if wall else 0
        views = [
            ('functions', ['functions']),
            ('body', ['body']),
            ('down main', ['down', 'main']),
            ('down main -t 0', ['down', 'main', '-t', '0']),
            ('up util_sort_*', None),
            ('tree', ['tree']),
        ]
        # A root in the middle of the stacks: the heaviest non-main function.
        fn, _, _, _ = run([cppctl, 'functions', '--db', db, '--json'], keep_output=True)
        import json
        entries = json.loads(fn)['entries']
        mid = next(e['path'][0] for e in entries if e['path'][0] != 'main')
        views[4] = ('up %s' % mid, ['up', mid])
        views.append(('down %s' % mid, ['down', mid]))
        for name, argv in views:
            _, wall, cpu, rss = run([cppctl] + argv + ['--db', db])
            rows.append((name, wall, cpu, rss))

        print('store: %.1f MB for %d samples (%.1f bytes per sample)'
              % (os.path.getsize(db) / 1e6, a.samples, os.path.getsize(db) / a.samples))
        print('%-28s %9s %9s %12s' % ('step', 'wall s', 'cpu s', 'max RSS MiB'))
        for name, wall, cpu, rss in rows:
            print('%-28s %9.3f %9.3f %12.1f' % (name, wall, cpu, rss / 1024))
        print('import rate: %.0f samples/s' % rate)


if __name__ == '__main__':
    main()
