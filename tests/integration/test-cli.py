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


def max_rss_mib(argv, stdin_bytes):
    """Runs ARGV with STDIN_BYTES zero bytes piped in (no newline); returns its exit status,
    stderr and peak resident memory in MiB."""
    feeder = subprocess.Popen(['head', '-c', str(stdin_bytes), '/dev/zero'], stdout=subprocess.PIPE)
    errf = tempfile.TemporaryFile()
    child = subprocess.Popen(argv, stdin=feeder.stdout, stdout=subprocess.DEVNULL, stderr=errf)
    feeder.stdout.close()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    feeder.wait()
    errf.seek(0)
    return child.returncode, errf.read().decode(errors='replace'), usage.ru_maxrss / 1024


def endless_lines(tmp):
    """A newline-free stream is refused at the 16 MiB line bound as it is read: 200 MiB of zeros
    through import --folded and shell --replay never take more than the bound's worth of memory."""
    db = os.path.join(tmp, 'endless.db')
    make_store(db)
    size = 200 << 20
    status, err, rss = max_rss_mib([cppctl, 'import', '--folded', '-', '-r', 'cpu-time', '--db', db], size)
    ok(status == 1 and ':1: line longer than 16777216 bytes' in err, 'import --folded of a newline-free stream: '
       'refused, naming line 1', (status, err))
    ok(rss < 120, 'in %.0f MiB of memory, not the stream\'s 200' % rss, (status, err))
    status, err, rss = max_rss_mib([cppctl, 'shell', '--replay', '/dev/stdin', db], size)
    ok(status == 1 and ':1: line longer than 16777216 bytes' in err, 'shell --replay of one: refused', (status, err))
    ok(rss < 120, 'in %.0f MiB of memory' % rss, (status, err))


def main():
    tmp = tempfile.mkdtemp(prefix='cppd-cli-')
    os.chmod(tmp, 0o755)
    try:
        parts = (until_zero, endless_lines)
        # CPPD_CLI_PARTS=until_zero,... runs only those.
        chosen = os.environ.get('CPPD_CLI_PARTS', '').split(',')
        for part in [p for p in parts if p.__name__ in chosen] if chosen != [''] else parts:
            part(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(done())


if __name__ == '__main__':
    main()
