#!/bin/bash
# cppctl export --format pprof names the binaries: a recording of process_db exported, decoded
# by protoc against schemas/profile.proto, has a Mapping row per binary, the workload's first
# with its path and build id (readelf's), has_functions set, every location of a binary's code
# pointing at a mapping; and `go tool pprof` shows the main binary's file and build id, not "Main binary
# filename not available".
# Usage: test-pprof-mapping.sh CPPCTL WORKLOADS_DIR PROFILE.PROTO
set -u
here=$(dirname "$0")
. "$here/tap.sh"
cppctl=$1
workload=$2/process_db-nofp
proto=$3

command -v protoc > /dev/null || skip_all "protoc is not installed (Debian: protobuf-compiler)"
[ "$(id -u)" = 0 ] || [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 1 ] ||
        skip_all "needs root, or perf_event_paranoid <= 1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$cppctl" record -q --db "$tmp/p.db" -e page-faults/4 -- "$workload" > /dev/null 2> "$tmp/err"
ok $? "record process_db"
"$cppctl" export --db "$tmp/p.db" -o "$tmp/p.pb.gz" 2> "$tmp/err"
ok $? "export it as pprof"
gzip -dc "$tmp/p.pb.gz" > "$tmp/p.pb" &&
        protoc --decode=perftools.profiles.Profile --proto_path="$(dirname "$proto")" "$proto" \
                < "$tmp/p.pb" > "$tmp/decoded.txt" 2> "$tmp/err"
ok $? "protoc decodes it"

# The strings, and the mappings' fields, out of protoc's text.
mapfile -t strings < <(sed -n 's/^string_table: "\(.*\)"$/\1/p' "$tmp/decoded.txt")
field() {       # field N NAME: mapping N's field NAME
        awk -v n="$1" -v f="$2" '/^mapping {/ { i++ } i == n && $1 == f ":" { print $2; exit }' "$tmp/decoded.txt"
}
n_mappings=$(grep -c '^mapping {' "$tmp/decoded.txt")
[ "$n_mappings" -ge 2 ]
ok $? "a mapping per binary: $n_mappings (process_db, libc, ld.so...)"
is "$(field 1 id)" 1 "the first mapping has id 1"
is "${strings[$(field 1 filename)]}" "$(readlink -f "$workload")" "and is the workload, the main binary"
build_id=$(readelf -n "$workload" | sed -n 's/.*Build ID: \([0-9a-f]*\)/\1/p')
is "${strings[$(field 1 build_id)]}" "$build_id" "with its build id"
is "$(field 1 has_functions)" true "has_functions: pprof need not symbolize"
grep -q "libc.so.6" <(for ((i = 1; i <= n_mappings; i++)); do echo "${strings[$(field $i filename)]}"; done)
ok $? "libc has a mapping of its own"
# Locations without a mapping: only frames of no binary, such as "[unknown]" (an address no
# mapping covered: a sample in an exec's first moments, on a loaded machine).
unmapped=$(awk '
        /^location \{/ { in_loc = 1; mapped = 0; next }
        /^function \{/ { in_fn = 1; next }
        in_loc && $1 == "mapping_id:" && $2 > 0 { mapped = 1 }
        in_loc && $1 == "function_id:" { fn = $2 }
        in_loc && /^\}/ { if (!mapped) loose[fn] = 1; in_loc = 0 }
        in_fn && $1 == "id:" { id = $2 }
        in_fn && $1 == "name:" { name[id] = $2 }
        in_fn && /^\}/ { in_fn = 0 }
        END { for (f in loose) print name[f] }' "$tmp/decoded.txt")
bad=
for i in $unmapped; do
        case "${strings[$i]}" in
        "["*"]" | swapper) ;;
        *) bad="$bad ${strings[$i]}" ;;
        esac
done
[ -z "$bad" ]
ok $? "every location of a binary's code names its mapping${bad:+ (not:$bad)}"
awk '/^mapping {/ { m = 1 } m && $1 == "memory_start:" { s = $2 } m && $1 == "memory_limit:" { print s, $2; m = 0 }' \
        "$tmp/decoded.txt" | sort -n | awk 'prev && $1 <= prev { bad = 1 } { prev = $2 } END { exit bad }'
ok $? "memory ranges disjoint and never adjacent (pprof would merge adjacent ones)"

if command -v go > /dev/null; then
        HOME=$tmp GOCACHE=$tmp/go go tool pprof -raw "$tmp/p.pb.gz" > "$tmp/raw.txt" 2>&1
        ok $? "go tool pprof -raw reads it"
        ! grep -q "Main binary filename not available" "$tmp/raw.txt"
        ok $? "without 'Main binary filename not available'"
        grep -q "$build_id" "$tmp/raw.txt"
        ok $? "and lists the workload's build id"
else
        ok 0 "# SKIP go is not installed (Debian: golang-go)"
fi
done_testing
