#!/bin/bash
# Checks that need a bigger machine than a 2-vCPU VM (the "device" some sessions are lent: 16
# CPUs, its own Python and PyTorch; its libraries differ from Debian's). Two steps:
#   tests/bench/device-checks.sh bundle [BUILD]   here: build-device/ with cppd, cppctl, two
#                                                 workloads, every library they link and ld.so
#   tests/bench/device-checks.sh run               there (as root; carry build-device/): prints
#     1. issue 27: the daemon (cpu-time/1, syscalls/10) beside 16 syscallstorm processes and one
#        CPU-bound program: that program's cpu-time hits against its 1000 ms (3 sd bar), losses
#     2. issue 29: Python frames with the machine's own CPython (its version's layout: 3.12 and
#        3.13 are untested on Debian 12) and, if it has one, PyTorch
set -u
cd "$(dirname "$0")/../.."
B=$PWD/build-device
if [ "${1:-}" = bundle ]; then
        BUILD=${2:-build}
        mkdir -p $B/lib
        cp $BUILD/daemon/cppd $BUILD/client/cppctl $BUILD/tests/workloads/cycles-nofp \
                $BUILD/tests/workloads/syscallstorm-nofp $B/
        for f in $BUILD/daemon/cppd $BUILD/client/cppctl; do ldd $f | awk '/=>/ {print $3}'; done | sort -u |
                xargs -I{} cp -L {} $B/lib/
        cp -L /lib64/ld-linux-x86-64.so.2 $B/lib/
        du -sh $B
        exit 0
fi
O=${OUT:-/tmp/device-out}
mkdir -p $O
run() { "$B/lib/ld-linux-x86-64.so.2" --library-path "$B/lib" "$@"; }
exec > >(tee $O/log.txt) 2>&1
echo "== machine"; nproc; uname -r; id; cat /proc/sys/kernel/perf_event_paranoid; ls -l /sys/kernel/btf/vmlinux
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
T=/tmp/device-st; rm -rf $T; mkdir -p $T
printf '[collect]\nresources = cpu-time/1, syscalls/10\nring_size = 4M\nqueue_size = 64M\n[store]\npath = %s/d.db\nflush_interval = 500ms\n[control]\nsocket = %s/d.sock\n' $T $T > $T/c.conf
echo "== storm"
run $B/cppd -c $T/c.conf > $T/cppd.log 2>&1 &
D=$!
for i in $(seq 60); do [ -S $T/d.sock ] && break; sleep 0.5; done
sleep 2
run $B/cycles-nofp spin 1000 > /dev/null &
S=$!
P=""
for i in $(seq 16); do run $B/syscallstorm-nofp 3000 > /dev/null & P="$P $!"; done
wait $S $P
python3 - $T/d.sock <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(120)
s.sendall(b'flush\n'); print('flush:', s.recv(4096).decode().strip())
PY
echo "cppd CPU: $(awk '{print ($14 + $15) / 100 " s"}' /proc/$D/stat)"
kill -TERM $D; wait $D
python3 - $T/d.db $S <<'PY'
import math, sqlite3, sys
con = sqlite3.connect(sys.argv[1]); spin = int(sys.argv[2])
q = lambda sql, *a: con.execute(sql, a).fetchall()
print('run_resource (name, lost, sampling, thinned):', q("SELECT r.name, rr.lost, rr.sampling, rr.thinned FROM run_resource rr JOIN resource r ON r.id = rr.resource_id"))
h, sq = q("SELECT ifnull(sum(s.hits), 0), ifnull(sum(s.hits_squared), 0) FROM sample s JOIN resource r ON r.id = s.resource_id JOIN thread t ON t.id = s.thread_id JOIN process p ON p.id = t.process_id WHERE p.pid = ? AND r.name = 'cpu-time'", spin)[0]
bar = 3 * math.sqrt(max(sq, 1000)) + 50
print('the CPU-bound program: %d hits of 1 ms for 1000 ms of CPU time; bar %.0f; within: %s' % (h, bar, abs(h - 1000) <= bar))
PY
echo "== python"
PY=$(command -v python3)
$PY -c 'import sys; print(sys.version)'
cat > $T/w.py <<'W'
import sys, time
def leaf(n):
    s = 0
    for i in range(n): s += i
    return s
def alpha():
    for _ in range(30): leaf(100000)
def beta():
    for _ in range(20): leaf(100000)
def rec(d):
    if d == 0: return alpha()
    return rec(d - 1)
t = time.time()
while time.time() - t < float(sys.argv[1]):
    rec(5); beta()
W
run $B/cppctl record --db $T/p.db -- $PY $T/w.py 3 2>&1 | head -6
run $B/cppctl functions --db $T/p.db -t 0.1 2>&1 | head -30
if $PY -c 'import torch' 2>/dev/null; then
        printf 'import torch, time\ndef matmuls(n):\n    a = torch.randn(512, 512); b = torch.randn(512, 512)\n    for _ in range(n): c = a @ b\ndef main():\n    t = time.time()\n    while time.time() - t < 3: matmuls(20)\nmain()\n' > $T/t.py
        run $B/cppctl record --db $T/t.db -- $PY $T/t.py 2>&1 | head -6
        run $B/cppctl functions --db $T/t.db -t 0.05 2>&1 | head -30
fi
cp $T/*.db $T/cppd.log $O/ 2>/dev/null
echo "== done"
