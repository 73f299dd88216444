#!/usr/bin/env python3
"""cppctl shell, driven through its input: a piped script against the CLI's own views (they must
be byte for byte the same), errors that keep the session going and set the exit status, save and
--replay, help; and the interactive path through a pseudo-terminal: the prompt, completion of a
command and of a function name with TAB, history.

Usage: test-shell.py CPPCTL DATA_DIR"""
import os
import pty
import select
import subprocess
import sys
import tempfile
import time

from tap import done, ok

cppctl, data = sys.argv[1], sys.argv[2]


def run(argv, stdin=None):
    return subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def cli(db, *args):
    return run([cppctl] + list(args) + ['--db', db]).stdout


def main():
    tmp = tempfile.mkdtemp()
    db = os.path.join(tmp, 's.db')
    for f, r in (('process_db.folded', 'page-faults'), ('process_db-cpu.folded', 'cpu-time')):
        p = run([cppctl, 'import', '--folded', os.path.join(data, f), '--db', db, '--resource', r, '--period', '10'])
        ok(p.returncode == 0, 'import %s as %s' % (f, r), p.stderr)

    # A script: settings, then each view; the output must be the CLI's, in order.
    script = '\n'.join([
        '# comments and blank lines are skipped', '',
        'resource page-faults', 'root main', 'threshold 0.1', 'down',
        'filter focus=qsort by=function', 'functions', 'filter clear focus',
        'resource cpu-time', 'threshold 5%', 'up name_field_lt', 'body', 'tree', 'graph qsort',
        'format json', 'down', 'format csv', 'filter "hide=^print_salary_list$"', 'functions',
    ]) + '\n'
    p = run([cppctl, 'shell', db], script)
    want = ''.join([
        cli(db, 'down', '-r', 'page-faults', '-t', '0.1', 'main'),
        cli(db, 'functions', '-r', 'page-faults', '-t', '0.1', '--focus', 'qsort', '--by', 'function'),
        cli(db, 'up', '-r', 'cpu-time', '-t', '5%', '--by', 'function', 'name_field_lt'),
        cli(db, 'body', '-r', 'cpu-time', '-t', '5%', '--by', 'function'),
        cli(db, 'tree', '-r', 'cpu-time', '-t', '5%', '--by', 'function'),
        cli(db, 'graph', '-r', 'cpu-time', '-t', '5%', '--by', 'function', 'qsort'),
        cli(db, 'down', '-r', 'cpu-time', '-t', '5%', '--by', 'function', '--json', 'main'),
        cli(db, 'functions', '-r', 'cpu-time', '-t', '5%', '--by', 'function', '--format', 'csv',
            '--hide', '^print_salary_list$'),
    ])
    ok(p.returncode == 0 and p.stderr == '', 'a script of settings and views runs clean', p.stderr)
    ok(p.stdout == want, "every view is the CLI's, byte for byte", p.stdout[:3000])
    csv = p.stdout.split('fraction,hits,path')[-1]
    ok('(main uniquify_db qsort name_field_lt)' in p.stdout and 'extract_salary_fields' in csv and
       'print_salary_list' not in csv,
       'and the views are the ones asked for (not all empty)')

    # Errors keep the session going; the exit status is the last failure's.
    p = run([cppctl, 'shell', db], 'threshold 2\nfrobnicate\nresource bytes-read\nfilter colour=red\n'
            'filter since=yesterday-ish\nfilter focus=(\nup\nresource page-faults\nfunctions\nup nothere\n')
    err = p.stderr
    ok('threshold T: a fraction in [0, 1]' in err, 'a threshold of 2 is refused when set', err)
    ok("frobnicate: no such command; 'help' lists them" in err, 'an unknown command', err)
    ok("has no samples of resource 'bytes-read'" in err, 'a resource the store lacks is refused when set', err)
    ok('filter colour: no such filter' in err, 'an unknown filter key', err)
    ok('filter since=yesterday-ish: expected a time' in err, 'a bad time', err)
    ok('filter focus=(:' in err, 'a bad regular expression, with regcomp\'s reason', err)
    ok("up needs a root: 'root FUNCTION' or 'up FUNCTION'" in err, 'a view without its root', err)
    ok(p.stdout.count('Body+Descendants Function Profile for resource: page-faults') == 1,
       'the good commands between the bad ones still run', p.stdout)
    ok("'nothere' appears in no sample of page-faults" in err and p.returncode == 3,
       'the exit status is the last failure\'s (3: nothing matched)', (p.returncode, err))
    p = run([cppctl, 'shell', db], 'threshold 2\nfunctions\n')
    ok(p.returncode == 2, 'a failed setting before good views: exit 2 (bad usage)', p.returncode)

    # save, then --replay: the same output again.
    session = os.path.join(tmp, 'session.txt')
    p1 = run([cppctl, 'shell', db], script + 'help\nshow\nsave %s\n' % session)
    p2 = run([cppctl, 'shell', '--replay', session, db], '')
    saved = open(session).read()
    ok('help' not in saved.split('\n', 1)[1] and 'show' not in saved and 'root main' in saved,
       'save writes the settings and views, not help or show', saved)
    ok(p2.returncode == 0 and p2.stdout == want, '--replay prints the same views again',
       p2.stdout[:2000] + p2.stderr)
    ok(p1.stdout.startswith(want), 'help and show come after, not in between', p1.stdout[len(want):][:300])
    p = run([cppctl, 'shell', '--replay', os.path.join(tmp, 'none'), db], '')
    ok(p.returncode == 1 and 'Cannot open' in p.stderr, '--replay of a missing file', p.stderr)
    p = run([cppctl, 'shell', os.path.join(tmp, 'none.db')], '')
    ok(p.returncode == 1 and 'none.db' in p.stderr, 'a missing store is named', p.stderr)

    p = run([cppctl, 'shell', db], 'help\nhelp down\nhelp nope\n')
    ok(p.stdout.count('\n') > 15 and 'down       [FUNCTION]     downward call path profile' in p.stdout,
       'help lists the commands with their arguments', p.stdout)
    ok('help nope: no such command' in p.stderr, 'help of an unknown command', p.stderr)

    # Interactive, through a pseudo-terminal: prompt, TAB completion, history.
    env = dict(os.environ, HOME=tmp, TERM='dumb')
    env.pop('XDG_STATE_HOME', None)
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(cppctl, [cppctl, 'shell', db], env)
    out = b''

    def read_until(token, timeout=10):
        nonlocal out
        end = time.monotonic() + timeout
        while token not in out and time.monotonic() < end:
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    break
        return token in out

    ok(read_until(b'cppd> '), 'the prompt on a terminal', out[-300:])
    os.write(fd, b'resource page-faults\r')
    ok(read_until(b'cppd> ', 5), 'a setting, then the prompt again')
    out = b''
    os.write(fd, b'dow\tname_fi\t\r')
    ok(read_until(b'Downward Call Path Profile for resource: page-faults'),
       "TAB completes 'dow' to the command and 'name_fi' to the store's function name_field_lt",
       out[-600:])
    ok(read_until(b'(name_field_lt) [5671'), 'and the view runs from the completed root', out[-600:])
    os.write(fd, b'quit\r')
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    ok(os.waitstatus_to_exitcode(status) == 0, 'quit leaves with status 0')
    history = os.path.join(tmp, '.cppctl_history')
    # libedit writes a space as \040.
    ok(os.path.exists(history) and 'down\\040name_field_lt' in open(history).read(),
       'the completed line is in ~/.cppctl_history', open(history).read() if os.path.exists(history) else '')
    return done()


sys.exit(main())
