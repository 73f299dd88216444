#!/bin/bash
# render_pprof()'s two-resource example, gunzipped and decoded by protoc, a real protobuf decoder,
# against schemas/profile.proto: every field must decode to what test-render-pprof.c worked out
# by hand, and nothing may be left over as an unknown field. Then a name that is not UTF-8 (folded
# files, ELF symbols and perf-PID.map lines may hold any bytes), through cppctl export: protoc,
# like Go's protobuf, refuses a string field that is not UTF-8, so the bytes must be U+FFFD.
# Usage: test-render-pprof-decode.sh TEST-RENDER-PPROF PROFILE.PROTO CPPCTL
set -u
here=$(dirname "$0")
. "$here/../integration/tap.sh"
writer=$1
proto=$2
cppctl=$3

command -v protoc > /dev/null || skip_all "protoc is not installed (Debian: protobuf-compiler)"
command -v gzip > /dev/null || skip_all "gzip is not installed"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$writer" --write "$tmp/profile.pb.gz"
ok $? "render_pprof() writes the example"
gzip -dc "$tmp/profile.pb.gz" > "$tmp/profile.pb"
ok $? "gzip -d reads it"
protoc --decode=perftools.profiles.Profile --proto_path="$(dirname "$proto")" "$proto" \
        < "$tmp/profile.pb" > "$tmp/decoded.txt" 2> "$tmp/err"
ok $? "protoc decodes it as perftools.profiles.Profile"

# Samples leaf first with one value per resource (gticks: cpu-time's hits times 10); locations
# and functions one per name; the string table from "".
sample() {      # sample VALUE... -- LOCATION...: one sample's text
        local l v=()
        while [ "$1" != "--" ]; do v+=("$1"); shift; done
        shift
        echo "sample {"
        for l in "$@"; do echo "  location_id: $l"; done
        for l in "${v[@]}"; do echo "  value: $l"; done
        echo "}"
}
{
        printf 'sample_type {\n  type: %s\n  unit: %s\n}\n' 1 2 3 4
        sample 20 0 -- 3 2 1
        sample 10 3 -- 4 1
        sample 0 1 -- 3 5 1
        for i in 1 2 3 4 5; do
                printf 'location {\n  id: %s\n  line {\n    function_id: %s\n  }\n}\n' $i $i
        done
        for i in 1 2 3 4 5; do
                printf 'function {\n  id: %s\n  name: %s\n}\n' $i $((i + 4))
        done
        for s in "" cpu-time milliseconds page-faults count main f g h k; do
                printf 'string_table: "%s"\n' "$s"
        done
        printf 'period_type {\n  type: 1\n  unit: 2\n}\nperiod: 10\n'
} > "$tmp/want.txt"
same_file "$tmp/decoded.txt" "$tmp/want.txt" "sample types, samples, locations, functions, strings, period"
grep -q '^ *[0-9][0-9]*:' "$tmp/decoded.txt"
is $? 1 "no field unknown to profile.proto"

printf 'main;bad\xff\xfeutf 4\nmain;ok 3\n' |
        "$cppctl" import --folded - --db "$tmp/n.db" -r cpu-time > /dev/null 2> "$tmp/err"
ok $? "import a folded stack whose name holds the bytes ff fe"
"$cppctl" export --db "$tmp/n.db" --format pprof -o "$tmp/n.pb.gz" 2> "$tmp/err" &&
        gzip -dc "$tmp/n.pb.gz" > "$tmp/n.pb"
ok $? "export it as pprof"
protoc --decode=perftools.profiles.Profile --proto_path="$(dirname "$proto")" "$proto" \
        < "$tmp/n.pb" > "$tmp/n.txt" 2> "$tmp/err"
ok $? "protoc decodes it: $(head -c 300 "$tmp/err")"
grep -qF 'string_table: "bad\357\277\275\357\277\275utf"' "$tmp/n.txt"
ok $? "each byte that is not UTF-8 is U+FFFD in the string table"
grep -qF 'string_table: "ok"' "$tmp/n.txt"
ok $? "the other names as they were"

done_testing
