#!/bin/sh
# pgbench.sh BINDIR DIR init|run [SECONDS]: a PostgreSQL server on a unix socket in DIR (no TCP),
# data in DIR/data, fsync off (the CPU is what is measured, not the disk). init: start, pgbench -i
# (scale 1), stop. run: start, pgbench for SECONDS with 2 clients, stop. Runs as the server's user.
set -eu
bin=$1 dir=$2
export PGHOST="$dir" PGUSER=postgres PGDATABASE=postgres
"$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -s \
        -o "-k $dir -c listen_addresses= -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start
status=0
if [ "$3" = init ]; then
        "$bin/pgbench" -i -q -s 1 || status=$?
else
        "$bin/pgbench" -n -c 2 -j 2 -T "${4:-2}" || status=$?
fi
"$bin/pg_ctl" -D "$dir/data" -w -s -m fast stop
exit $status
