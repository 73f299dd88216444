#!/usr/bin/env python3
"""cppctl's command line against hostile but ordinary input (issue 17): what -o may overwrite,
endless lines, counts that would overflow, time bounds at 0, stores one may read but not write,
the profiled command's exit status, and errors that name their cause. TAP output; the parts
that need root (another user, a read-only mount) skip themselves without it.

Usage: test-cli.py CPPCTL DATA_DIR WORKLOADS_DIR"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

from tap import done, ok

cppctl, data, workloads = sys.argv[1:4]
FOLDED = os.path.join(data, 'process_db.folded')


def run(argv, **kw):
    kw.setdefault('timeout', 60)
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def say(p):
    """A finished process's output, for a failed test's detail."""
    return 'exit %d\n%s\n%s' % (p.returncode, p.stdout[-1500:], p.stderr[-1500:])


def make_store(path, folded=FOLDED, *extra):
    p = run([cppctl, 'import', '--folded', folded, '-r', 'cpu-time', '--db', path] + list(extra))
    assert p.returncode == 0, say(p)


def until_zero(tmp):
    """--until @0 and 1970-01-01 are bounds like any other: no sample lies before them."""
    db = os.path.join(tmp, 'until.db')
    make_store(db, FOLDED, '--time', '@1700000000')
    for bound in ('@0', '1970-01-01 00:00'):
        p = run([cppctl, 'functions', '--db', db, '--until', bound], env=dict(os.environ, TZ='UTC'))
        ok(p.returncode == 3 and 'no samples' in p.stderr, '--until %s selects nothing' % bound, say(p))
    p = run([cppctl, 'functions', '--db', db, '--since', '@0'])
    ok(p.returncode == 0 and '9950 samples' in p.stdout, '--since @0 selects every sample', say(p))
    p = run([cppctl, 'sql', db, "SELECT count(*) FROM functions WHERE until = 0"])
    ok(p.returncode == 0 and p.stdout.split()[-1] == '0', 'and the SQL functions\' until = 0 likewise', say(p))


def main():
    tmp = tempfile.mkdtemp(prefix='cppd-cli-')
    os.chmod(tmp, 0o755)
    try:
        parts = (until_zero,)
        # CPPD_CLI_PARTS=until_zero,... runs only those.
        chosen = os.environ.get('CPPD_CLI_PARTS', '').split(',')
        for part in [p for p in parts if p.__name__ in chosen] if chosen != [''] else parts:
            part(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(done())


if __name__ == '__main__':
    main()
