"""TAP output for the Python integration tests: ok(), skip_all(), done()."""
import sys

_tests = 0
_failed = 0


def ok(cond, what, detail=None):
    """Prints one test line; on failure, DETAIL (any object) below it as comments, and the line and
    its detail on stderr too: meson's --print-errorlogs shows a TAP test's stderr, not its stdout,
    and a failure seen once in CI must say what it saw."""
    global _tests, _failed
    _tests += 1
    print('%sok %d - %s' % ('' if cond else 'not ', _tests, what))
    if not cond:
        _failed += 1
        lines = str(detail if detail is not None else '').splitlines()[:30]
        for line in lines:
            print('#   ' + line)
        sys.stderr.write('not ok %d - %s\n' % (_tests, what) + ''.join('#   %s\n' % x for x in lines))
        sys.stderr.flush()
    sys.stdout.flush()
    return cond


def skip_all(why):
    """The whole test cannot run here (meson counts it as skipped)."""
    print('1..0 # SKIP %s' % why)
    sys.exit(0)


def done():
    """Prints the plan; returns the exit status."""
    print('1..%d' % _tests)
    return 1 if _failed else 0
