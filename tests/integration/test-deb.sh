#!/bin/bash
# The Debian package: packaging/build-deb builds it from this tree, lintian finds no error
# (warnings are listed), and its contents, unpacked into a throwaway root, are what a host needs:
# the programs run, the units, sysusers, tmpfiles and configuration files are in place, and its
# dependencies name the libraries the programs link.
# Usage: test-deb.sh SOURCE_DIR
set -u
here=$(dirname "$0")
. "$here/tap.sh"
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for tool in dpkg-buildpackage dh lintian; do
        command -v "$tool" > /dev/null || skip_all "$tool is not installed (packaging/install-deps installs it)"
done

"$src/packaging/build-deb" "$tmp/out" > "$tmp/build.log" 2>&1
ok $? "packaging/build-deb builds the package"
deb=$(ls "$tmp"/out/cppd_*.deb 2> /dev/null | head -1)
[ -n "$deb" ]
ok $? "a cppd_*.deb"

lintian --tag-display-limit 0 "$deb" > "$tmp/lintian" 2>&1
sed 's/^/# /' "$tmp/lintian" | grep -v "running with root privileges"
! grep -q "^E: " "$tmp/lintian"
ok $? "lintian: no errors"
! grep -q "^W: " "$tmp/lintian"
ok $? "lintian: no warnings"

root=$tmp/root
dpkg-deb -x "$deb" "$root"
ok $? "unpacked into a throwaway root"
for f in usr/sbin/cppd usr/bin/cppctl usr/lib/systemd/system/cppd.service usr/lib/systemd/system/cppd.socket \
         usr/lib/sysusers.d/cppd.conf usr/lib/tmpfiles.d/cppd.conf etc/cppd/cppd.conf \
         usr/share/man/man1/cppctl.1.gz usr/share/man/man8/cppd.8.gz usr/share/man/man5/cppd.conf.5.gz \
         usr/share/bash-completion/completions/cppctl \
         "usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/cppd/cppd_sql.so"; do
        [ -f "$root/$f" ]
        ok $? "/$f"
done
"$root/usr/bin/cppctl" --version | grep -q "^cppctl 0"
ok $? "the packaged cppctl runs"
"$root/usr/sbin/cppd" --help > /dev/null
ok $? "the packaged cppd runs"
dpkg-deb -f "$deb" Depends > "$tmp/depends"
for lib in libsqlite3-0 libsystemd0 libdw1 libelf1 libpfm4 libedit2 libprotobuf-c1 zlib1g; do
        grep -q "$lib" "$tmp/depends"
        ok $? "depends on $lib"
done
grep -q "^/etc/cppd/cppd.conf$" <(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)
ok $? "/etc/cppd/cppd.conf is a conffile: local edits survive upgrades"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./postinst | grep -q "systemd-sysusers cppd.conf"
ok $? "postinst makes the cppd user from the sysusers file"
done_testing
