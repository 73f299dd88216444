#!/bin/bash
# cppctl diff and cppctl merge on folded stacks with known counts: the diff of two stores and of
# two time windows of one, its z test worked by hand, an empty side; a fleet merged from two
# hosts, its profile the sum of theirs, --host giving each back, refusals that leave the output
# byte for byte as it was.
# Usage: test-diff-merge.sh CPPCTL
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/tap.sh"
cppctl=$(realpath "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=$here/data
expected=$here/expected
cd "$tmp" || exit 1     # store names in the output are relative, so the expected files hold

# Imports put samples in the minute bucket of --time: T1 starts one (2023-11-14 22:13:00 UTC).
T1=1699999980
T2=$((T1 + 3600))

# ---- diff of two stores ----
$cppctl import --folded "$data/diff-base.folded" --db base.db -r cpu-time --time @$T1 > /dev/null
ok $? "import the base side"
# At another period: fractions, not gticks, are compared.
$cppctl import --folded "$data/diff-new.folded" --db new.db -r cpu-time --period 2 --time @$T2 > /dev/null
ok $? "import the new side at period 2"

# By hand, function profile, N1 = N2 = 1000 samples; z = (f2 - f1) / sqrt(p (1 - p) (1/N1 + 1/N2))
# with the pooled p = (x1 + x2) / (N1 + N2):
#   hot   200 -> 300: p = 500/2000 = 0.25,  se = sqrt(0.25 * 0.75 * 0.002)   = 0.019365,
#                     z = +0.100 / 0.019365 = +5.16 >= 1.96: significant, marked *
#   cold  300 -> 290: p = 590/2000 = 0.295, se = sqrt(0.295 * 0.705 * 0.002) = 0.020395,
#                     z = -0.010 / 0.020395 = -0.49: within sampling error, no mark
#   idle  500 -> 410, work 500 -> 590: p = 0.455 and 0.545, se = sqrt(0.455 * 0.545 * 0.002) = 0.022270,
#                     z = -/+0.090 / 0.022270 = -/+4.04 (*); equal |change|, so by name, idle first
#   main 1000 -> 1000: no change, z = 0
$cppctl diff base.db new.db > diff.txt
ok $? "diff BASE.db NEW.db"
same_file diff.txt "$expected/diff-functions.txt" "function profile diff, sorted by |change|, * where |z| >= 1.96"

$cppctl diff base.db new.db --view down --root work > down.txt
same_file down.txt "$expected/diff-down.txt" "--view down --root work: call paths in the paper's notation"

# Shown where either side reaches 0.35: work, idle and main; hot (0.20, 0.30), cold (0.30, 0.29) not.
$cppctl diff base.db new.db -t 0.35 | sed -n '7,$p' > threshold.txt
is "$(cat threshold.txt)" "$(printf '%s\n' \
        '-0.0900 0.5000 0.4100  -4.04 * [500 → 410] idle' \
        '+0.0900 0.5000 0.5900  +4.04 * [500 → 590] work' \
        '+0.0000 1.0000 1.0000  +0.00   [1000 → 1000] main' \
        '-----------------------------------------------------' \
        '(2 functions below the threshold 0.35 not shown)')" "the threshold applies to either side's fraction"

$cppctl diff base.db new.db --json > diff.json
ok $? "--json"
python3 - diff.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["diff"] == "function" and d["test"]["critical_z"] == 1.96, d
assert d["base"]["period"] == 1 and d["new"]["period"] == 2, d
assert d["base"]["hits"] == 1000 and d["new"]["samples"] == 1000, d
e = {x["path"][0]: x for x in d["entries"]}
assert [x["path"][0] for x in d["entries"]] == ["hot", "idle", "work", "cold", "main"], d["entries"]
assert abs(e["hot"]["z"] - 5.1640) < 1e-4 and e["hot"]["significant"] is True, e["hot"]
assert abs(e["cold"]["z"] + 0.4903) < 1e-4 and e["cold"]["significant"] is False, e["cold"]
assert abs(e["hot"]["change"] - 0.1) < 1e-9 and e["hot"]["base"]["hits"] == 200 and e["hot"]["new"]["hits"] == 300
assert d["omitted"] == 0
PY
ok $? "the JSON holds the fractions, hits and z of each path"
is "$($cppctl diff base.db new.db -f csv | head -2)" "$(printf '%s\r\n' \
        'change,base_fraction,new_fraction,z,significant,base_hits,new_hits,path' \
        '0.100000,0.200000,0.300000,5.1640,1,200,300,hot')" "CSV"

# A side merged from runs at periods 1 and 3 counts gticks of 1: each path 4x its hits (4000
# in all) in 2000 samples, 1000 of weight 1 and 1000 of weight 3. The test counts effective
# samples, sum(w)² / sum(w²) = 4000² / 10000 = 1600, x = 800 * 1600/4000 = 320 of N = 1600:
# hot: p = 620/2600 = 0.2385, se = sqrt(0.2385 * 0.7615 * (1/1600 + 1/1000)) = 0.017180,
# z = 0.1 / 0.017180 = +5.82 (counting raw samples would give +6.10, and hits as samples +6.83,
# both too sure of a side whose samples weigh unequally).
$cppctl import --folded "$data/diff-base.folded" --db mixed.db -r cpu-time > /dev/null &&
        $cppctl import --folded "$data/diff-base.folded" --db mixed.db -r cpu-time --period 3 > /dev/null
is "$($cppctl diff mixed.db new.db | grep 'hot$')" "+0.1000 0.2000 0.3000  +5.82 * [800 → 300] hot" \
        "a side of mixed periods: the test counts its samples, not its hits"
$cppctl diff base.db new.db --base-db new.db 2> /dev/null
is $? 2 "the base store both as an argument and with --base-db: exit 2"

# ---- diff of two windows of one store ----
$cppctl import --folded "$data/diff-base.folded" --db win.db -r cpu-time --time @$T1 > /dev/null &&
        $cppctl import --folded "$data/diff-new.folded" --db win.db -r cpu-time --time @$T2 > /dev/null
ok $? "one store, the base samples at T1 and the new an hour later"
$cppctl diff --db win.db --base-since @$T1 --base-until @$((T1 + 1800)) --since @$((T1 + 1800)) \
        --until @$((T2 + 60)) > windows.txt
same_file windows.txt "$expected/diff-windows.txt" "--base-since/--base-until against --since/--until"
$cppctl diff --db win.db --base-run 1 --run 2 | sed -n '7,$p' > runs.txt
sed -n '7,$p' diff.txt > rows.txt
same_file runs.txt rows.txt "--base-run 1 --run 2: the same rows"

$cppctl diff --db win.db --base-since @$((T2 + 60)) > empty.txt 2> err
is $? 3 "a base side without samples: exit 3"
grep -q "the base side (win.db, since 2023-11-14 23:14:00 UTC) has no samples" err
ok $? "saying which side, and its selection"
test ! -s empty.txt
ok $? "and printing no table"
$cppctl diff --db win.db --base-run 1 --run 99 2> err
is $? 3 "a new side without samples: exit 3"
grep -q "the new side (win.db, run 99) has no samples" err
ok $? "saying so"
$cppctl diff base.db new.db --view up --root nowhere 2> err
is $? 3 "a root in neither side: exit 3"

$cppctl diff base.db 2> /dev/null
is $? 2 "one store: exit 2"
$cppctl diff --db win.db 2> err
is $? 2 "no base side: exit 2"
grep -q "diff needs two sides" err
ok $? "saying what a side is"
$cppctl diff --db win.db --base-by line 2> /dev/null
is $? 2 "--base-by (paths must be labelled alike on both sides): exit 2"
$cppctl diff base.db new.db --view down 2> /dev/null
is $? 2 "--view down without a root: exit 2"
$cppctl diff base.db new.db --base-since yesterdayish 2> /dev/null
is $? 2 "a bad --base- value: exit 2"

# ---- merge ----
$cppctl import --folded "$data/fleet-web1.folded" --db web1.db -r cpu-time --host web1 --time @$T1 > /dev/null &&
        $cppctl import --folded "$data/fleet-web2.folded" --db web2.db -r cpu-time --host web2 --time @$T1 > /dev/null &&
        $cppctl import --folded "$data/fleet-web2.folded" --db web2.db -r page-faults --host web2 --time @$T2 > /dev/null
ok $? "two hosts' stores, web2 with two resources"
$cppctl merge --db fleet.db web1.db web2.db > merge.txt
ok $? "merge --db fleet.db web1.db web2.db"
# web1: main, main;serve, ...;parse, ...;render, main;log. web2 adds main;serve;compress alone.
is "$(cat merge.txt)" "$(printf '%s\n' \
        'Merged web1.db into fleet.db: 1 run, 3 sample rows, 5 new stacks.' \
        'Merged web2.db into fleet.db: 2 runs, 6 sample rows, 1 new stacks.')" "what each input added"

# 100 + 100 samples: main 200, serve 90 + 90, parse 40 + 30, compress 60, render 50, log 10 + 10.
$cppctl functions --db fleet.db -r cpu-time -t 0 > fleet.txt
same_file fleet.txt "$expected/fleet-functions.txt" "the fleet's function profile is the sum of the hosts'"
cat "$data/fleet-web1.folded" "$data/fleet-web2.folded" |
        $cppctl import --folded - --db sum.db -r cpu-time > /dev/null
$cppctl functions --db sum.db -t 0 > sum.txt
same_file fleet.txt sum.txt "and equals the import of both files into one store"
$cppctl functions --db fleet.db -r cpu-time -t 0 --host web1 > fleet-web1.txt
$cppctl functions --db web1.db -t 0 > web1.txt
same_file fleet-web1.txt web1.txt "--host web1 gives web1 back exactly"
$cppctl down main --db fleet.db -r cpu-time -t 0 --host web2 > fleet-web2.txt
$cppctl down main --db web2.db -r cpu-time -t 0 > web2.txt
same_file fleet-web2.txt web2.txt "--host web2 gives web2 back exactly (downward profile)"
$cppctl functions --db fleet.db -r page-faults --host web1 2> err
is $? 3 "a host without samples of the resource: exit 3"

is "$(sqlite3 fleet.db "SELECT host, count(*) FROM run GROUP BY host ORDER BY host")" \
        "$(printf 'web1|1\nweb2|2')" "SQL: the runs keep their hosts"
is "$(sqlite3 fleet.db "SELECT r.host, sum(s.hits) FROM sample AS s JOIN thread AS t ON t.id = s.thread_id
                        JOIN process AS p ON p.id = t.process_id JOIN run AS r ON r.id = p.run_id
                        JOIN resource AS x ON x.id = s.resource_id WHERE x.name = 'cpu-time'
                        GROUP BY r.host ORDER BY r.host")" \
        "$(printf 'web1|100\nweb2|100')" "SQL: cpu-time samples per host"
is "$(sqlite3 fleet.db "SELECT (SELECT count(*) FROM function) || ' ' || (SELECT count(*) FROM stack)
                        || ' ' || (SELECT count(*) FROM resource)")" "6 6 2" \
        "functions, stacks and resources shared by content"

# Across hosts, by hand (N = 100 each): compress 0 -> 60: p = 0.3, se = sqrt(0.3 * 0.7 * 0.02) =
# 0.0648, z = +9.26; render 50 -> 0: p = 0.25, se = 0.0612, z = -8.16; parse 40 -> 30: p = 0.35,
# se = sqrt(0.35 * 0.65 * 0.02) = 0.0675, z = -1.48, not significant.
$cppctl diff --db fleet.db -r cpu-time --base-host web1 --host web2 > hosts.txt
same_file hosts.txt "$expected/fleet-diff-hosts.txt" "diff of two hosts of the fleet"

cp fleet.db fleet.before
$cppctl merge --db fleet.db web1.db > /dev/null 2> err
is $? 1 "merging web1.db again: exit 1"
grep -q "web1.db: its run 1 is already in fleet.db" err
ok $? "refused as merged before"
cmp -s fleet.db fleet.before
ok $? "and fleet.db is byte for byte as it was"
$cppctl merge --db fleet.db fleet.db 2> err
is $? 2 "merging a store into itself: exit 2"
grep -q "fleet.db is the output store: a store cannot be merged into itself" err
ok $? "saying so"
mkdir sub && ln -s ../fleet.db sub/link.db
$cppctl merge --db fleet.db sub/link.db 2> /dev/null
is $? 2 "through a symbolic link too"
$cppctl merge --db fleet.db web1.db web1.db 2> /dev/null
is $? 2 "an input named twice: exit 2"

$cppctl merge --db out.db web1.db > /dev/null
cp out.db out.before
cp web2.db damaged.db
python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(2 * 4096 + 8); f.write(b"\xff" * 64)' damaged.db
$cppctl merge --db out.db damaged.db 2> err
is $? 1 "a damaged input: exit 1"
grep -q "damaged.db: damaged, or not a cppd store of this version: On tree page 3" err
ok $? "named, with what is wrong"
cmp -s out.db out.before
ok $? "and the output is byte for byte as it was"
cp web2.db edited.db
sqlite3 edited.db "UPDATE sample SET stack_id = 999 WHERE hits = 60"
$cppctl merge --db out.db edited.db 2> err
is $? 1 "an input whose samples point at no stack: exit 1"
grep -q "2 of the 6 rows of sample refer to rows that are missing" err
ok $? "saying so"
cmp -s out.db out.before
ok $? "and the output is as it was"
echo "not a store" > text.db
$cppctl merge --db out.db text.db 2> err
is $? 1 "an input that is not a store: exit 1"
grep -q "text.db: not a cppd store" err
ok $? "saying so"
$cppctl merge --db out.db absent.db 2> /dev/null
is $? 1 "a missing input: exit 1"
cmp -s out.db out.before
ok $? "and still the output is as it was"
$cppctl merge web1.db 2> /dev/null
is $? 2 "no -o: exit 2"

for cmd in diff merge; do
        $cppctl $cmd --help | grep -q "^Usage: cppctl $cmd"
        ok $? "cppctl $cmd --help"
done

done_testing
