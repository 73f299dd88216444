-- cppd fleet store in ClickHouse, schema version 1: what each host's SQLite store holds (runs,
-- their resources, stacks, samples with process, thread, unit and time bucket), shipped by the
-- hosts in batches of one time bucket of one run, asked by cppctl with --db clickhouse://...
-- schemas/README.md ("ClickHouse fleet store") explains every table and column and the order of
-- each table. Only what both ClickHouse 18.16 (Debian 12) and current ClickHouse support:
-- MergeTree engines with PARTITION BY / ORDER BY, Array columns, TinyLog, standard aggregates.
-- cppctl applies each statement (they are separated by ';' at the end of a line) over HTTP with
-- {db} replaced by the database of the URL.

CREATE DATABASE IF NOT EXISTS {db};

CREATE TABLE IF NOT EXISTS {db}.schema_version (
    version  UInt32,
    applied  DateTime
) ENGINE = TinyLog;

CREATE TABLE IF NOT EXISTS {db}.runs (
    host          String,       -- uname -n of the machine that collected (or the name it ships as)
    run           UInt64,       -- the run's id in that host's own SQLite store
    kind          String,       -- 'import', 'record', 'attach', 'daemon'
    command       String,
    source        String,       -- for imports: the file the samples came from
    kernel        String,
    cppd_version  String,
    unwind        String,       -- 'fp', 'dwarf' or ''
    started       DateTime,
    ended         DateTime,     -- 0 (1970-01-01 00:00:00) while running or if it crashed
    updated       UInt64        -- when the host wrote this row (unix ms): the newest row wins
) ENGINE = ReplacingMergeTree(updated) ORDER BY (host, run);

CREATE TABLE IF NOT EXISTS {db}.run_resources (
    host      String,
    run       UInt64,
    resource  String,           -- cpu-time, page-faults, ... or an event name
    unit      String,           -- what one gtick is: '1 ms of CPU time'
    event     String,           -- the event behind it, e.g. 'software:cpu-clock'; '' if none
    period    UInt64,           -- gticks per sample
    lost      UInt64,           -- samples the kernel dropped so far (cumulative)
    updated   UInt64            -- unix ms: the newest row (the latest lost count) wins
) ENGINE = ReplacingMergeTree(updated) ORDER BY (host, run, resource);

CREATE TABLE IF NOT EXISTS {db}.stacks (
    hash       UInt64,          -- 64-bit FNV-1a of the frames (common/fleet/ch-write.c)
    functions  Array(String),   -- root first; names as stored (mangled)
    modules    Array(String),   -- the module path of each frame's function; '' if unknown
    build_ids  Array(String),   -- that module's build id, lowercase hex; '' if unknown
    files      Array(String),   -- source file of the frame's instruction; '' if unknown
    lines      Array(UInt32),   -- its line; 0 if unknown
    addresses  Array(Int64),    -- module-relative address; -1 if unknown
    inlined    Array(UInt8),    -- 1: inlined into its caller
    unknown    Array(UInt8)     -- 1: the name is not a symbol
) ENGINE = ReplacingMergeTree ORDER BY hash;

CREATE TABLE IF NOT EXISTS {db}.samples (
    time         DateTime,      -- start of the time bucket
    host         String,
    run          UInt64,
    batch        UInt64,        -- the batch that carried the row: its bucket, unix seconds
    resource     String,
    period       UInt64,        -- gticks per sample of the run for this resource
    unit         String,        -- systemd unit; '' if none
    pid          Int64,         -- -1 if unknown (imported samples)
    tid          Int64,         -- -1 if unknown
    comm         String,        -- process name
    thread_comm  String,        -- thread name
    exe          String,        -- executable path
    stack        UInt64,        -- stacks.hash
    hits         UInt64,
    samples      UInt64
) ENGINE = MergeTree PARTITION BY toYYYYMM(time) ORDER BY (resource, unit, time, host, stack);

CREATE TABLE IF NOT EXISTS {db}.batches (
    host   String,
    run    UInt64,
    batch  UInt64,
    rows   UInt64,              -- sample rows of the batch
    hits   UInt64,              -- their hits
    sent   DateTime
) ENGINE = MergeTree ORDER BY (host, run, batch);
