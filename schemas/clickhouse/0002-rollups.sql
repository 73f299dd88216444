-- cppd fleet store in ClickHouse, schema version 2: the samples rolled up by the hour, so that a
-- question over many hosts and days reads a row per (resource, unit, hour, stack, period, busy)
-- instead of one per host, minute, process and thread. A materialized view fills the rollup from
-- every INSERT into samples, whoever sends it (cppd's shipper, `cppctl merge -o`, an INSERT by
-- hand), so it never lags the samples. Sums in a SummingMergeTree are final only after merges:
-- readers always sum again (common/fleet/ch-read.c), so no answer depends on when parts merge.
-- schemas/README.md ("Rollups") explains the columns and when cppctl reads them; an existing
-- version 1 database is upgraded and back-filled by common/fleet/ch-schema.c, not by this file
-- alone.

CREATE TABLE IF NOT EXISTS {db}.samples_hourly (
    resource     String,
    unit         String,
    hour         DateTime,      -- the sample's time rounded down to a multiple of 3600 s
    stack        UInt64,        -- stacks.hash
    period       UInt64,
    busy         UInt8,         -- 1: pid > 0 (what --no-idle keeps), 0: idle or unknown
    sum_hits     UInt64,
    sum_samples  UInt64,
    sum_squares  Float64        -- the sum of squared hits as ch-read.c sums them from samples
) ENGINE = SummingMergeTree PARTITION BY toYYYYMM(hour)
  ORDER BY (resource, unit, hour, stack, period, busy);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.samples_hourly_mv TO {db}.samples_hourly AS
SELECT resource, unit, toDateTime(intDiv(toUInt32(time), 3600) * 3600) AS hour, stack, period,
    toUInt8(pid > 0) AS busy, sum(hits) AS sum_hits, sum(samples) AS sum_samples,
    sum(if(hits_squared > 0, toFloat64(hits_squared),
           floor(toFloat64(hits) * hits / greatest(samples, 1)))) AS sum_squares
FROM {db}.samples GROUP BY resource, unit, hour, stack, period, busy;
