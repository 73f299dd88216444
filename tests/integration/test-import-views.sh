#!/bin/bash
# Every view of a store of thousands of distinct stacks, imported through the bulk path (sorted
# stacks, rows in batches: import-folded.c), against the output of the importer before it
# (commit e1820f6, which kept every stack in memory and added rows one at a time). The store
# holds a file imported twice, under two resources (the second import finds every node in the
# store), and a second file of other stacks in a later bucket, under another unit.
# The expected files were written by this script with --write and the cppctl of e1820f6; the views
# from graph --root on with the cppctl of 4956126, which loaded the tree for every view that the
# views now read from indexes laid out from the stored stacks (issue 27).
# Usage: test-import-views.sh CPPCTL GEN-FOLDED [--write]
set -u
here=$(dirname "$0")
. "$here/tap.sh"
cppctl=$(realpath "$1")    # the views run in the store's folder, so that messages name it alike
gen=$2
expected=$here/expected/import-views
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 "$gen" "$tmp/a.folded" --samples 20000 --stacks 3000 --seed 1 &&
python3 "$gen" "$tmp/b.folded" --samples 5000 --stacks 2000 --seed 2
ok $? "two folded files of 3000 and 2000 distinct stacks"
(cd "$tmp" &&
 $cppctl import --folded a.folded --db s.db --resource cpu-time --time @1700000000 --service a.service &&
 $cppctl import --folded b.folded --db s.db --resource cpu-time --time @1700000600 --service b.service &&
 $cppctl import --folded a.folded --db s.db --resource page-faults --period 10 --time @1700000000) \
        > "$tmp/imports.txt"
ok $? "imported"
if [ "${3:-}" = "--write" ]; then
        mkdir -p "$expected"
        cp "$tmp/imports.txt" "$expected/imports.txt"
fi
same_file "$tmp/imports.txt" "$expected/imports.txt" "the samples and distinct stacks each import counted"

# The views, filtered and not; the index cache off, so that every view reads the store.
i=0
while IFS= read -r view; do
        i=$((i + 1))
        # shellcheck disable=SC2086 # VIEW is words
        (cd "$tmp" && CPPD_INDEX_DIR=/dev/null/none $cppctl $view --db s.db > "view-$i.txt" 2>&1
         echo "exit $?" >> "view-$i.txt")
        [ "${3:-}" = "--write" ] && cp "$tmp/view-$i.txt" "$expected/view-$i.txt"
        same_file "$tmp/view-$i.txt" "$expected/view-$i.txt" "cppctl $view"
done <<'VIEWS'
functions -t 0.002
body -t 0
down main -t 0.005
down ui_emit_3421 -t 0
up util_parse_1593 -t 0
up main --resource page-faults
down main --resource page-faults -t 0.01
tree -t 0.005
graph -t 0.02
functions --unit b.service
body --since @1700000300 -t 0.002
functions --focus util --ignore net_read
down main --by module
tree --resource page-faults -t 0.002 --format json
graph --root util_parse_1593 -t 0
graph --since @1700000300 -t 0.01
up core_walk_1384 --since @1700000300 -t 0.001
up main --hide net_.* -t 0.005
down main --ignore db_read -t 0.002
tree --unit b.service -t 0.01
tree -t 0.0005
VIEWS

# The formats that draw the whole tree, at threshold 0 and for export, whose outputs are too big
# to keep (a flame graph of 40,000 frames is 16 MB): compared by their SHA-256 with the outputs of
# the cppctl of 91ac632, which loaded the tree for each; the pprof lines from "-r page-faults" on
# and the html lines past the first, with the cppctl of cd4de9d, which loaded the trees for them.
hashes=$expected/hashes.txt
[ "${3:-}" = "--write" ] && : > "$hashes"
while IFS= read -r view; do
        # shellcheck disable=SC2086 # VIEW is words
        got=$(cd "$tmp" && { CPPD_INDEX_DIR=/dev/null/none $cppctl $view --db s.db 2>&1; echo "exit $?"; } |
                sha256sum | cut -d' ' -f1)
        [ "${3:-}" = "--write" ] && echo "$got $view" >> "$hashes"
        want=$(awk -v view="$view" 'substr($0, index($0, " ") + 1) == view { print $1 }' "$hashes")
        is "$got" "$want" "cppctl $view (SHA-256)"
done <<'VIEWS'
tree -t 0
tree -t 0 --resource page-faults
tree -t 0 --unit b.service
tree -t 0 --format json
tree -t 0 --format json --since @1700000300
tree -t 0 --format flame
tree -t 0 --format icicle
tree -t 0 --format icicle --focus util_parse
export --format folded
export --format folded --unit a.service
export --format speedscope
export --format speedscope --hide net_.*
export --format speedscope -r cpu-time,page-faults
export --format pprof
export --format pprof --resource page-faults
export --format pprof --since @1700000300
export --format pprof -r cpu-time,page-faults
export --format pprof -r page-faults,cpu-time
export --format pprof -r page-faults,cpu-time --unit b.service
export --format pprof -r cpu-time,page-faults --hide net_.*
export --format html -r cpu-time,page-faults
export --format html -r page-faults,cpu-time --since @1700000300
export --format html
export --format html --resource page-faults --focus util_parse
VIEWS

# Several resources side by side (-r A,B and --ratio A/B), each read from its index since issue 27,
# against the cppctl of 3b74a7d, which loaded the trees. Asked again with CPPD_EXACT_NODES=0
# (the way of a store of more than 500,000 nodes: each resource at its threshold, then again with
# the rows' paths asked for), every row must be the same; only the count of paths shown nowhere
# may read "at least" a smaller number (JSON: "omitted_exact": false), never a larger one.
omitted_of() { sed -n 's/.*(\(at least \)\{0,1\}\([0-9]*\) .* not shown)$/\2/p; s/.*"omitted": \([0-9]*\).*/\1/p' "$1"; }
rows_of() { sed 's/^(\(at least \)\{0,1\}[0-9]* .* not shown)$/(omitted)/; s/"omitted": .*}$/"omitted"}/' "$1"; }
i=0
while IFS= read -r view; do
        i=$((i + 1))
        # shellcheck disable=SC2086 # VIEW is words
        (cd "$tmp" && CPPD_INDEX_DIR=/dev/null/none $cppctl $view --db s.db > "table-$i.txt" 2>&1
         echo "exit $?" >> "table-$i.txt"
         CPPD_EXACT_NODES=0 CPPD_INDEX_DIR=/dev/null/none $cppctl $view --db s.db > "rows-$i.txt" 2>&1
         echo "exit $?" >> "rows-$i.txt")
        [ "${3:-}" = "--write" ] && cp "$tmp/table-$i.txt" "$expected/table-$i.txt"
        same_file "$tmp/table-$i.txt" "$expected/table-$i.txt" "cppctl $view"
        rows_of "$tmp/rows-$i.txt" > "$tmp/rows-$i.cut"
        rows_of "$tmp/table-$i.txt" > "$tmp/table-$i.cut"
        same_file "$tmp/rows-$i.cut" "$tmp/table-$i.cut" "cppctl $view, from the rows' paths: the same rows"
        exact=$(omitted_of "$tmp/table-$i.txt") bound=$(omitted_of "$tmp/rows-$i.txt")
        [ "${bound:-0}" -le "${exact:-0}" ] && { [ -z "$exact" ] || [ -n "$bound" ]; }
        ok $? "cppctl $view, from the rows' paths: ${bound:-no} paths not shown, at most the ${exact:-no} counted"
done <<'VIEWS'
down main -r cpu-time,page-faults -t 0.005
up util_parse_1593 -r page-faults,cpu-time -t 0.002
functions -r cpu-time,page-faults -t 0.005
body -r page-faults,cpu-time --unit a.service -t 0.002
down main --ratio page-faults/cpu-time -t 0.01
down main -r cpu-time,page-faults --since @1700000300 -t 0.01 --format json
up util_parse_1593 -r cpu-time,page-faults -t 0.001 --format csv
down ui_emit_3421 -r cpu-time,page-faults -t 0
down nosuchfn -r cpu-time,page-faults
down main -r page-faults,cpu-time --hide net_.* -t 0.01 --format json
VIEWS

# The HTML report's call paths down from the heaviest outermost frame: the 20 heaviest of a big
# index are found at a threshold (profile_heaviest_index()), the rest counted "at least".
for resource in cpu-time page-faults; do
        (cd "$tmp" && CPPD_INDEX_DIR=/dev/null/none $cppctl export --format html -r "$resource" --db s.db \
                > "exact.html" &&
         CPPD_EXACT_NODES=0 CPPD_INDEX_DIR=/dev/null/none $cppctl export --format html -r "$resource" --db s.db \
                > "heaviest.html")
        ok $? "export --format html -r $resource, at threshold 0 and from the heaviest paths"
        notes='s/^<p class="note">\(At least \)\{0,1\}[0-9]* more call paths not shown.<\/p>$/(more)/'
        cmp -s <(sed "$notes" "$tmp/exact.html") <(sed "$notes" "$tmp/heaviest.html")
        ok $? "export --format html -r $resource: the same report from the heaviest paths"
        more() { sed -n 's/^<p class="note">\(At least \)\{0,1\}\([0-9]*\) more call paths not shown.<\/p>$/\2/p' "$1"; }
        exact=$(more "$tmp/exact.html") bound=$(more "$tmp/heaviest.html")
        [ -n "$exact" ] && [ -n "$bound" ] && [ "$bound" -le "$exact" ]
        ok $? "export --format html -r $resource: ${bound:-no} more call paths counted, at most the ${exact:-no} there are"
done

# An import into the store that holds all this: the bulk path sets the triggers on samples aside
# while it writes (store-batch.c). They must be back as they were, the generation bumped, every
# node found rather than added again, and the samples counted beside those already there.
facts() {
        python3 - "$tmp/s.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute("SELECT group_concat(name || ':' || sql, char(10)) FROM (SELECT name, sql FROM sqlite_master"
                 " WHERE sql IS NOT NULL ORDER BY name)").fetchone()[0])
print('generation', db.execute('SELECT generation FROM store_state').fetchone()[0])
print('stacks', db.execute('SELECT count(*) FROM stack').fetchone()[0])
for row in db.execute('SELECT resource_id, sum(hits), sum(samples), sum(hits_squared), count(*) FROM sample'
                      ' GROUP BY resource_id ORDER BY resource_id'):
    print('samples', *row)
PY
}
facts > "$tmp/before.txt"
(cd "$tmp" && $cppctl import --folded b.folded --db s.db --resource cpu-time --time @1700000600 \
        --service b.service > /dev/null)
ok $? "b.folded imported again into the store"
facts > "$tmp/after.txt"
is "$(grep -v '^generation\|^samples' "$tmp/after.txt")" "$(grep -v '^generation\|^samples' "$tmp/before.txt")" \
        "the schema (triggers included) and the stack trie as they were"
gen_before=$(sed -n 's/^generation //p' "$tmp/before.txt")
gen_after=$(sed -n 's/^generation //p' "$tmp/after.txt")
[ "$gen_after" -gt "$gen_before" ]
ok $? "the store's generation bumped ($gen_before, then $gen_after)"
b_rows=$(python3 - "$tmp/b.folded" <<'PY'
import sys
stacks = {}
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip('\n').rpartition(' ')
    if stack and int(n) > 0:
        stacks[stack] = stacks.get(stack, 0) + int(n)
print(sum(stacks.values()), sum(stacks.values()), sum(stacks.values()), len(stacks))  # hits, samples, hits_squared: a line of count N is N samples of one hit
PY
)
want=$(awk -v add="$b_rows" 'BEGIN { split(add, b, " ") }
        /^samples 1 / { $3 += b[1]; $4 += b[2]; $5 += b[3]; $6 += b[4] } /^samples/ { print }' "$tmp/before.txt")
is "$(grep '^samples' "$tmp/after.txt")" "$want" "cpu-time's samples: those there before and b.folded's"
done_testing
