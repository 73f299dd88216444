#!/usr/bin/env python3
"""cppctl shell, driven through its input: a piped script against the CLI's own views (they must
be byte for byte the same, and the same as expected/shell/script.txt), errors that keep the
session going, change nothing and set the exit status (expected/shell/errors.*), save and
--replay, help (expected/shell/help.txt); and the interactive path through a pseudo-terminal: the
prompt, completion of a command, a function name, a resource and a filter key with TAB, Ctrl-C
at the prompt and during a view, history.

Usage: test-shell.py CPPCTL DATA_DIR (DATA_DIR/../expected/shell holds the expected outputs)"""
import difflib
import os
import pty
import select
import signal
import subprocess
import sys
import tempfile
import termios
import time

from tap import done, ok

cppctl, data = os.path.abspath(sys.argv[1]), sys.argv[2]
expected = os.path.join(data, '..', 'expected', 'shell')


def run(argv, stdin=None, cwd=None):
    return subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)


def same(got, name, what):
    """GOT is exactly the file expected/shell/NAME; a unified diff otherwise."""
    want = open(os.path.join(expected, name)).read()
    return ok(got == want, what, ''.join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                                             name, 'got')))


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
    same(p.stdout, 'script.txt', 'and the one worked out in expected/shell/script.txt')
    csv = p.stdout.split('fraction,hits,path')[-1]
    ok('(main uniquify_db qsort name_field_lt)' in p.stdout and 'extract_salary_fields' in csv and
       'print_salary_list' not in csv,
       'and the views are the ones asked for (not all empty)')

    # Errors keep the session going and change nothing; the exit status is the last failure's. Run
    # beside the store so that the messages, which name it, are fixed.
    errors = '\n'.join([
        'threshold 2', 'frobnicate', 'resource bytes-read', 'filter colour=red',
        'filter comm=zzz colour=red', 'filter since=yesterday-ish', 'filter focus=(', 'filter comm=',
        'filter "hide=unterminated', 'up', 'root nothere', 'resource page-faults', 'filter pid=5',
        'filter clear pid nope', 'show', 'filter clear', 'functions', 'up nothere',
    ]) + '\n'
    p = run([cppctl, 'shell', 's.db'], errors, cwd=tmp)
    same(p.stderr, 'errors.err', 'each bad command says what is wrong, and the store\'s resources')
    same(p.stdout, 'errors.out', 'the good commands between them still run; a refused filter line '
         'sets none of its filters, a refused clear clears none')
    ok(p.returncode == 3, 'the exit status is the last failure\'s (3: nothing matched)', p.returncode)
    p = run([cppctl, 'shell', db], 'threshold 2\nfunctions\n')
    ok(p.returncode == 2, 'a failed setting before good views: exit 2 (bad usage)', p.returncode)
    p = run([cppctl, 'shell', db], 'root nothere\n')
    ok(p.returncode == 3, 'a root the store has no function of is refused when set: exit 3', p.returncode)
    p = run([cppctl, 'shell', db], 'filter by=module\nroot nothere\nshow\n')
    ok(p.returncode == 0 and 'root       nothere' in p.stdout,
       'by module the root is a module, not checked against the functions', p.stdout + p.stderr)

    # Several resources side by side, where the view takes them.
    p = run([cppctl, 'shell', db], 'resource cpu-time,page-faults\ndown main\ntree\n')
    ok(p.stdout == cli(db, 'down', '-r', 'cpu-time,page-faults', 'main') and p.returncode == 2 and
       'tree --format text shows one resource' in p.stderr,
       'resource A,B: down side by side as the CLI; tree refuses it as the CLI does', p.stdout + p.stderr)

    # save, then --replay: the same output again.
    session = os.path.join(tmp, 'session.txt')
    p1 = run([cppctl, 'shell', db], script.replace('filter clear focus', 'filter clear focus\nfilter pid=1 by=x') +
             'help\nshow\nsave %s\n' % session)
    p2 = run([cppctl, 'shell', '--replay', session, db], '')
    saved = open(session).read()
    ok('help' not in saved.split('\n', 1)[1] and 'show' not in saved and 'root main' in saved and
       'pid=1' not in saved, 'save writes the settings and views, not help, show or refused settings', saved)
    ok(p2.returncode == 0 and p2.stdout == want, '--replay prints the same views again',
       p2.stdout[:2000] + p2.stderr)
    ok(p1.stdout.startswith(want), 'help and show come after, not in between', p1.stdout[len(want):][:300])
    p = run([cppctl, 'shell', '--replay', os.path.join(tmp, 'none'), db], '')
    ok(p.returncode == 1 and 'Cannot open' in p.stderr, '--replay of a missing file', p.stderr)
    p = run([cppctl, 'shell', os.path.join(tmp, 'none.db')], '')
    ok(p.returncode == 1 and 'none.db' in p.stderr, 'a missing store is named', p.stderr)

    p = run([cppctl, 'shell', db], 'help\nhelp down\nhelp nope\n')
    same(p.stdout, 'help.txt', 'help lists the commands with their arguments; help down, one')
    ok('help nope: no such command' in p.stderr, 'help of an unknown command', p.stderr)

    # Interactive, through a pseudo-terminal: prompt, TAB completion, Ctrl-C, history.
    env = dict(os.environ, HOME=tmp, TERM='dumb')
    env.pop('XDG_STATE_HOME', None)
    terminal = {}

    def start(store):
        terminal['pid'], terminal['fd'] = pty.fork()
        if terminal['pid'] == 0:
            os.execve(cppctl, [cppctl, 'shell', store], env)
        terminal['out'] = b''

    def send(keys, at_prompt=True):
        """Types KEYS, at the prompt once libedit has the terminal in its raw mode (it prints the
        prompt first: a Ctrl-D typed in between would reach it as a NUL); what the shell writes
        from now on is read into terminal['out']."""
        end = time.monotonic() + 10
        while at_prompt and termios.tcgetattr(terminal['fd'])[3] & termios.ICANON and time.monotonic() < end:
            time.sleep(0.01)
        terminal['out'] = b''
        os.write(terminal['fd'], keys)

    def read_until(token, timeout=10):
        end = time.monotonic() + timeout
        while token not in terminal['out'] and time.monotonic() < end:
            r, _, _ = select.select([terminal['fd']], [], [], 0.2)
            if r:
                try:
                    terminal['out'] += os.read(terminal['fd'], 65536)
                except OSError:
                    break
        return token in terminal['out']

    def after(token):
        """Reads until TOKEN; keeps only what came after it."""
        found = read_until(token)
        terminal['out'] = terminal['out'].split(token, 1)[1] if found else terminal['out']
        return found

    def leave(keys):
        """Types KEYS, which should end the shell; returns its exit status, or None if it goes on."""
        send(keys)
        end = time.monotonic() + 20
        while time.monotonic() < end:
            read_until(b'\0', 0.2)     # no NUL comes: keeps the terminal drained
            pid, status = os.waitpid(terminal['pid'], os.WNOHANG)
            if pid:
                os.close(terminal['fd'])
                return os.waitstatus_to_exitcode(status)
        os.kill(terminal['pid'], signal.SIGKILL)
        os.waitpid(terminal['pid'], 0)
        os.close(terminal['fd'])
        return None

    # Each line is typed at a prompt: what a terminal does with keys typed ahead of libedit (Ctrl-D
    # in its cooked mode, say) is the terminal's business, not the shell's.
    prompt = b'cppd> '
    start(db)
    ok(read_until(prompt), 'the prompt on a terminal', terminal['out'][-300:])
    send(b'resource pa\t\r')
    ok(after(b'page-faults') and read_until(prompt, 5), 'a setting, then the prompt again', terminal['out'])
    send(b'filter fo\tqsort\r')
    after(b'qsort') and read_until(prompt)
    send(b'show\r')
    ok(read_until(b'filter     focus=qsort\r\n' + prompt) and b'resource   page-faults' in terminal['out'],
       "TAB completes 'pa' to the resource page-faults and 'fo' to the filter key focus=",
       terminal['out'][-600:])
    send(b'filter clear\r')
    after(b'clear') and read_until(prompt)
    send(b'dow\tname_fi\t\r')
    ok(read_until(b'Downward Call Path Profile for resource: page-faults'),
       "TAB completes 'dow' to the command and 'name_fi' to the store's function name_field_lt",
       terminal['out'][-600:])
    ok(after(b'(name_field_lt) [5671'), 'and the view runs from the completed root', terminal['out'][-600:])
    read_until(prompt)
    send(b'threshold 0.5')
    read_until(b'threshold 0.5')       # echoed, so libedit has it: Ctrl-C flushes what it has not read
    send(b'\x03')
    # A Ctrl-C that comes while libedit draws rather than reads does not end its read: the shell
    # drops the line when it is entered. Either way the next prompt has the line dropped.
    if not read_until(prompt, 2):
        send(b'\r', at_prompt=False)
        read_until(prompt)
    send(b'show\r')
    ok(read_until(b'format     text\r\n' + prompt) and b'threshold  0.01' in terminal['out'],
       'Ctrl-C at the prompt drops the line and the shell goes on', terminal['out'][-600:])
    status = leave(b'quit\r')
    ok(status == 0, 'quit leaves with status 0', status)
    history = os.path.join(tmp, '.cppctl_history')
    # libedit writes a space as \040.
    ok(os.path.exists(history) and 'down\\040name_field_lt' in open(history).read() and
       'threshold\\0400.5' not in open(history).read(),
       'the completed line is in ~/.cppctl_history, the dropped one is not',
       open(history).read() if os.path.exists(history) else '')

    # A view longer than the terminal holds: it waits for the reader, and Ctrl-C stops it there.
    wide = os.path.join(tmp, 'wide.folded')
    with open(wide, 'w') as f:
        for i in range(3000):
            f.write('main;a%d;b%d;c%d 1\n' % (i % 50, i % 700, i))
    p = run([cppctl, 'import', '--folded', wide, '--db', os.path.join(tmp, 'wide.db'), '--resource', 'cpu-time'])
    ok(p.returncode == 0, 'a store whose tree is 90 kB of text', p.stderr)
    start(os.path.join(tmp, 'wide.db'))
    read_until(prompt)
    send(b'threshold 0\r')
    after(b'threshold 0') and read_until(prompt)
    send(b'tree\r')
    ok(read_until(b'Sample Tree'), 'the tree starts', terminal['out'][-300:])
    time.sleep(0.3)
    send(b'\x03', at_prompt=False)
    ok(after(b'tree: interrupted') and read_until(prompt), 'Ctrl-C stops the view, not the shell',
       terminal['out'][-300:])
    send(b'show\r')
    ok(read_until(b'format     text\r\n' + prompt) and b'threshold  0\r\n' in terminal['out'],
       'which keeps its settings', terminal['out'][-300:])
    status = leave(b'\x04')
    ok(status == 130, 'the end of input leaves with the interrupted view\'s status, 130', status)
    return done()


sys.exit(main())
