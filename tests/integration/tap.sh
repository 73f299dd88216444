# TAP helpers for the shell integration tests: ok, is, skip_all, done.
tap_n=0
tap_failed=0

ok() {      # ok CONDITION-EXIT-STATUS DESCRIPTION: "ok $? 'what'"
        tap_n=$((tap_n + 1))
        if [ "$1" -eq 0 ]; then
                echo "ok $tap_n - $2"
        else
                echo "not ok $tap_n - $2"
                tap_failed=$((tap_failed + 1))
        fi
}

is() {      # is GOT WANT DESCRIPTION
        tap_n=$((tap_n + 1))
        if [ "$1" = "$2" ]; then
                echo "ok $tap_n - $3"
        else
                echo "not ok $tap_n - $3"
                echo "#   got:  $1" | head -20
                echo "#   want: $2" | head -20
                tap_failed=$((tap_failed + 1))
        fi
}

same_file() {   # same_file GOT_FILE WANT_FILE DESCRIPTION
        tap_n=$((tap_n + 1))
        if diff -u "$2" "$1" > /dev/null; then
                echo "ok $tap_n - $3"
        else
                echo "not ok $tap_n - $3"
                diff -u "$2" "$1" | head -40 | sed 's/^/#   /'
                tap_failed=$((tap_failed + 1))
        fi
}

skip_all() {    # skip_all REASON: the whole test cannot run here (meson: SKIP)
        echo "1..0 # SKIP $1"
        exit 77
}

done_testing() {
        echo "1..$tap_n"
        [ "$tap_failed" -eq 0 ]
}
