-- cppd store, schema version 7: processes whose resource a run could not count, for the headers.
-- alloc-bytes and alloc-count are counted inside each process (a preloaded library, or uprobes on
-- its glibc's allocator): a process with an allocator of its own, without a shared glibc, or past
-- the daemon's cap of probed processes is not measured, and every view's header says so.
-- uncounted: such processes in the run; uncounted_note: the first of them and why, in words.
ALTER TABLE run_resource ADD COLUMN uncounted INTEGER NOT NULL DEFAULT 0 CHECK (uncounted >= 0);
ALTER TABLE run_resource ADD COLUMN uncounted_note TEXT NOT NULL DEFAULT '';
