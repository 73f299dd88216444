#!/usr/bin/env python3
"""The cost of naming after the fact (issue 26). Two parts, figures only, never a verdict:

1. A view over a store holding N modules of stripped programs, each of its own build id, their
   debug files on a local debuginfod only: the function profile timed as stored (no naming,
   CPPD_NO_LATE_NAMES=1), with the server and an empty client cache (cold: N fetches), with the
   cache filled (warm: no request), and after `cppctl symbolize` with no server (the names in
   the store). Needs root (perf events), g++ and debuginfod.
2. `cppctl symbolize` over a big store: FRAMES frames stored as addresses (one stack each, made
   in SQL over a recording) of a stripped copy of cppctl itself, its debug file in a --debug-dir
   (no network), and the view before (named as it loads, each time) and after.

Usage: tests/bench/bench-late-names.py [BUILD_DIR] [--modules N] [--frames N] [--quick]"""
import argparse
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

here = os.path.dirname(os.path.abspath(__file__))


def timed(argv, env=None):
    """Runs ARGV; returns (stdout, wall s, CPU s, peak RSS KiB)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith('DEBUGINFOD_') and k != 'CPPD_NO_LATE_NAMES'}
    full.update(env or {})
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=out, stderr=err, env=full)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit('bench: %s failed: %s' % (' '.join(argv), err.read().decode()[-2000:]))
        return out.read().decode(), wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def report(what, r):
    print('  %-52s %8.2f s wall %8.2f s CPU %8.0f MiB' % (what, r[1], r[2], r[3] / 1024))


def build_id(path):
    out = subprocess.run(['readelf', '-n', path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True).stdout
    return next((l.split()[-1] for l in out.splitlines() if 'Build ID:' in l), None)


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def modules_part(cppctl, src, n, tmp):
    print('%d modules, each stripped, their debug files on a local debuginfod:' % n)
    bindir, served = os.path.join(tmp, 'bin'), os.path.join(tmp, 'served')
    os.makedirs(bindir)
    os.makedirs(served)
    include = os.path.join(here, '..', 'workloads')
    exes = []
    for i in range(n):
        full, exe = os.path.join(tmp, 'full%d' % i), os.path.join(bindir, 'mod%d' % i)
        subprocess.run(['g++', '-O2', '-g', '-I', include, src, '-o', full,
                        '-Wl,--build-id=0x%032x' % (0xcafe0000 + i)], check=True)
        subprocess.run(['objcopy', '--only-keep-debug', full, os.path.join(served, 'mod%d.debug' % i)], check=True)
        subprocess.run(['strip', '--strip-all', '-o', exe, full], check=True)
        exes.append(exe)
    db = os.path.join(tmp, 'modules.db')
    script = '; '.join('"%s" 60' % e for e in exes)
    timed([cppctl, 'record', '-q', '--db', db, '-e', 'cpu-time', '--', 'sh', '-c', script])

    port = free_port()
    log = open(os.path.join(tmp, 'debuginfod.log'), 'w')
    server = subprocess.Popen(['debuginfod', '-p', str(port), '-d', os.path.join(tmp, 'dfd.sqlite'), '-F', served,
                               '-t', '0', '-g', '0'], stdout=log, stderr=subprocess.STDOUT)
    url = 'http://127.0.0.1:%d' % port
    try:
        last = build_id(os.path.join(served, 'mod%d.debug' % (n - 1)))
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen('%s/buildid/%s/debuginfo' % (url, last), timeout=5) as r:
                    if r.status == 200:
                        break
            except Exception:
                time.sleep(0.3)
        env = {'DEBUGINFOD_URLS': url, 'DEBUGINFOD_CACHE_PATH': os.path.join(tmp, 'cache')}
        view = [cppctl, 'functions', '--db', db, '-t', '0.01']
        report('view as stored (no naming)', timed(view, {'CPPD_NO_LATE_NAMES': '1'}))
        report('view, no server: each module looked for locally', timed(view))
        report('view, cold: %d fetches, named as loaded' % n, timed(view, env))
        report('view, warm: the client cache, named as loaded', timed(view, env))
        out = timed([cppctl, 'symbolize', '--db', db], env)
        report('symbolize, warm', out)
        print('  ' + out[0].strip().replace('\n', '\n  '))
        report('view after symbolize, no server', timed(view))
    finally:
        server.terminate()
        server.wait()
        log.close()


def big_part(cppctl, frames, tmp):
    print('symbolize over %d frames stored as addresses (one stack each), debug file in --debug-dir:' % frames)
    full, exe = os.path.join(tmp, 'big-full'), os.path.join(tmp, 'bigbin', 'big')
    os.makedirs(os.path.dirname(exe))
    shutil.copy(cppctl, full)
    bid = build_id(full)
    if not bid:
        print('  skipped: cppctl has no build id')
        return
    root = os.path.join(tmp, 'debug-root')
    os.makedirs(os.path.join(root, '.build-id', bid[:2]))
    subprocess.run(['objcopy', '--only-keep-debug', full,
                    os.path.join(root, '.build-id', bid[:2], bid[2:] + '.debug')], check=True)
    subprocess.run(['strip', '--strip-all', '-o', exe, full], check=True)
    text = [l.split() for l in subprocess.run(['readelf', '-SW', full], stdout=subprocess.PIPE,
                                              text=True).stdout.splitlines() if ' .text ' in l]
    f = text[0][text[0].index('.text') + 1:]
    start, size = int(f[1], 16), int(f[4], 16)

    folded, db = os.path.join(tmp, 'big.folded'), os.path.join(tmp, 'big.db')
    with open(folded, 'w') as out:
        out.write('main 1\n')
    timed([cppctl, 'import', '--folded', folded, '--db', db, '--resource', 'cpu-time'])
    c = sqlite3.connect(db)
    t0 = time.monotonic()
    with c:
        thread, = c.execute('SELECT id FROM thread LIMIT 1').fetchone()
        resource, = c.execute("SELECT id FROM resource WHERE name = 'cpu-time'").fetchone()
        main_frame, = c.execute('SELECT id FROM frame LIMIT 1').fetchone()
        c.execute('INSERT INTO module (path, build_id) VALUES (?, ?)', (exe, bid))
        module, = c.execute('SELECT max(id) FROM module').fetchone()
        root_stack, = c.execute('SELECT id FROM stack WHERE parent_id IS NULL LIMIT 1').fetchone()
        step = max(1, size // frames)
        addrs = [start + i * step for i in range(frames)]
        c.executemany('INSERT INTO function (name, module_id, unknown) VALUES (?, ?, 1)',
                      (('big+0x%x' % a, module) for a in addrs))
        first_fn, = c.execute('SELECT min(id) FROM function WHERE module_id = ?', (module,)).fetchone()
        c.execute('INSERT INTO frame (function_id) SELECT id FROM function WHERE module_id = ? ORDER BY id', (module,))
        first_fr, = c.execute('SELECT min(id) FROM frame WHERE function_id >= ?', (first_fn,)).fetchone()
        c.execute('INSERT INTO stack (parent_id, frame_id, depth) SELECT ?, id, 2 FROM frame WHERE id >= ? '
                  'ORDER BY id', (root_stack, first_fr))
        c.execute('INSERT INTO sample (resource_id, bucket, thread_id, stack_id, hits, samples, hits_squared) '
                  'SELECT ?, 0, ?, id, 1, 1, 1 FROM stack WHERE parent_id = ?', (resource, thread, root_stack))
    c.close()
    print('  (store made in %.1f s, %.0f MiB)' % (time.monotonic() - t0, os.path.getsize(db) / 2**20))
    view = [cppctl, 'functions', '--db', db, '-t', '0.01']
    report('view as stored (no naming)', timed(view, {'CPPD_NO_LATE_NAMES': '1'}))
    report('view with --debug-dir: named as loaded', timed(view + ['--debug-dir', root]))
    out = timed([cppctl, 'symbolize', '--db', db, '--debug-dir', root, '--no-debuginfod'])
    report('symbolize', out)
    print('  ' + out[0].strip().replace('\n', '\n  '))
    report('view after symbolize', timed(view))
    report('symbolize again (nothing to name)',
           timed([cppctl, 'symbolize', '--db', db, '--debug-dir', root, '--no-debuginfod']))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('build', nargs='?', default='build')
    ap.add_argument('--modules', type=int, default=16)
    ap.add_argument('--frames', type=int, default=1_000_000)
    ap.add_argument('--quick', action='store_true', help='3 modules, 10,000 frames: a smoke test')
    a = ap.parse_args()
    if a.quick:
        a.modules, a.frames = 3, 10_000
    cppctl = os.path.abspath(os.path.join(a.build, 'client', 'cppctl'))
    src = os.path.join(here, '..', 'workloads', 'cxxnames.cpp')
    with tempfile.TemporaryDirectory(prefix='cppd-bench-names-') as tmp:
        if os.geteuid() != 0 or not shutil.which('debuginfod') or not shutil.which('g++'):
            print('modules part skipped: needs root (perf events), g++ and debuginfod')
        else:
            modules_part(cppctl, src, a.modules, tmp)
        big_part(cppctl, a.frames, tmp)


main()
