#!/bin/bash
# SQL over stores: cppctl sql in its three formats, its refusals (the store byte-identical after),
# the call path functions inside cppctl sql and in the stock sqlite3 shell through the loadable
# module (their numbers equal to cppctl's own views), their filters and errors, and the README's
# example queries, run as written there.
# Usage: test-sql.sh CPPCTL SQL_MODULE README
set -u
here=$(dirname "$0")
. "$here/tap.sh"
cppctl=$1
module=${2%.so}
readme=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=$here/data
expected=$here/expected/sql
db=$tmp/p.db

$cppctl import --folded "$data/process_db.folded" --db "$db" -r page-faults -p 10 > /dev/null &&
$cppctl import --folded "$data/process_db-cpu.folded" --db "$db" -r cpu-time -p 10 > /dev/null
ok $? "a fixed store of two resources"

# Formats.
q="SELECT leaf, hits, round(fraction, 4) AS fraction FROM functions('cpu-time', 0.1)"
$cppctl sql "$db" "$q" > "$tmp/out"
same_file "$tmp/out" "$expected/functions.txt" "a table with a header, aligned"
$cppctl sql --db "$db" -f csv "$q; SELECT 'a,\"b\"' AS quoted" > "$tmp/out"
same_file "$tmp/out" "$expected/functions.csv" "CSV, two statements in turn, quoting by RFC 4180"
$cppctl sql "$db" --format json "SELECT resource AS name, period, NULL AS missing FROM resource_total ORDER BY resource" > "$tmp/out"
python3 - "$tmp/out" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
assert rows == [{"name": "cpu-time", "period": 10, "missing": None},
                {"name": "page-faults", "period": 10, "missing": None}], rows
PY
ok $? "JSON: numbers as numbers, NULL as null"

# Read-only, whatever the file's permissions.
cp "$db" "$tmp/before.db"
for stmt in "INSERT INTO resource (name, unit) VALUES ('x', 'y')" "UPDATE resource SET name = 'x'" \
            "DELETE FROM sample" "DROP TABLE sample" "CREATE TABLE t (x)" "ATTACH '$tmp/other.db' AS other" \
            "PRAGMA journal_mode = delete" "PRAGMA user_version = 7" "VACUUM" \
            "SELECT 1; DELETE FROM sample"; do
        $cppctl sql "$db" "$stmt" > /dev/null 2> "$tmp/err"
        status=$?
        grep -q "cppctl sql is read-only: .* refused" "$tmp/err"
        ok $(( $? || status != 2 )) "refused with exit 2: $stmt"
done
cmp -s "$db" "$tmp/before.db" && [ ! -e "$tmp/other.db" ]
ok $? "the store is byte-identical after, and ATTACH made no file"
$cppctl sql "$db" "PRAGMA table_info(resource)" | grep -q "^0    id    INTEGER"
ok $? "pragmas that only describe are allowed"
$cppctl sql "$db" "SELEC 1" 2> "$tmp/err"
is "$?" 1 "a syntax error: exit 1"
grep -q 'near "SELEC": syntax error' "$tmp/err"
ok $? "with SQLite's words"
$cppctl sql "$db" "SELECT leaf FROM functions('cpu-time') WHERE focus = '('" > "$tmp/out" 2> "$tmp/err"
[ $? = 1 ] && [ ! -s "$tmp/out" ] && grep -q "^cppctl: focus: Unmatched ( or \\\\($" "$tmp/err"
ok $? "a statement that fails at its first row prints no header, only the error"
# glibc's regcomp() would take 12 GB for the first, 3 GB for the second (common/base/pattern.c:
# regex_too_costly); the third is within bounds.
timeout 10 $cppctl sql "$db" "SELECT leaf FROM functions('cpu-time') WHERE ignore = 'a++++++++++++++++++++++++'" 2> "$tmp/err"
is "$?" 1 "a regular expression that repeats repetitions: refused at once"
grep -q "ignore: 'a++++++++++++++++++++++++' would cost too much to compile: repetitions of repetitions nest too deep" "$tmp/err"
ok $? "saying so"
timeout 10 $cppctl sql "$db" "SELECT leaf FROM downward('main', 'cpu-time') WHERE hide = '(a?){20000}'" 2> "$tmp/err"
is "$?" 1 "one that copies an optional part 20000 times: refused"
grep -q "hide: '(a?){20000}' would cost too much to compile: its repetitions make too many copies" "$tmp/err"
ok $? "saying so"
timeout 10 $cppctl functions --db "$db" -r cpu-time --focus '(a?){20000}' 2> "$tmp/err"
is "$?" 2 "the views' --focus refuses it too (common/base/pattern.c), as bad usage"
grep -q "^cppctl: --focus (a?){20000}: '(a?){20000}' would cost too much to compile" "$tmp/err"
ok $? "saying so"
$cppctl sql "$db" "SELECT count(*) FROM functions('cpu-time') WHERE ignore = '((x?){40}){40}Q|[]a+]+z{3}|^q' AND hits > 0" > "$tmp/out"
is "$(tail -1 "$tmp/out")" 9 "one with repetitions within the bounds: taken (qsort and name_field_lt ignored)"

# The functions give cppctl's own numbers: every path, its hits, fraction and 95% interval, in
# both shells. cppctl's JSON prints fractions with six decimals; the SQL side's doubles (printed
# to round-trip) are formatted the same way, so the comparison is of equal strings.
compare() {     # compare VIEW_SQL CPPCTL_ARGS... : (path, hits, fraction, ci) of both, sorted, equal
        local sql=$1
        shift
        $cppctl sql "$db" -f json "SELECT path, hits, fraction, ci_low, ci_high FROM $sql" | python3 -c '
import json, sys
for e in json.load(sys.stdin):
    print("%s,%d,%.6f,%.6f,%.6f" % (e["path"], e["hits"], e["fraction"], e["ci_low"], e["ci_high"]))' |
                sort > "$tmp/a"
        $cppctl "$@" --db "$db" -t 0 --json | python3 -c '
import json, sys
for e in json.load(sys.stdin)["entries"]:
    print("%s,%d,%.6f,%.6f,%.6f" % (" ".join(e["path"]), e["hits"], e["fraction"], e["ci95"][0], e["ci95"][1]))' |
                sort > "$tmp/b"
        [ -s "$tmp/a" ] && diff -q "$tmp/a" "$tmp/b" > /dev/null
}
compare "downward('main', 'page-faults')" down main -r page-faults
ok $? "downward() = cppctl down, path by path"
compare "upward('qsort', 'page-faults')" up qsort -r page-faults
ok $? "upward() = cppctl up"
compare "functions('cpu-time')" functions -r cpu-time
ok $? "functions() = cppctl functions"
compare "body('cpu-time')" body -r cpu-time
ok $? "body() = cppctl body"
compare "downward('main', 'page-faults') WHERE hide = 'qsort'" down main -r page-faults --hide qsort
ok $? "a filter as a WHERE term: hide"
compare "functions('cpu-time', 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 'uniquify')" functions -r cpu-time --focus uniquify
ok $? "filters as arguments in order: focus"

# The stock sqlite3 cannot load a module built with AddressSanitizer (its runtime must come first).
if ldd "$module.so" 2> /dev/null | grep -q libasan; then
        for i in 1 2 3 4 5 6 7 8; do ok 0 "# SKIP the module is built with AddressSanitizer"; done
elif command -v sqlite3 > /dev/null; then
        sqlite3 -separator , "$db" ".load $module" "SELECT path, hits, fraction, ci_low, ci_high FROM downward('main', 'page-faults')" | sort > "$tmp/a"
        $cppctl sql "$db" -f csv "SELECT path, hits, fraction, ci_low, ci_high FROM downward('main', 'page-faults')" | tail -n +2 | tr -d '\r' |
                sort > "$tmp/b"
        [ -s "$tmp/a" ] && diff -q "$tmp/a" "$tmp/b" > /dev/null
        ok $? "the module loads in the sqlite3 shell: downward() there = in cppctl sql"
        sqlite3 "$db" ".load $module" "SELECT leaf, hits FROM body('cpu-time') WHERE threshold = 0.1 ORDER BY hits DESC, leaf" > "$tmp/out"
        printf 'name_field_lt|500\nextract_salary_fields|200\nmerge_adjacent_records|100\nstat_summary|100\n' > "$tmp/want"
        same_file "$tmp/out" "$tmp/want" "body() in sqlite3 with a threshold"
        sqlite3 "$db" ".load $module" "SELECT count(*) FROM body()" > /dev/null 2> "$tmp/err"
        grep -q "body: the store holds several resources: name one" "$tmp/err"
        ok $? "no resource on a store of two: a clear error"
        sqlite3 "$db" ".load $module" "SELECT * FROM downward('main', 'page-faults') WHERE focus = '('" > /dev/null 2> "$tmp/err"
        grep -q "focus: " "$tmp/err"
        ok $? "a bad regular expression: an SQL error naming the argument"
        sqlite3 "$db" ".load $module" "SELECT * FROM functions('bytes-read')" > /dev/null 2> "$tmp/err"
        grep -q "functions: the store has no samples of resource 'bytes-read'" "$tmp/err"
        ok $? "an unknown resource"
        sqlite3 "$db" ".load $module" "SELECT * FROM downward(NULL, 'cpu-time')" > /dev/null 2> "$tmp/err"
        grep -q "the root function is missing" "$tmp/err"
        ok $? "a missing root"
        sqlite3 "$db" ".load $module" "SELECT count(*) FROM downward('nothere', 'cpu-time')" > "$tmp/out"
        is "$(cat "$tmp/out")" 0 "a root in no sample: no rows"
        sqlite3 "$tmp/none.db" ".load $module" "SELECT * FROM functions('cpu-time')" > /dev/null 2> "$tmp/err"
        grep -q "not a cppd store" "$tmp/err"
        ok $? "on a database that is not a store: refused"
else
        for i in 1 2 3 4 5 6 7 8; do ok 0 "# SKIP sqlite3 not installed"; done
fi

# The README's examples, as written there, on a store of two services over three days.
ex=$tmp/ex.db
d=$data/sql
$cppctl import --folded "$d/nginx-cpu-before.folded" --db "$ex" -r cpu-time -p 10 --service nginx.service \
        --time "$(date -d '2 days ago 10:00' +@%s)" > /dev/null &&
$cppctl import --folded "$d/nginx-cpu-yesterday.folded" --db "$ex" -r cpu-time -p 10 --service nginx.service \
        --time "$(date -d 'yesterday 10:00' +@%s)" > /dev/null &&
$cppctl import --folded "$d/nginx-faults.folded" --db "$ex" -r page-faults -p 16 --service nginx.service \
        --time "$(date -d 'yesterday 10:00' +@%s)" > /dev/null &&
$cppctl import --folded "$d/postgres-faults.folded" --db "$ex" -r page-faults -p 16 --service postgresql.service \
        --time "$(date -d 'yesterday 10:00' +@%s)" > /dev/null
ok $? "the examples' store: nginx and postgresql, yesterday and the day before"
python3 - "$readme" "$tmp" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
part = text.split('<!-- sql-examples')[1].split('<!-- /sql-examples -->')[0]
for i, q in enumerate(re.findall(r'```sql\n(.*?)```', part, re.S)):
    open('%s/example-%d.sql' % (sys.argv[2], i + 1), 'w').write(q)
PY
for i in 1 2 3; do
        $cppctl sql "$ex" "$(cat "$tmp/example-$i.sql")" > "$tmp/out" 2>&1
        same_file "$tmp/out" "$expected/example-$i.txt" "README example $i: $(head -1 "$tmp/example-$i.sql" | cut -c1-50)"
done

done_testing
