-- cppd store, schema version 2: an index on sample time buckets, for time-window queries
-- (--since, --until) and for retention, which deletes the oldest buckets first.
CREATE INDEX sample_bucket ON sample (bucket);
