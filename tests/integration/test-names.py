#!/usr/bin/env python3
"""Names in profiles of real programs: C++ names demangled in every view, export, SQL and the
shell, raw with --no-demangle (the workload cxxnames, built by g++); ld.so's startup frames
named from libc6-dbg's debug file, _start included. TAP output.

Usage: test-names.py CPPCTL WORKLOADS_DIR"""
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

from tap import done, ok, skip_all

cppctl, workloads = sys.argv[1], sys.argv[2]

ENERGY = 'geo::Field::energy(int) const'
ENERGY_RAW = '_ZNK3geo5Field6energyEi'
INTEGRATE = 'double geo::detail::integrate<double>(geo::Vec<double> const&, unsigned long)'


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def functions(db, *args):
    """{name: fraction} of the function profile, or None if the view failed."""
    p = run([cppctl, 'functions', '--db', db, '-t', '0', '--json'] + list(args))
    if p.returncode not in (0, 3):
        return None
    return {e['path'][0]: e['fraction'] for e in json.loads(p.stdout)['entries']}


def test_cxx(tmp):
    exe = os.path.join(workloads, 'cxxnames')
    if not os.path.exists(exe):
        ok(True, '# SKIP cxxnames is not built (no C++ compiler: apt install g++)')
        return
    db = os.path.join(tmp, 'cxx.db')
    p = run([cppctl, 'record', '-q', '--db', db, '-e', 'cpu-time', '--', exe, '400'])
    if not ok(p.returncode == 0, 'record the C++ workload', p.stderr):
        return
    f = functions(db) or {}
    ok(f.get(ENERGY, 0) >= 0.2 and f.get(INTEGRATE, 0) >= 0.2,
       'functions: a member function and a template instance, demangled (%.2f, %.2f)' %
       (f.get(ENERGY, 0), f.get(INTEGRATE, 0)), json.dumps(f, indent=1))
    mangled = [n for n in f if re.match(r'_[ZR]', n)]
    ok(not mangled, 'no mangled name left in the profile', mangled)
    raw = functions(db, '--no-demangle') or {}
    ok(raw.get(ENERGY_RAW, 0) >= 0.2 and ENERGY not in raw, '--no-demangle: %s as stored' % ENERGY_RAW,
       json.dumps(raw, indent=1))
    focused = functions(db, '--focus', r'^geo::Field::') or {}
    ok(focused.get(ENERGY, 0) >= 0.2 and focused.get(INTEGRATE, 1) == 0,
       '--focus matches the demangled name', json.dumps(focused, indent=1))
    hidden = functions(db, '--hide', r'<double>') or {}
    ok(INTEGRATE not in hidden or hidden[INTEGRATE] == 0, '--hide too', json.dumps(hidden, indent=1))
    p = run([cppctl, 'up', '--db', db, '-t', '0', '--root', ENERGY])
    ok(p.returncode == 0 and '(main %s)' % ENERGY in p.stdout, 'up --root takes the demangled name',
       p.stdout + p.stderr)

    for fmt in ('folded', 'json', 'speedscope', 'dot', 'flame', 'html'):
        p = run([cppctl, 'export', '--db', db, '--format', fmt])
        text = p.stdout
        if fmt in ('flame', 'html', 'dot'):
            text = text.replace('&amp;', '&').replace('&lt;', '<').replace('&gt;', '>')
        ok(p.returncode == 0 and ENERGY in text and ENERGY_RAW not in text, 'export --format %s: demangled' % fmt,
           p.stderr + text[:2000])
    out = os.path.join(tmp, 'cxx.pb.gz')
    p = run([cppctl, 'export', '--db', db, '-o', out])
    data = gzip.open(out).read() if p.returncode == 0 else b''
    ok(ENERGY.encode() in data and ENERGY_RAW.encode() in data,
       'export pprof: demangled names, the raw ones beside them (Function.system_name)', p.stderr)
    p = run([cppctl, 'export', '--db', db, '-o', out, '--no-demangle'])
    data = gzip.open(out).read() if p.returncode == 0 else b''
    ok(ENERGY_RAW.encode() in data and ENERGY.encode() not in data, 'export pprof --no-demangle: raw only',
       p.stderr)
    p = run([cppctl, 'export', '--db', db, '--format', 'folded', '--no-demangle'])
    ok(ENERGY_RAW in p.stdout and ENERGY not in p.stdout, 'export --no-demangle: raw', p.stdout + p.stderr)

    p = run([cppctl, 'sql', db, "SELECT leaf FROM functions('cpu-time') WHERE leaf LIKE '%Field%'; "
             "SELECT leaf FROM functions('cpu-time') WHERE demangle = 'no' AND leaf LIKE '%Field%'; "
             "SELECT demangle(name) FROM function WHERE name = '" + ENERGY_RAW + "'", '--format', 'csv'])
    ok(p.returncode == 0 and p.stdout.count(ENERGY) == 2 and p.stdout.count(ENERGY_RAW) == 1,
       'SQL: the views demangle, demangle = \'no\' does not, demangle(name) reads the tables', p.stdout + p.stderr)
    p = run([cppctl, 'shell', db], input='root "%s"\nup\nfilter demangle=no\nfunctions\n' % ENERGY)
    ok(p.returncode == 0 and '(main %s)' % ENERGY in p.stdout and ENERGY_RAW in p.stdout,
       'shell: a demangled root, and filter demangle=no', p.stdout + p.stderr)


def ld_so_debug_file():
    """The path of ld.so's separate debug file, by build id, or None."""
    p = run(['readelf', '-n', '/lib64/ld-linux-x86-64.so.2'])
    m = re.search(r'Build ID: ([0-9a-f]+)', p.stdout)
    if not m:
        return None
    path = '/usr/lib/debug/.build-id/%s/%s.debug' % (m.group(1)[:2], m.group(1)[2:])
    return path if os.path.exists(path) else None


def test_ld_so(tmp):
    if not ld_so_debug_file():
        ok(True, '# SKIP ld.so has no debug file here (apt install libc6-dbg)')
        return
    db = os.path.join(tmp, 'ld.db')
    # Page faults: a short-lived exec spends most of its faults in ld.so's relocation.
    p = run([cppctl, 'record', '-q', '--db', db, '-e', 'page-faults/1', '--',
             'sh', '-c', 'for i in 1 2 3 4 5 6 7 8 9 10; do LD_BIND_NOW=1 /bin/true; done'])
    if not ok(p.returncode == 0, 'record 10 execs of /bin/true with LD_BIND_NOW', p.stderr):
        return
    f = functions(db) or {}
    named = ['_start', '_dl_start', '_dl_sysdep_start', '_dl_relocate_object']
    ok(all(f.get(n, 0) > 0 for n in named), 'ld.so frames named: ' + ', '.join(named),
       json.dumps(sorted(f.items(), key=lambda x: -x[1])[:20], indent=1))
    unnamed = {n: v for n, v in f.items() if n.startswith('ld-linux')}
    ok(sum(unnamed.values()) <= 0.02, 'ld.so frames left as ld-linux-x86-64.so.2+0x...: %.3f of samples' %
       sum(unnamed.values()), json.dumps(unnamed, indent=1))


def main():
    if os.geteuid() != 0 and int(open('/proc/sys/kernel/perf_event_paranoid').read()) > 1:
        skip_all('needs root, or perf_event_paranoid <= 1')
    with tempfile.TemporaryDirectory() as tmp:
        test_cxx(tmp)
        test_ld_so(tmp)
    sys.exit(done())


if __name__ == '__main__':
    main()
