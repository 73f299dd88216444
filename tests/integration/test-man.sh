#!/bin/bash
# The man pages: each renders with groff without a single warning, has its NAME and SEE ALSO,
# and cppctl(1) has a section for every command of cppctl's command table, so that a command
# added without its documentation fails here.
# Usage: test-man.sh CPPCTL PAGE... CPPCTL_MD
set -u
here=$(dirname "$0")
. "$here/tap.sh"
cppctl=$1
shift
md=${!#}
pages=("${@:1:$#-1}")

command -v groff > /dev/null || skip_all "groff is not installed"
for page in "${pages[@]}"; do
        name=$(basename "$page")
        warnings=$(LC_ALL=C.UTF-8 groff -man -ww -z -K utf8 "$page" 2>&1)
        is "$warnings" "" "$name renders without warnings"
        grep -q '^\.SH NAME' "$page" && grep -q '^\.SH SEE ALSO' "$page"
        ok $? "$name has NAME and SEE ALSO"
done
commands=$("$cppctl" --help | sed -n '/^Commands:/,/^$/p' | awk 'NF > 1 { print $1 }')
[ -n "$commands" ]
ok $? "cppctl --help lists its commands"
for c in $commands; do
        grep -Eq "^### (.*[ ,])?$c(,.*)?$" "$md"
        ok $? "cppctl(1) documents '$c'"
done
grep -q "^\.SH \"\[collect\]\"" "${pages[@]}" && grep -q 'flush_interval' "${pages[@]}"
ok $? "cppd.conf(5) has every section and key of the configuration file"

done_testing
