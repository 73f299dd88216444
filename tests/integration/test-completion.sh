#!/bin/bash
# Bash completion for cppctl, driven as bash drives it: COMP_WORDS and COMP_CWORD set, the
# function called, COMPREPLY checked. Commands, options read from --help (and not the options of
# other commands or tools its prose names), the store's resources and function names (quoted,
# never expanded), formats, file names.
# Usage: test-completion.sh CPPCTL COMPLETION_FILE DATA_DIR
set -u
here=$(dirname "$0")
. "$here/tap.sh"
cppctl=$(realpath "$1")
completion=$2
data=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$cppctl" import --folded "$data/forms.folded" --db "$tmp/f.db" --resource real-time --period 20 > /dev/null
ok $? "a fixed store"
mkdir -p "$tmp/bin"
ln -s "$cppctl" "$tmp/bin/cppctl"
export PATH="$tmp/bin:$PATH"
# shellcheck source=/dev/null
. "$completion"

complete_words() {      # complete_words WORD... : the completions of the last word, sorted, one line
        COMP_WORDS=("$@")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMPREPLY=()
        _cppctl
        printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}

is "$(complete_words cppctl fu)" "functions" "a command from its first letters"
is "$(complete_words cppctl d)" "detach diff down" "several commands"
is "$(complete_words cppctl down --db "$tmp/f.db" --ro)" "--root" "an option of the command, from its --help"
is "$(complete_words cppctl merge --ro)" "" "not one the command lacks"
is "$(complete_words cppctl down --db "$tmp/f.db" --root db_g)" "db_get_property" "a function name of the store"
is "$(complete_words cppctl graph --db "$tmp/f.db" form_)" "form_NJ_1040 form_US_1040" "graph's argument: function names"
is "$(complete_words cppctl functions --db "$tmp/f.db" -r re)" "real-time" "a resource of the store"
is "$(complete_words cppctl record -e page)" "page-faults" "a resource to record, from cppctl's table"
is "$(complete_words cppctl tree --format fl)" "flame" "a format"
is "$(complete_words cppctl sql --format j)" "json" "sql's formats"
is "$(complete_words cppctl down --by l)" "line" "--by"
CPPD_DB=$tmp/f.db
is "$(complete_words cppctl up --root db_r)" "db_read_record" "the store from \$CPPD_DB"
unset CPPD_DB
is "$(complete_words cppctl merge --h)" "--help" "merge: not --host, which its help names in prose only"
is "$(complete_words cppctl import --c)" "" "import: not perf's --call-graph, named in its help"
is "$(complete_words cppctl record --lis)" "--list-resources" "record: --list-resources, named in -e's help"
is "$(complete_words cppctl diff --base-u)" "--base-unit --base-until" "diff: each --base-NAME its help names"
is "$(complete_words cppctl diff --view d)" "down" "--view"
touch "$tmp/store one.db"
is "$(cd "$tmp" && complete_words cppctl functions --db sto)" "store one.db" "a file after --db"

# Names from a store come from whatever program was profiled: they are offered quoted for the
# command line and never run, though compgen -W would expand them.
printf '%s\n' 'main;$(touch PWNED);f 3' 'main;a b 2' > "$tmp/odd.folded"
"$cppctl" import --folded "$tmp/odd.folded" --db "$tmp/odd.db" --resource cpu-time > /dev/null
cd "$tmp"
is "$(complete_words cppctl down --db odd.db --root '$')" '\$\(touch\ PWNED\)' "a name with \$(...): quoted"
[ ! -e PWNED ]
ok $? "and not run"
is "$(complete_words cppctl down --db odd.db a)" 'a\ b' "a name with a space: quoted"
cd - > /dev/null

done_testing
