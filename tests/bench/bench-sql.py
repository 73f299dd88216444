#!/usr/bin/env python3
"""Times cppctl sql's output formats over N generated rows (10,000 to 1,000,000 by default):
table output streams (widths from the first 1,000 rows), so its time grows with the rows, as
csv's does, and it holds no more than those rows. Before it held every cell and took time quadratic in
them (80,000 rows: 4.15 s against csv's 0.05 s). Prints figures; never fails on speed.

Usage: tests/bench/bench-sql.py [BUILD_DIR] [--rows N,N,...] [--quick]"""
import argparse
import os
import subprocess
import sys
import tempfile
import time


def timed(argv):
    """Wall seconds of ARGV, its output thrown away."""
    t0 = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit('%s failed: %s' % (argv[:2], p.stderr.decode()))
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--rows', default='10000,80000,1000000')
    ap.add_argument('--quick', action='store_true', help='10,000 and 80,000 rows: a smoke test')
    a = ap.parse_args()
    cppctl = os.path.join(a.build, 'client', 'cppctl')
    rows = [10000, 80000] if a.quick else [int(n) for n in a.rows.split(',')]
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, 'b.db')
        folded = os.path.join(tmp, 'b.folded')
        open(folded, 'w').write('main;f 1\n')
        subprocess.run([cppctl, 'import', '--folded', folded, '-r', 'cpu-time', '--db', db], check=True,
                       stdout=subprocess.DEVNULL)
        print('%10s  %-6s %8s' % ('rows', 'format', 'seconds'))
        for n in rows:
            sql = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d) "
                   "SELECT x, x * 2 AS twice, 'name' || x AS name FROM c" % n)
            for fmt in ('table', 'csv'):
                wall = timed([cppctl, 'sql', '--format', fmt, db, sql])
                print('%10d  %-6s %8.2f' % (n, fmt, wall))
                sys.stdout.flush()


if __name__ == '__main__':
    main()
