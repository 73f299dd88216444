#!/bin/bash
# The views beyond the paper's four, on fixed stores: the caller/callee graph (recursion worked
# by hand below), several resources side by side, --ratio, the tree in every export format,
# --format and -o, top, and the errors a user can make with them.
# Usage: test-views.sh CPPCTL
set -u
here=$(dirname "$0")
. "$here/tap.sh"
cppctl=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=$here/data
expected=$here/expected/views
forms=$tmp/forms.db
pdb=$tmp/process_db.db
rec=$tmp/recursion.db

$cppctl import --folded "$data/forms.folded" --db "$forms" --resource real-time --period 20 > /dev/null &&
$cppctl import --folded "$data/process_db.folded" --db "$pdb" --resource page-faults --period 10 > /dev/null &&
$cppctl import --folded "$data/process_db-cpu.folded" --db "$pdb" --resource cpu-time --period 10 > /dev/null &&
$cppctl import --folded "$data/recursion.folded" --db "$rec" --resource cpu-time --period 1 > /dev/null
ok $? "three fixed stores"

# graph. forms: db_get_property's callers are address_information (422 of its 530) and the five
# forms' direct calls (21-22 each); its one callee is db_read_record.
$cppctl graph --db "$forms" -t 0.15 > "$tmp/out"
same_file "$tmp/out" "$expected/forms-graph.txt" "graph of the forms example at 0.15"
$cppctl graph db_get_property --db "$forms" > "$tmp/out"
same_file "$tmp/out" "$expected/forms-graph-db_get_property.txt" "graph --root db_get_property alone"
# Recursion, per occurrence (Racket): main;f;g;f;g x2 has f and g twice each, so each occurrence
# carries 1 of the 2 hits. f's callers: main 1, g 1 (0.5 each); its callee: g 2 (1.0).
# g (total 3): callers f 2 (0.6667), main 1 (0.3333); callees: (self) 1 + 1 from main;g = 2,
# f 1. main: (root) 4; callees f 2, (self) 1, g 1.
$cppctl graph --db "$rec" -t 0 > "$tmp/out"
same_file "$tmp/out" "$expected/recursion-graph.txt" "graph of direct and mutual recursion, worked by hand"
$cppctl graph f --db "$rec" --json > "$tmp/out.json"
python3 - "$tmp/out.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
assert g["profile"] == "graph" and len(g["functions"]) == 1, g
f = g["functions"][0]
assert (f["name"], f["hits"], f["self"]) == ("f", 2, 0), f
assert sorted((c["name"], c["hits"]) for c in f["callers"]) == [("g", 1.0), ("main", 1.0)], f
assert [(c["name"], c["share"]) for c in f["callees"]] == [("g", 1.0)], f
PY
ok $? "graph --json: f's callers and callees"
$cppctl graph nothere --db "$rec" 2> "$tmp/err"
is "$?" 3 "graph of a function in no sample: exit 3"
grep -q "'nothere' appears in no sample of cpu-time" "$tmp/err"
ok $? "and says so"

# A root in no sample of the selection: the names suggested are those of the selection's stacks,
# in byte order, whatever else the store holds (a ClickHouse source loads only the selection, so
# both must agree): here main_loop and remain only under cpu-time, domain_x under page-faults.
sug=$tmp/suggest.db
printf 'start;main_loop;remain 5\n' | $cppctl import --folded - --db "$sug" --resource cpu-time > /dev/null &&
printf 'start;domain_x 3\nstart;zmain 1\n' | $cppctl import --folded - --db "$sug" --resource page-faults > /dev/null
ok $? "a store whose resources hold different names"
for view in down up graph; do
        $cppctl $view main --db "$sug" -r page-faults > /dev/null 2> "$tmp/err"
        is "$?" 3 "$view --root main of page-faults: nothing matched"
        grep -qx "cppctl: 'main' appears in no sample of page-faults; functions with that in their name: domain_x, zmain" \
                "$tmp/err"
        ok $? "$view suggests only page-faults' names, sorted: $(cat "$tmp/err")"
done
$cppctl down main --db "$sug" -r page-faults --since @0 > /dev/null 2> "$tmp/err2"
cmp -s "$tmp/err" "$tmp/err2"
ok $? "the same suggestions without the index (a filter)"

# Several resources: one row per path, a column per resource.
$cppctl down main --db "$pdb" -r cpu-time,page-faults > "$tmp/out"
same_file "$tmp/out" "$expected/process_db-down-cpu-faults.txt" "down main with cpu-time and page-faults side by side"
$cppctl functions --db "$pdb" -r page-faults,cpu-time -f csv -t 0.1 > "$tmp/out"
same_file "$tmp/out" "$expected/process_db-functions-faults-cpu.csv" "the same as CSV, columns in the order asked"
$cppctl body --db "$pdb" -r cpu-time,page-faults --json > "$tmp/out.json"
python3 - "$tmp/out.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert [r["resource"] for r in p["resources"]] == ["cpu-time", "page-faults"], p
rows = {" ".join(e["path"]): e for e in p["entries"]}
# print_salary_stats has 10 ms of CPU in its body and no page fault there.
assert rows["print_salary_stats"]["hits"] == [10, 0], rows["print_salary_stats"]
assert rows["name_field_lt"]["hits"] == [500, 5671], rows["name_field_lt"]
assert rows["name_field_lt"]["fractions"] == [0.5, 0.569950], rows["name_field_lt"]
lo, hi = rows["name_field_lt"]["ci95"][0]
assert lo < 0.5 < hi, (lo, hi)
PY
ok $? "body --json with two resources: hits, fractions and intervals per column"

# --ratio: page faults per ms of CPU. build_db_ptrs: 900 samples x 10 faults over 50 x 10 ms =
# 18 per ms, ± 18 x 1.96 sqrt(1/900 + 1/50) = 5.1261. [unknown] has faults and no CPU: infinite.
$cppctl functions --db "$pdb" --ratio page-faults/cpu-time -t 0.001 > "$tmp/out"
same_file "$tmp/out" "$expected/process_db-ratio.txt" "functions --ratio page-faults/cpu-time"
$cppctl down main --db "$pdb" --ratio page-faults/cpu-time -f csv > "$tmp/out"
grep -q "^18.000000,5.126065,900,50,main;uniquify_db;build_db_ptrs" "$tmp/out"
ok $? "--ratio as CSV"

# The tree in other tools' formats.
$cppctl export --db "$forms" -f folded > "$tmp/out"
grep -v '^#' "$data/forms.folded" | LC_ALL=C sort > "$tmp/want"
LC_ALL=C sort "$tmp/out" | diff -u "$tmp/want" - > /dev/null
ok $? "export --format folded gives back the imported stacks"
$cppctl export --db "$pdb" -r cpu-time,page-faults -o "$tmp/p.pb.gz"
ok $? "export as pprof (the default) with two resources"
if command -v protoc > /dev/null; then
        gzip -dc "$tmp/p.pb.gz" | protoc --decode=perftools.profiles.Profile \
                --proto_path="$here/../../schemas" profile.proto > "$tmp/p.txt"
        ok $? "protoc decodes it against schemas/profile.proto"
        python3 - "$tmp/p.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
strings = re.findall(r'^string_table: "(.*)"$', text, re.M)
types = re.findall(r'sample_type \{\s*type: (\d+)\s*unit: (\d+)', text)
assert [strings[int(t)] for t, u in types] == ["cpu-time", "page-faults"], types
values = [list(map(int, re.findall(r'value: (\d+)', s))) for s in re.findall(r'sample \{(.*?)\n\}', text, re.S)]
assert sum(v[0] for v in values) == 1000 * 10 and sum(v[1] for v in values) == 9950 * 10, values
PY
        ok $? "sample types in order, values in gticks adding up to each total"
else
        ok 0 "# SKIP protoc not installed"
        ok 0 "# SKIP protoc not installed"
fi
# Google's pprof itself (Go's `go tool pprof`), where Go is installed: CPU time in milliseconds.
if command -v go > /dev/null; then
        HOME=$tmp GOCACHE=$tmp/go go tool pprof -top -sample_index=cpu-time "$tmp/p.pb.gz" > "$tmp/top.txt" 2> /dev/null
        ok $? "go tool pprof reads the file"
        grep -q "Showing nodes accounting for 10000ms, 100% of 10000ms total" "$tmp/top.txt" &&
                grep -Eq "^ +5000ms 50.00% 50.00% +5000ms 50.00%  name_field_lt$" "$tmp/top.txt"
        ok $? "and shows cpu-time in milliseconds: name_field_lt 5000ms, 50%"
        HOME=$tmp GOCACHE=$tmp/go go tool pprof -top -sample_index=page-faults "$tmp/p.pb.gz" 2> /dev/null |
                grep -Eq "^ +56710 56.99% 56.99% +56710 56.99%  name_field_lt$"
        ok $? "and page-faults as a count: name_field_lt 56710 (5671 samples every 10)"
else
        for i in 1 2 3; do ok 0 "# SKIP go (for go tool pprof) not installed"; done
fi
$cppctl tree --db "$forms" -f flame -o "$tmp/f.svg" && python3 -c "import sys, xml.dom.minidom as m; m.parse(sys.argv[1])" "$tmp/f.svg"
ok $? "tree --format flame writes well-formed SVG"
$cppctl tree --db "$forms" -f icicle | grep -q "db_read_record ← db_get_property"
ok $? "--format icicle draws the inverted tree (callers of the leaf)"
$cppctl export --db "$pdb" -r cpu-time,page-faults -f html > "$tmp/r.html" &&
        grep -q "cpu-time" "$tmp/r.html" && grep -q "page-faults" "$tmp/r.html"
ok $? "export --format html: one report of both resources"
$cppctl export --db "$pdb" -r cpu-time -f speedscope | python3 -c "import json, sys; p = json.load(sys.stdin); assert sum(p['profiles'][0]['weights']) == 10000"
ok $? "export --format speedscope: weights in gticks"
$cppctl graph --db "$forms" -f dot | grep -q "^digraph"
ok $? "graph --format dot"
$cppctl functions --db "$forms" -f json -t 0.5 -o "$tmp/out.json" && python3 -c "import json, sys; assert json.load(open(sys.argv[1]))['profile'] == 'function'" "$tmp/out.json"
ok $? "-o FILE on a view"

# Errors.
$cppctl down main --db "$forms" -f flame 2> "$tmp/err"
is "$?" 2 "a view refuses a tree format: exit 2"
grep -q "down has no flame format; it writes text, json, csv ('cppctl export' writes the others)" "$tmp/err"
ok $? "and names the formats it writes"
$cppctl tree --db "$pdb" -r cpu-time,page-faults -f folded 2> "$tmp/err"
is "$?" 2 "folded holds one resource"
grep -q "html, pprof and speedscope hold several" "$tmp/err"
ok $? "and says which formats hold several"
$cppctl functions --db "$pdb" --ratio page-faults 2> "$tmp/err"
is "$?" 2 "--ratio with one resource"
grep -q "expected two resources, A/B" "$tmp/err"
ok $? "and shows the form"
$cppctl down main --db "$pdb" -r cpu-time,bytes-read 2> "$tmp/err"
is "$?" 1 "an unknown resource among several: exit 1"
grep -q "has no samples of resource 'bytes-read'; it has: cpu-time, page-faults" "$tmp/err"
ok $? "and lists the store's resources"
$cppctl down main --db "$pdb" -f nope 2> "$tmp/err"
is "$?" 2 "an unknown format"
$cppctl graph --db "$forms" -o /nonexistent/dir/x 2> "$tmp/err"
is "$?" 1 "-o in a missing directory: exit 1"
grep -q "Cannot create /nonexistent/dir/x" "$tmp/err"
ok $? "and names the file"

# The counts' label says what is printed: raw samples while each sample is a hit (every store
# above), hits once they are weighted. Two runs at periods 2 and 3 merge with weights 2 and 3:
# f 2x2 + 1x3 = 7, g 1x2 = 2, 9 hits in 4 samples.
weighted=$tmp/weighted.db
printf 'main;f 2\nmain;g 1\n' | $cppctl import --folded - --db "$weighted" -r cpu-time --period 2 > /dev/null &&
        printf 'main;f 1\n' | $cppctl import --folded - --db "$weighted" -r cpu-time --period 3 > /dev/null
ok $? "a store of two runs at periods 2 and 3"
$cppctl functions --db "$weighted" > "$tmp/out"
same_file "$tmp/out" "$expected/weighted-functions.txt" "functions: 9 hits in 4 samples, labelled #hits"
for view in "down main" "up f" "body" "tree" "graph"; do
        $cppctl $view --db "$weighted" -t 0 > "$tmp/out"
        grep -q '^format: .*\[#hits' "$tmp/out" && ! grep -q '#raw_samples' "$tmp/out" && grep -q '\[7[] ]' "$tmp/out"
        ok $? "$view: the weighted hits (7 for f), labelled #hits"
done
$cppctl functions --db "$forms" -t 0.5 | grep -q '^format: usage_fraction function_name \[#raw_samples ±95%\]$'
ok $? "and #raw_samples where each sample is a hit"

# top, without a daemon: two refreshes of the window's function profile, one after the other.
$cppctl top --db "$forms" --socket "$tmp/none.sock" --count 2 --interval 100ms --window 1d -t 0.5 > "$tmp/out" 2> "$tmp/err"
ok $? "top --count 2"
is "$(grep -c '^cppctl top: ' "$tmp/out")" 2 "two refreshes"
is "$(grep -c '^1.0000 db_read_record \[614 ±0\]' "$tmp/out")" 2 "each with the window's function profile"
grep -q "cppd is not listening on $tmp/none.sock" "$tmp/err"
ok $? "and a word that no daemon was asked to flush"
$cppctl top --db "$forms" --view down --count 1 2> "$tmp/err"
is "$?" 2 "top --view down without a root"

done_testing
