-- cppd store, schema version 6: frames named after the fact. A frame stored as an address
-- ('prog+0x118d', its function unknown) is named later from debug info found then (`cppctl
-- symbolize`, views, the daemon's naming thread): its samples move to a stack of named frames,
-- and the frames that naming added say so, for the headers' "named later: N frames from M
-- modules".
-- named_later: 1 when the frame was added by naming after the fact, 0 when it was recorded so.
ALTER TABLE frame ADD COLUMN named_later INTEGER NOT NULL DEFAULT 0 CHECK (named_later IN (0, 1));
