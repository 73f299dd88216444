#!/bin/bash
# The man pages and their one source. md2man.py turns a fixed page using every construct into
# exactly the expected roff; each built page renders with groff without a single warning. And
# the pages keep up with the programs, so that a command, option, resource or configuration key
# added without its documentation fails here: cppctl(1) has a section for every command of
# cppctl's table, naming every option of that command's --help (or the section of a command
# whose options it takes does, or for the report commands REPORT OPTIONS), and every resource of --list-resources; cppd(8) names every option of
# cppd --help; cppd.conf(5) has every key daemon/config.c reads, in its section, with its default.
# Usage: test-man.sh CPPCTL CPPD SOURCE_DIR DATA_DIR EXPECTED_DIR PAGE...
set -u
here=$(dirname "$0")
. "$here/tap.sh"
cppctl=$1
cppd=$2
src=$3
data=$4
expected=$5
shift 5
pages=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v groff > /dev/null || skip_all "groff is not installed (groff-base)"

python3 "$src/doc/md2man.py" "$data/sample.7.md" "$tmp/sample.7" 1.2
same_file "$tmp/sample.7" "$expected/sample.7" "md2man.py: every construct, exact roff"

page_of() {     # page_of NAME.SECTION: the built page
        local p
        for p in "${pages[@]}"; do
                [ "$(basename "$p")" = "$1" ] && echo "$p"
        done
}
for page in "${pages[@]}"; do
        name=$(basename "$page")
        warnings=$(LC_ALL=C.UTF-8 groff -man -ww -z -K utf8 "$page" 2>&1)
        is "$warnings" "" "$name renders without warnings"
        grep -q '^\.SH NAME' "$page" && grep -q '^\.SH SEE ALSO' "$page"
        ok $? "$name has NAME and SEE ALSO"
done

# cppctl(1): a section per command, each option in it.
md=$src/doc/cppctl.1.md
section() {     # section MARKDOWN HEADING-REGEX: the lines under the headings that match
        awk -v re="$2" '/^##/ { in_section = ($0 ~ re) } in_section' "$1"
}
options() {     # options HELP-FILE: the long options of its option lines and usage lines
        {
                sed -nE 's/^\s+(-[A-Za-z0-9], )?(--[a-z][A-Za-z-]*).*/\2/p' "$1"
                sed -n '/^Usage:/,/^$/p' "$1" | grep -oE -- '--[a-z][A-Za-z-]*'
        } | grep -v -- '^--help$' | sort -u
}
commands=$("$cppctl" --help | sed -n '/^Commands:/,/^$/p' | awk 'NF > 1 { print $1 }')
[ "$(echo "$commands" | wc -l)" -ge 10 ]
ok $? "cppctl --help lists its commands"
section "$md" '^## REPORT OPTIONS$' > "$tmp/report"
for c in $commands; do
        heading="^### (.*, )?$c(,.*)?$"
        section "$md" "$heading" > "$tmp/section"
        [ -s "$tmp/section" ]
        ok $? "cppctl(1) has a section for '$c'"
        # "It takes record's options": those are documented in record's section.
        for other in $(grep -oE "takes [a-z]+'s options" "$tmp/section" | awk '{ sub(/.s$/, "", $2); print $2 }'); do
                section "$md" "^### (.*, )?$other(,.*)?$" >> "$tmp/section"
        done
        "$cppctl" "$c" --help > "$tmp/help" 2>&1
        missing=()
        for o in $(options "$tmp/help"); do
                re="$o([^A-Za-z-]|$)"
                grep -qE -- "$re" "$tmp/section" && continue
                grep -q -- '--threshold' "$tmp/help" && grep -qE -- "$re" "$tmp/report" && continue
                missing+=("$o")
        done
        is "${missing[*]}" "" "cppctl(1) documents each option of cppctl $c --help"
done
resources=$("$cppctl" record --list-resources | awk '/^  [a-z]/ { print $1 }')
[ -n "$resources" ]
ok $? "cppctl record --list-resources lists resources"
section "$md" '^## RESOURCES$' > "$tmp/resources"
missing=()
for r in $resources; do
        grep -q "\`$r\`" "$tmp/resources" || missing+=("$r")
done
is "${missing[*]}" "" "cppctl(1) RESOURCES has each resource"

# cppd(8): every option.
"$cppd" --help > "$tmp/cppd-help"
missing=()
for o in $(options "$tmp/cppd-help"); do
        section "$src/doc/cppd.8.md" '^## OPTIONS$' | grep -qE -- "$o([^A-Za-z-]|$)" || missing+=("$o")
done
is "${missing[*]}" "" "cppd(8) documents each option of cppd --help"

# cppd.conf(5): every key the daemon reads, under its section, with a default.
conf_page=$(page_of cppd.conf.5)
keys=$(grep -oE 'KEY\("[a-z]+", "[a-z_]+"\)' "$src/daemon/config.c" | sed -E 's/KEY\("([a-z]+)", "([a-z_]+)"\)/\1 \2/')
[ "$(echo "$keys" | wc -l)" -ge 10 ]
ok $? "daemon/config.c reads its keys through KEY()"
missing=()
while read -r sect key; do
        awk -v s=".SH \"[$sect]\"" '/^\.SH/ { in_section = ($0 == s) } in_section' "$conf_page" |
                grep -qE "^\\\\fB$key\\\\fR = [^ ]" || missing+=("[$sect] $key")
done <<< "$keys"
is "${missing[*]}" "" "cppd.conf(5) has each key of daemon/config.c in its section, with its default"

done_testing
