#!/bin/bash
# Tree indexes of big stores, kept in the cache directory (client/source/index-cache.c): views read from
# one say exactly what views built from the store say; an index is written only for a big tree,
# mode 0600; it is used while the store is unchanged and built again when the store changes, is
# copied, or the index is damaged; filtered views do without.
# Usage: test-index.sh CPPCTL GEN-FOLDED
set -u
here=$(dirname "$0")
. "$here/tap.sh"
cppctl=$1
gen=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/big.db
export CPPD_INDEX_DIR=$tmp/index

# Every view at two thresholds, with the index directory given (an unusable one: no index).
views() {       # views INDEX_DIR OUT_FILE [DB]
        local store=${3:-$db}
        {
                for t in 0.01 0.002; do
                        CPPD_INDEX_DIR=$1 $cppctl down main --db "$store" -t $t
                        CPPD_INDEX_DIR=$1 $cppctl down "$root" --db "$store" -t $t
                        CPPD_INDEX_DIR=$1 $cppctl up "$root" --db "$store" -t $t --json
                        CPPD_INDEX_DIR=$1 $cppctl functions --db "$store" -t $t
                        CPPD_INDEX_DIR=$1 $cppctl body --db "$store" -t $t --format csv
                done
        } > "$2" 2>&1
}

# 15,000 distinct stacks of 3 to 40 frames: 250,000 trie nodes, over the floor of 200,000.
python3 "$gen" "$tmp/a.folded" --samples 30000 --stacks 15000 --seed 7 &&
        $cppctl import --folded "$tmp/a.folded" --db "$db" --resource cpu-time > /dev/null
ok $? "a store of 250,000 trie nodes"
root=$(CPPD_INDEX_DIR=/dev/null/none $cppctl functions --db "$db" --json | python3 -c 'import json, sys
print(next(e["path"][0] for e in json.load(sys.stdin)["entries"] if e["path"][0] != "main"))')

views /dev/null/none "$tmp/plain"
ok $? "every view without an index"
[ ! -e "$CPPD_INDEX_DIR" ]
ok $? "and nothing written elsewhere for want of the directory"

views "$CPPD_INDEX_DIR" "$tmp/first"
same_file "$tmp/first" "$tmp/plain" "the same views while the indexes are built"
n=$(ls "$CPPD_INDEX_DIR" | wc -l)
is "$n" 2 "two indexes: the tree's and its inverse's"
down=$(ls "$CPPD_INDEX_DIR"/*.down) up=$(ls "$CPPD_INDEX_DIR"/*.up)
is "$(stat -c %a "$CPPD_INDEX_DIR") $(stat -c %a "$down") $(stat -c %a "$up")" "700 600 600" \
        "the directory 0700, the files 0600"
inode=$(stat -c %i "$down")

views "$CPPD_INDEX_DIR" "$tmp/second"
same_file "$tmp/second" "$tmp/plain" "the same views from the indexes"
is "$(stat -c %i "$down")" "$inode" "which were read, not written again"

# The store changes: the index is stale and built again.
python3 "$gen" "$tmp/b.folded" --samples 5000 --stacks 2000 --seed 8 &&
        $cppctl import --folded "$tmp/b.folded" --db "$db" --resource cpu-time > /dev/null
ok $? "more samples imported"
views /dev/null/none "$tmp/plain2"
views "$CPPD_INDEX_DIR" "$tmp/third"
same_file "$tmp/third" "$tmp/plain2" "after a change, the views say what the store says"
cmp -s "$tmp/plain" "$tmp/plain2"
ok $((! $?)) "and it did change them"
[ "$(stat -c %i "$down")" != "$inode" ]
ok $? "the index was written again"

# A damaged index: built again, never believed.
truncate -s 1000 "$down"
head -c 4096 /dev/urandom | dd of="$up" bs=1 seek=200 conv=notrunc 2> /dev/null
views "$CPPD_INDEX_DIR" "$tmp/fourth"
same_file "$tmp/fourth" "$tmp/plain2" "damaged indexes are built again"

# A copy of the store is another store: an index of its own.
cp "$db" "$tmp/copy.db"
views "$CPPD_INDEX_DIR" "$tmp/fifth" "$tmp/copy.db"
same_file "$tmp/fifth" "$tmp/plain2" "a copy's views"
is "$(ls "$CPPD_INDEX_DIR" | wc -l)" 4 "from indexes of its own"

# One flipped byte in a name of an index that is otherwise whole: the checksum sees it.
views "$CPPD_INDEX_DIR" /dev/null
python3 -c 'import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[192 + 40] ^= 0x01             # the strings follow the 192-byte header: a byte of a name
open(sys.argv[1], "r+b").write(b)' "$down"
views "$CPPD_INDEX_DIR" "$tmp/flipped"
same_file "$tmp/flipped" "$tmp/plain2" "a flipped byte in a name: the index is built again, never believed"

# Two copies of one store take imports of the same shape (the same generation), then one is copied
# over the other in place (the same inode): its views are its new contents', not the old index's.
cp "$db" "$tmp/x.db" && cp "$db" "$tmp/y.db"
echo "main;AAA;BBB 5" > "$tmp/x.folded" && echo "main;CCC;DDD 5" > "$tmp/y.folded" &&
        $cppctl import --folded "$tmp/x.folded" --db "$tmp/x.db" --resource cpu-time > /dev/null &&
        $cppctl import --folded "$tmp/y.folded" --db "$tmp/y.db" --resource cpu-time > /dev/null
ok $? "two copies, each with an import of the same shape"
$cppctl down main --db "$tmp/y.db" -t 0 > /dev/null && inode=$(stat -c %i "$tmp/y.db") &&
        cp "$tmp/x.db" "$tmp/y.db" && [ "$(stat -c %i "$tmp/y.db")" = "$inode" ]
ok $? "y's index built, then x copied over y in place"
out=$($cppctl down main --db "$tmp/y.db" -t 0)
grep -q "AAA BBB" <<< "$out" && ! grep -q "CCC" <<< "$out"
ok $? "y's views show what it now holds (AAA BBB), not its old index's (CCC DDD)"

# A filter: no index, but the same answer a filter gives without one.
CPPD_INDEX_DIR=/dev/null/none $cppctl down main --db "$db" --run 1 > "$tmp/f1" 2>&1
$cppctl down main --db "$db" --run 1 > "$tmp/f2" 2>&1
same_file "$tmp/f2" "$tmp/f1" "a filtered view, with or without the cache"

# A small store writes no index.
$cppctl import --folded "$here/data/forms.folded" --db "$tmp/small.db" --resource cpu-time > /dev/null &&
        CPPD_INDEX_DIR=$tmp/small-index $cppctl down main --db "$tmp/small.db" > /dev/null
ok $? "a small store's view"
is "$(ls "$tmp/small-index" 2> /dev/null | wc -l)" 0 "writes no index"

done_testing
