-- cppd store, the current schema: what a new store is created with, at the version of the last
-- migration (NNNN-what.sql), which is what an older store is brought to. tests/unit/test-store.c
-- checks that a store made here and one made by the migrations have the same tables, columns,
-- types, defaults, constraints, indexes, views and triggers: a new migration comes with its
-- change here. schemas/README.md explains every table and column and why stacks are a trie.

CREATE TABLE run (
    id            INTEGER PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('import', 'record', 'attach', 'daemon')),
    command       TEXT,                 -- the profiled command line, or the cppctl command that imported
    source        TEXT,                 -- for imports: the file the samples came from
    host          TEXT NOT NULL,        -- uname -n of the machine that collected
    kernel        TEXT NOT NULL,        -- uname -r
    cppd_version  TEXT NOT NULL,
    unwind        TEXT CHECK (unwind IN ('fp', 'dwarf')),
    started       INTEGER NOT NULL,     -- unix seconds
    ended         INTEGER               -- unix seconds; NULL while running or if it crashed
);

CREATE TABLE resource (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL UNIQUE,         -- cpu-time, page-faults, ... or an event name
    unit  TEXT NOT NULL                 -- what one gtick is: '1 ms of CPU time'
);

CREATE TABLE run_resource (
    run_id       INTEGER NOT NULL REFERENCES run (id),
    resource_id  INTEGER NOT NULL REFERENCES resource (id),
    event        TEXT,                  -- the event behind it, e.g. 'software:cpu-clock'
    period       INTEGER NOT NULL CHECK (period > 0),   -- gticks per sample
    lost         INTEGER NOT NULL DEFAULT 0,            -- samples the kernel dropped
    -- 'random' (independent intervals drawn per sample, mean = period), 'fixed' (every period
    -- gticks, or redrawn only now and then: a loop whose cycle divides it is mis-measured), or ''
    -- when unknown (folded imports, runs stored before version 5)
    sampling     TEXT NOT NULL DEFAULT '',
    -- the most the collector thinned the resource under load, keeping 1 sample in this many
    -- (each then weighted by it in sample.hits); 1: never
    thinned      INTEGER NOT NULL DEFAULT 1 CHECK (thinned >= 1),
    -- processes whose resource the run could not count (alloc-*: an allocator of their own, no
    -- shared glibc), and the first of them with why, for the headers
    uncounted    INTEGER NOT NULL DEFAULT 0 CHECK (uncounted >= 0),
    uncounted_note TEXT NOT NULL DEFAULT '',
    -- samples that carried Python frames, of which those cut at the walker's bound, and Python
    -- frames that could not be read, for the headers
    python_samples INTEGER NOT NULL DEFAULT 0 CHECK (python_samples >= 0),
    python_cut   INTEGER NOT NULL DEFAULT 0 CHECK (python_cut >= 0),
    python_unreadable INTEGER NOT NULL DEFAULT 0 CHECK (python_unreadable >= 0),
    PRIMARY KEY (run_id, resource_id)
) WITHOUT ROWID;

CREATE TABLE module (
    id        INTEGER PRIMARY KEY,
    path      TEXT NOT NULL,            -- as mapped: /usr/lib/.../libc.so.6, [vdso], [kernel.kallsyms]
    build_id  TEXT NOT NULL DEFAULT '', -- lowercase hex; '' when unknown
    UNIQUE (path, build_id)
);

CREATE TABLE function (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,           -- symbol name; for an address no symbol covers, 'module+0xoffset'
    module_id  INTEGER REFERENCES module (id),  -- NULL when unknown (folded imports)
    unknown    INTEGER NOT NULL DEFAULT 0 CHECK (unknown IN (0, 1))  -- 1: name is not a symbol
);
CREATE UNIQUE INDEX function_key ON function (name, ifnull(module_id, 0));

CREATE TABLE frame (
    id           INTEGER PRIMARY KEY,
    function_id  INTEGER NOT NULL REFERENCES function (id),
    address      INTEGER,               -- module-relative address of the instruction; NULL if unknown
    file         TEXT,                  -- source file of that instruction (a call site for callers)
    line         INTEGER,               -- source line
    inlined      INTEGER NOT NULL DEFAULT 0 CHECK (inlined IN (0, 1)),  -- 1: inlined into its caller
    -- 1: added by naming a frame stored as an address after the fact (cppctl symbolize)
    named_later  INTEGER NOT NULL DEFAULT 0 CHECK (named_later IN (0, 1))
);
CREATE UNIQUE INDEX frame_key ON frame (function_id, ifnull(address, -1), ifnull(file, ''),
                                        ifnull(line, -1), inlined);

CREATE TABLE stack (
    id         INTEGER PRIMARY KEY,
    parent_id  INTEGER REFERENCES stack (id),   -- the stack without its innermost frame; NULL at depth 1
    frame_id   INTEGER NOT NULL REFERENCES frame (id),
    depth      INTEGER NOT NULL CHECK (depth > 0)
);
CREATE UNIQUE INDEX stack_key ON stack (ifnull(parent_id, 0), frame_id);

CREATE TABLE process (
    id       INTEGER PRIMARY KEY,
    run_id   INTEGER NOT NULL REFERENCES run (id),
    pid      INTEGER,                   -- NULL for imported samples
    comm     TEXT,                      -- task name (at most 15 bytes in the kernel)
    exe      TEXT,                      -- executable path
    unit     TEXT,                      -- systemd unit, NULL if none
    started  INTEGER,                   -- unix seconds, first seen
    ended    INTEGER                    -- unix seconds, exit seen
);
CREATE INDEX process_run ON process (run_id);

CREATE TABLE thread (
    id          INTEGER PRIMARY KEY,
    process_id  INTEGER NOT NULL REFERENCES process (id),
    tid         INTEGER,                -- NULL for imported samples
    comm        TEXT
);
CREATE INDEX thread_process ON thread (process_id);

CREATE TABLE sample (
    resource_id  INTEGER NOT NULL REFERENCES resource (id),
    bucket       INTEGER NOT NULL,      -- start of the time bucket, unix seconds
    thread_id    INTEGER NOT NULL REFERENCES thread (id),
    stack_id     INTEGER NOT NULL REFERENCES stack (id),   -- the stack's innermost frame
    hits         INTEGER NOT NULL CHECK (hits >= 0),       -- sample hits (a sample may carry several)
    samples      INTEGER NOT NULL CHECK (samples >= 0),    -- raw samples taken
    -- the sum over the row's samples of each sample's hits squared. Weighted samples (random
    -- thinning: a sample kept 1 in K carries K/period hits) make the error of a sum wider than
    -- hits/samples says; views widen their bars by sqrt(sum of hits_squared / sum of hits).
    -- 0 when unknown (rows stored before version 5, imports): each sample then counts hits/samples.
    hits_squared INTEGER NOT NULL DEFAULT 0 CHECK (hits_squared >= 0),
    PRIMARY KEY (resource_id, bucket, thread_id, stack_id)
) WITHOUT ROWID;

-- The text of every stack that has samples, root first, frames separated by ';'.
CREATE VIEW stack_text (stack_id, depth, text) AS
WITH RECURSIVE walk (stack_id, depth, node, text) AS (
    SELECT s.id, s.depth, s.parent_id, f.name
      FROM (SELECT DISTINCT stack_id FROM sample) AS used
      JOIN stack AS s ON s.id = used.stack_id
      JOIN frame AS fr ON fr.id = s.frame_id
      JOIN function AS f ON f.id = fr.function_id
    UNION ALL
    SELECT w.stack_id, w.depth, s.parent_id, f.name || ';' || w.text
      FROM walk AS w
      JOIN stack AS s ON s.id = w.node
      JOIN frame AS fr ON fr.id = s.frame_id
      JOIN function AS f ON f.id = fr.function_id
)
SELECT stack_id, depth, text FROM walk WHERE node IS NULL;

-- Every sample row with its names: the one SELECT behind most questions.
CREATE VIEW sample_text AS
SELECT r.name AS resource, p.run_id, p.pid, t.tid, coalesce(t.comm, p.comm) AS comm, p.exe,
       p.unit, s.bucket, datetime(s.bucket, 'unixepoch') AS time, st.text AS stack,
       s.hits, s.samples, rr.period, s.hits * rr.period AS gticks
  FROM sample AS s
  JOIN resource AS r ON r.id = s.resource_id
  JOIN thread AS t ON t.id = s.thread_id
  JOIN process AS p ON p.id = t.process_id
  JOIN run_resource AS rr ON rr.run_id = p.run_id AND rr.resource_id = s.resource_id
  JOIN stack_text AS st ON st.stack_id = s.stack_id;

-- Per resource and run: how much was sampled, at what period, and what was lost.
CREATE VIEW resource_total AS
SELECT r.name AS resource, rr.run_id, r.unit, rr.period, rr.lost,
       (SELECT coalesce(sum(s.hits), 0) FROM sample AS s
          JOIN thread AS t ON t.id = s.thread_id
          JOIN process AS p ON p.id = t.process_id
         WHERE s.resource_id = rr.resource_id AND p.run_id = rr.run_id) AS hits,
       (SELECT coalesce(sum(s.samples), 0) FROM sample AS s
          JOIN thread AS t ON t.id = s.thread_id
          JOIN process AS p ON p.id = t.process_id
         WHERE s.resource_id = rr.resource_id AND p.run_id = rr.run_id) AS samples
  FROM run_resource AS rr
  JOIN resource AS r ON r.id = rr.resource_id;

-- The body profile in SQL: hits per resource and innermost function (prof(1) for any resource).
CREATE VIEW body_hits AS
SELECT r.name AS resource, f.name AS function, m.path AS module, sum(s.hits) AS hits
  FROM sample AS s
  JOIN resource AS r ON r.id = s.resource_id
  JOIN stack AS st ON st.id = s.stack_id
  JOIN frame AS fr ON fr.id = st.frame_id
  JOIN function AS f ON f.id = fr.function_id
  LEFT JOIN module AS m ON m.id = f.module_id
 GROUP BY r.name, f.id;

-- Time buckets, for time-window queries (--since, --until) and for retention, which deletes the
-- oldest buckets first.
CREATE INDEX sample_bucket ON sample (bucket);

-- An identity, a generation and a token, so that what cppctl derives from a store and keeps
-- elsewhere (the tree indexes of big stores, in a cache directory) is used only while the store
-- is that store, unchanged. Two copies of one store that took changes of the same shape reach
-- the same generation, and a copy over the other in place keeps the file's inode: the token,
-- drawn anew by each change, tells them apart.
CREATE TABLE store_state (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    uuid        TEXT NOT NULL,          -- random hex, made with the store
    generation  INTEGER NOT NULL,       -- bumped by every change to what a view reads
    token       TEXT NOT NULL DEFAULT ''    -- random hex, drawn anew by every such change
);
INSERT INTO store_state (id, uuid, generation, token)
VALUES (1, lower(hex(randomblob(16))), 0, lower(hex(randomblob(8))));

-- The bumps: triggers, so that a store edited by hand counts too. New stacks, frames, functions
-- and modules change nothing until a sample refers to them, which bumps.
CREATE TRIGGER sample_inserted AFTER INSERT ON sample BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER sample_updated AFTER UPDATE ON sample BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER sample_deleted AFTER DELETE ON sample BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER run_resource_inserted AFTER INSERT ON run_resource BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER run_resource_updated AFTER UPDATE ON run_resource BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER run_resource_deleted AFTER DELETE ON run_resource BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER resource_updated AFTER UPDATE ON resource BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER resource_deleted AFTER DELETE ON resource BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER stack_updated AFTER UPDATE ON stack BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER stack_deleted AFTER DELETE ON stack BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER frame_updated AFTER UPDATE ON frame BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER frame_deleted AFTER DELETE ON frame BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER function_updated AFTER UPDATE ON function BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER function_deleted AFTER DELETE ON function BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER module_updated AFTER UPDATE ON module BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER module_deleted AFTER DELETE ON module BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
CREATE TRIGGER store_state_kept BEFORE DELETE ON store_state BEGIN SELECT RAISE(ABORT, 'store_state is the store''s identity'); END;
