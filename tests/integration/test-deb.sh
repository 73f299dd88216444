#!/bin/bash
# The Debian package: packaging/build-deb builds it from this tree, lintian finds no error
# (warnings are listed and fail too), its contents are what a host needs (the programs run, the
# SQLite module loads into the stock sqlite3, the units, sysusers, tmpfiles and configuration
# files are in place, the man pages render), and dpkg installs it into a throwaway root: the
# maintainer scripts, run there with DPKG_ROOT, make the cppd user and its 0750 store directory
# there and touch nothing of this machine; a purge leaves nothing of the package behind.
# Usage: test-deb.sh SOURCE_DIR DATA_DIR
set -u
here=$(dirname "$0")
. "$here/tap.sh"
src=$1
data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for tool in dpkg-buildpackage dh lintian; do
        command -v "$tool" > /dev/null || skip_all "$tool is not installed (packaging/install-deps installs it)"
done
skip() {        # skip DESCRIPTION REASON
        tap_n=$((tap_n + 1))
        echo "ok $tap_n - $1 # SKIP $2"
}

"$src/packaging/build-deb" "$tmp/out" > "$tmp/build.log" 2>&1
ok $? "packaging/build-deb builds the package"
sed 's/^/# /' "$tmp/build.log" | tail -5
deb=$(ls "$tmp"/out/cppd_*.deb 2> /dev/null | head -1)
[ -n "$deb" ]
ok $? "a cppd_*.deb"

lintian --tag-display-limit 0 "$deb" > "$tmp/lintian" 2>&1
grep -v "running with root privileges" "$tmp/lintian" | sed 's/^/# lintian: /'
! grep -q "^E: " "$tmp/lintian"
ok $? "lintian: no errors"
! grep -q "^W: " "$tmp/lintian"
ok $? "lintian: no warnings"

# The contents, unpacked.
x=$tmp/x
dpkg-deb -x "$deb" "$x"
ok $? "unpacked"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
unitdir=$(pkg-config --variable=systemdsystemunitdir systemd)
unitdir=${unitdir#/}
expected=(usr/sbin/cppd usr/bin/cppctl "usr/lib/$multiarch/cppd/cppd_sql.so" "usr/lib/$multiarch/cppd/libcppd-alloc.so"
          "$unitdir/cppd.service" "$unitdir/cppd.socket"
          usr/lib/sysusers.d/cppd.conf usr/lib/tmpfiles.d/cppd.conf etc/cppd/cppd.conf
          usr/share/man/man1/cppctl.1.gz usr/share/man/man8/cppd.8.gz usr/share/man/man5/cppd.conf.5.gz
          usr/share/bash-completion/completions/cppctl
          usr/share/doc/cppd/copyright usr/share/doc/cppd/changelog.gz usr/share/lintian/overrides/cppd)
for f in "${expected[@]}"; do
        [ -f "$x/$f" ]
        ok $? "/$f"
done
(cd "$x" && find . -type f | sed 's|^\./||' | sort) > "$tmp/files"
printf '%s\n' "${expected[@]}" | sort > "$tmp/expected"
is "$(comm -23 "$tmp/files" "$tmp/expected" | tr '\n' ' ')" "" "no file beyond those"
is "$(grep '^ExecStart=' "$x/$unitdir/cppd.service")" "ExecStart=/usr/sbin/cppd" "the service starts the packaged cppd"
is "$("$x/usr/bin/cppctl" --version)" "cppctl 0.1.0" "the packaged cppctl runs"
is "$("$x/usr/sbin/cppd" --version)" "cppd 0.1.0" "the packaged cppd runs"
for page in "$x"/usr/share/man/*/*.gz; do
        is "$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 > /dev/null)" "" "man ${page##*/}: no warnings"
done

"$x/usr/bin/cppctl" import --folded "$data/forms.folded" --db "$tmp/f.db" --resource real-time --period 20 > /dev/null
ok $? "the packaged cppctl imports into a store"
if command -v sqlite3 > /dev/null; then
        got=$(sqlite3 -bail "$tmp/f.db" ".load $x/usr/lib/$multiarch/cppd/cppd_sql" \
                "SELECT leaf, hits FROM functions('real-time') ORDER BY hits DESC, leaf LIMIT 3")
        is "$got" $'db_read_record|614\nmain|614\ndb_get_property|530' "the module gives sqlite3 the profiles"
else
        skip "the module gives sqlite3 the profiles" "no sqlite3"
fi

dpkg-deb -f "$deb" Depends > "$tmp/depends"
for dep in libsqlite3-0 libsystemd0 libdw1 libelf1 libpfm4 libedit2 libprotobuf-c1 zlib1g "systemd | systemd-standalone-sysusers"; do
        grep -qF "$dep" "$tmp/depends"
        ok $? "depends on $dep"
done
is "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" "/etc/cppd/cppd.conf" \
        "/etc/cppd/cppd.conf is the conffile: local edits survive upgrades"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./postinst > "$tmp/postinst"
grep -q 'systemd-sysusers ${DPKG_ROOT:+--root="$DPKG_ROOT"} cppd.conf' "$tmp/postinst"
ok $? "postinst makes the cppd user from the sysusers file"

# Installed by dpkg into a throwaway root: the maintainer scripts run outside it (there is no
# shell in it) with DPKG_ROOT set, as dpkg does for --force-script-chrootless.
root=$tmp/root
if [ "$(id -u)" -ne 0 ]; then
        skip "dpkg --root install" "needs root"
        done_testing
        exit
fi
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/etc"
touch "$root/var/lib/dpkg/status"
host_passwd=$(sha256sum /etc/passwd)
dpkg_root() {
        dpkg --root="$root" --log=/dev/null --force-script-chrootless --force-depends "$@" > "$tmp/dpkg.log" 2>&1
        local r=$?
        grep -v "depends on\|not installed\|dependency problems\|^ " "$tmp/dpkg.log" | sed 's/^/# dpkg: /'
        return $r
}
dpkg_root -i "$deb"
ok $? "dpkg --root installs it"
is "$(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Status}' cppd)" "install ok installed" \
        "dpkg there says: installed"
grep -q '^cppd:x:[0-9]*:[0-9]*:Call path profiler:/var/lib/cppd:/usr/sbin/nologin$' "$root/etc/passwd"
ok $? "the system user cppd, there"
grep -q '^cppd:x:[0-9]*:$' "$root/etc/group"
ok $? "the group cppd, there"
cppd_uid=$(awk -F: '$1 == "cppd" { print $3 }' "$root/etc/passwd")
is "$(stat -c '%a %u' "$root/var/lib/cppd" 2> /dev/null)" "750 $cppd_uid" "/var/lib/cppd: 0750, owned by cppd"
is "$(sha256sum /etc/passwd)" "$host_passwd" "this machine's users untouched"
[ -e "$root/var/lib/systemd/deb-systemd-helper-enabled/cppd.service.dsh-also" ]
ok $? "the units' state is kept there"
is "$(find "$root/etc/systemd" -name 'cppd.*' 2> /dev/null)" "" "no unit enabled: that is the administrator's decision"
if ! dpkg -s cppd > /dev/null 2>&1; then
        is "$(find /var/lib/systemd/deb-systemd-helper-enabled -name 'cppd.*' 2> /dev/null)" "" \
                "this machine's systemd state untouched"
fi
dpkg_root --purge cppd
ok $? "dpkg --root purges it"
is "$(cd "$root" && find . -not -type d | grep -v '^\./var/lib/dpkg/\|^\./etc/\(passwd\|group\|shadow\|gshadow\|\.pwd\.lock\)$' | sort | tr '\n' ' ')" \
        "" "nothing of the package left but the user (never removed) and the store's directory"

done_testing
