#!/bin/bash
# The systemd units of packaging/: systemd-analyze verify finds nothing to say about them, and
# the service's exposure (systemd-analyze security --offline) stays "OK" (below 3.0; the
# threshold argument is in tenths). TAP output.
# Usage: test-units.sh CPPD
set -u
here=$(dirname "$0")
. "$here/tap.sh"
cppd=$1
packaging=$here/../../packaging
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v systemd-analyze > /dev/null || skip_all "systemd-analyze is not installed"

# verify checks that ExecStart exists: point it at the built daemon.
sed "s|/usr/sbin/cppd|$(realpath "$cppd")|" "$packaging/cppd.service" > "$tmp/cppd.service"
cp "$packaging/cppd.socket" "$tmp/"
out=$(cd "$tmp" && systemd-analyze verify --man=no ./cppd.service ./cppd.socket 2>&1)
is "$?:$out" "0:" "systemd-analyze verify: no errors and no warnings"

out=$(cd "$tmp" && systemd-analyze security --offline=yes --threshold=29 ./cppd.service 2>&1)
ok $? "systemd-analyze security --offline: exposure below 3.0 (OK)"
score=$(echo "$out" | sed -n 's/.*Overall exposure level for cppd.service: \([0-9.]*\).*/\1/p')
echo "# exposure score: $score"
test -n "$score"
ok $? "the score is reported ($score)"

"$cppd" --help | grep -q "^Usage: cppd"
ok $? "cppd --help"
"$cppd" --config /nonexistent/dir/x.conf --frobnicate > /dev/null 2>&1
is $? 2 "cppd with a bad option: exit 2"
printf '[collect]\nresources = cpu-tme\n' > "$tmp/bad.conf"
"$cppd" --config "$tmp/bad.conf" 2> "$tmp/err"
is $? 1 "cppd with a bad configuration: exit 1"
grep -q "bad.conf:2: unknown resource 'cpu-tme'" "$tmp/err"
ok $? "naming the file, the line and the problem"

done_testing
