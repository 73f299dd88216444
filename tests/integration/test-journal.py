#!/usr/bin/env python3
"""cppd logs to the journal, with fields, when it runs under a service manager. journald does not
run here, so the test takes its place: in a private mount namespace it mounts a tmpfs on
/run/systemd and listens on /run/systemd/journal/socket, then starts cppd as systemd would
(INVOCATION_ID set) with a resource this machine may not count, and a session. TAP output.

Usage: test-journal.py CPPD CPPCTL WORKLOADS_DIR"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from tap import done, ok, skip_all

cppd, cppctl, workloads = sys.argv[1], sys.argv[2], sys.argv[3]


def parse_native(data):
    """Fields of a journal native-protocol datagram (KEY=value lines, or KEY\\n<u64 len>value\\n)."""
    fields, i = {}, 0
    while i < len(data):
        nl = data.index(b'\n', i)
        line = data[i:nl]
        if b'=' in line:
            k, v = line.split(b'=', 1)
            fields[k.decode()] = v.decode(errors='replace')
            i = nl + 1
        else:
            n = int.from_bytes(data[nl + 1:nl + 9], 'little')
            fields[line.decode()] = data[nl + 9:nl + 9 + n].decode(errors='replace')
            i = nl + 9 + n + 1
    return fields


def inner():
    subprocess.run(['mount', '--make-rprivate', '/'], check=True)
    os.makedirs('/run/systemd', exist_ok=True)
    subprocess.run(['mount', '-t', 'tmpfs', 'tmpfs', '/run/systemd'], check=True)
    os.makedirs('/run/systemd/journal')
    journal = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    journal.bind('/run/systemd/journal/socket')
    journal.settimeout(0.2)
    tmp = tempfile.mkdtemp()
    conf = os.path.join(tmp, 'cppd.conf')
    with open(conf, 'w') as f:
        f.write('[collect]\nresources = cpu-time/10, fp-assists\n[store]\npath = %s/s.db\n'
                '[control]\nsocket = %s/s.sock\n' % (tmp, tmp))
    env = dict(os.environ, INVOCATION_ID='0123456789abcdef0123456789abcdef')
    env.pop('NOTIFY_SOCKET', None)
    d = subprocess.Popen([cppd, '-c', conf], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    entries = []

    def collect(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                entries.append(parse_native(journal.recv(65536)))
            except socket.timeout:
                pass

    collect(2)
    target = subprocess.Popen([os.path.join(workloads, 'recursive-nofp'), '12', '100'])
    subprocess.run([cppctl, 'attach', str(target.pid), '--duration', '0.3', '--socket', os.path.join(tmp, 's.sock'),
                    '-q'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    target.kill()
    target.wait()
    collect(1)
    d.terminate()
    _, err = d.communicate()
    collect(0.5)

    messages = [e.get('MESSAGE', '') for e in entries]
    ok(any('Profiling the system' in m for m in messages), 'cppd logs to the journal under a service manager',
       messages)
    ok(err.strip() == b'', 'and not to stderr', err.decode(errors='replace'))
    ok(all('PRIORITY' in e and 'CODE_FILE' in e and 'CODE_LINE' in e for e in entries),
       'entries carry PRIORITY and CODE_FILE/CODE_LINE')
    supported = any('fp-assists' in m and 'not counted' not in m for m in messages)
    resource = [e for e in entries if e.get('CPPD_RESOURCE') == 'fp-assists']
    ok(supported or (resource and resource[0].get('PRIORITY') == '4'),
       'an uncountable resource: a warning with the field CPPD_RESOURCE=fp-assists', entries)
    ok(any(e.get('CPPD_PID') == str(target.pid) for e in entries), 'a session: the field CPPD_PID', entries)
    ok(any(m.startswith('Run ') and 'ended: cpu-time' in m for m in messages), 'the last words at SIGTERM reach the journal too', messages)
    shutil.rmtree(tmp)


def main():
    if len(sys.argv) > 4 and sys.argv[4] == '--inner':
        inner()
    else:
        if os.geteuid() != 0 or not shutil.which('unshare'):
            skip_all('needs root and unshare(1) for a private mount namespace')
        p = subprocess.run(['unshare', '-m', sys.executable, __file__] + sys.argv[1:4] + ['--inner'])
        return p.returncode
    return done()


if __name__ == '__main__':
    sys.exit(main())
