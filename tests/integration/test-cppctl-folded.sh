#!/bin/bash
# cppctl on folded stacks: import into one store, every view against output worked out from the
# paper's examples, JSON, the SQL views, and every error a user can make.
# Usage: test-cppctl-folded.sh CPPCTL
set -u
here=$(dirname "$0")
. "$here/tap.sh"
cppctl=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/s.db
data=$here/data
expected=$here/expected

$cppctl import --folded "$data/forms.folded" --db "$db" --resource real-time --period 20 > "$tmp/out"
ok $? "import the forms example as real-time"
grep -q "Imported 614 samples of real-time (11 distinct stacks)" "$tmp/out"
ok $? "the summary says 614 samples and 11 stacks"
$cppctl import --folded "$data/process_db.folded" --db "$db" --resource page-faults --period 10 > /dev/null
ok $? "import process_db as page-faults into the same store"

$cppctl functions --db "$db" -r real-time -t 0 > "$tmp/functions.txt"
same_file "$tmp/functions.txt" "$expected/forms-functions.txt" "function profile (paper §4.4)"
$cppctl up db_read_record --db "$db" -r real-time -t 0.1 > "$tmp/up.txt"
same_file "$tmp/up.txt" "$expected/forms-up.txt" "upward profile of db_read_record (paper §4.4)"
$cppctl tree --db "$db" -r real-time -t 3% > "$tmp/tree.txt"
same_file "$tmp/tree.txt" "$expected/forms-tree.txt" "sample tree profile (paper §7.2)"
$cppctl down --root main --db "$db" -r page-faults -t 0 > "$tmp/down.txt"
same_file "$tmp/down.txt" "$expected/process_db-down.txt" "downward profile of main for page faults (paper §4)"
$cppctl body --db "$db" -r page-faults > "$tmp/body.txt"
same_file "$tmp/body.txt" "$expected/process_db-body.txt" "body profile with the default threshold"

$cppctl down main --db "$db" -r page-faults --json > "$tmp/down.json"
ok $? "--json"
python3 - "$tmp/down.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["profile"] == "downward" and p["root"] == "main", p
assert p["resource"] == "page-faults" and p["period"] == 10 and p["hits"] == 9950, p
e = {" ".join(x["path"]): x["hits"] for x in p["entries"]}
assert e["main uniquify_db qsort"] == 5671, e
assert abs(p["entries"][0]["fraction"] - 9939 / 9950) < 1e-6, p["entries"][0]
assert p["omitted"] == 1, p["omitted"]      # (main read_db), 11 of 9950
PY
ok $? "the JSON parses and holds the numbers"
$cppctl tree --db "$db" -r real-time --json | python3 -c '
import json, sys
t = json.load(sys.stdin)
main = t["roots"][0]
assert main["name"] == "main" and main["hits"] == 614, main
assert [c["name"] for c in main["children"]][:2] == ["invoice", "envelope"], main["children"]
assert sum(c["hits"] for c in main["children"]) == 614'
ok $? "tree JSON nests children, heaviest first"

# The store answers plain SQL through its views.
top=$(sqlite3 "$db" "SELECT stack || ' ' || hits FROM sample_text WHERE resource = 'page-faults' ORDER BY hits DESC LIMIT 1")
is "$top" "main;uniquify_db;qsort;name_field_lt 5671" "sample_text: the heaviest stack as text"
body=$(sqlite3 "$db" "SELECT function || ' ' || hits FROM body_hits WHERE resource = 'real-time'")
is "$body" "db_read_record 614" "body_hits: the body profile in SQL"
totals=$(sqlite3 "$db" "SELECT resource || ' ' || period || ' ' || hits FROM resource_total ORDER BY resource")
is "$totals" "$(printf 'page-faults 10 9950\nreal-time 20 614')" "resource_total: periods and totals per run"

# Errors.
before=$(sqlite3 "$db" "SELECT count(*) FROM run; SELECT count(*) FROM sample")
$cppctl import --folded "$data/bad-line-3.folded" --db "$db" --resource syscalls 2> "$tmp/err"
is $? 1 "a bad line: exit 1"
grep -q "bad-line-3.folded:3: expected 'f1;f2;...;fn COUNT'" "$tmp/err"
ok $? "the error names the file and line 3"
grep -q "Nothing was imported" "$tmp/err"
ok $? "and says nothing was imported"
is "$(sqlite3 "$db" "SELECT count(*) FROM run; SELECT count(*) FROM sample")" "$before" "the store is as it was"

$cppctl down --root nowhere --db "$db" -r page-faults > "$tmp/out" 2> "$tmp/err"
is $? 3 "a root in no sample: exit 3"
grep -q "'nowhere' appears in no sample of page-faults" "$tmp/err"
ok $? "with a message saying so"
grep -q "^Downward Call Path Profile for resource: page-faults" "$tmp/out"
ok $? "and an empty profile"
$cppctl up --root qsor --db "$db" -r page-faults 2>&1 >/dev/null | grep -q "in their name: qsort"
ok $? "a misspelt root gets a suggestion"

$cppctl functions --db "$db" > /dev/null 2> "$tmp/err"
is $? 2 "two resources and no --resource: exit 2"
grep -q "several resources (page-faults, real-time)" "$tmp/err"
ok $? "naming the resources"
$cppctl functions --db "$db" -r cpu-time 2>&1 | grep -q "has no samples of resource 'cpu-time'; it has: page-faults, real-time"
ok $? "an absent resource names those present"

$cppctl functions --db "$tmp/none.db" 2> "$tmp/err"
is $? 1 "a missing store: exit 1"
grep -q "no such store" "$tmp/err"
ok $? "saying so"
test ! -e "$tmp/none.db"
ok $? "and creating nothing"

echo "not a store" > "$tmp/text.db"
$cppctl import --folded "$data/forms.folded" --db "$tmp/text.db" --resource cpu-time 2> "$tmp/err"
is $? 1 "importing into a file that is not a store: exit 1"
grep -q "not a cppd store" "$tmp/err"
ok $? "saying so"
is "$(cat "$tmp/text.db")" "not a store" "and the file is untouched"

$cppctl import --folded "$tmp/absent.folded" --db "$db" --resource cpu-time 2> "$tmp/err"
is $? 1 "a missing input file: exit 1"
$cppctl import --folded "$data/forms.folded" --db "$db" --resource 'cpu time' 2> /dev/null
is $? 2 "a resource name with a space: exit 2"
$cppctl import --folded "$data/forms.folded" --db "$db" --resource cpu-time --period 0 2> /dev/null
is $? 2 "period 0: exit 2"
$cppctl down --db "$db" 2> /dev/null
is $? 2 "down without a root: exit 2"
$cppctl down main --db "$db" -t 2 2> /dev/null
is $? 2 "threshold 2: exit 2"
$cppctl frobnicate 2> /dev/null
is $? 2 "an unknown command: exit 2"
$cppctl tree --frobnicate 2> /dev/null
is $? 2 "an unknown option: exit 2"

for cmd in import down up functions body tree; do
        $cppctl $cmd --help | grep -q "^Usage: cppctl $cmd"
        ok $? "cppctl $cmd --help"
done
$cppctl --help | grep -q "^Exit status"
ok $? "cppctl --help documents the exit status"

# From stdin, and several imports of one resource add up.
printf 'main;x 3\n' | $cppctl import --folded - --db "$db" --resource real-time --period 20 > /dev/null
ok $? "import from stdin"
$cppctl functions --db "$db" -r real-time -t 0 | grep -q "^1.0000 main \[617 ±0\]"
ok $? "a second import of a resource adds to the first"

done_testing
