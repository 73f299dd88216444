-- cppd store, schema version 4: a token drawn at random by every change, beside the generation.
-- Two copies of one store that took changes of the same shape reach the same generation, and a
-- copy over the other in place keeps the file's inode: the generation and the file alone let a
-- view map the cached index of the other copy's contents. The token is drawn anew by each change,
-- so no two stores share it unless one is a byte copy of the other as it is now.
ALTER TABLE store_state ADD COLUMN token TEXT NOT NULL DEFAULT '';
UPDATE store_state SET token = lower(hex(randomblob(8)));

DROP TRIGGER sample_inserted;
CREATE TRIGGER sample_inserted AFTER INSERT ON sample BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
DROP TRIGGER sample_updated;
CREATE TRIGGER sample_updated AFTER UPDATE ON sample BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
DROP TRIGGER sample_deleted;
CREATE TRIGGER sample_deleted AFTER DELETE ON sample BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
DROP TRIGGER run_resource_inserted;
CREATE TRIGGER run_resource_inserted AFTER INSERT ON run_resource BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
DROP TRIGGER run_resource_updated;
CREATE TRIGGER run_resource_updated AFTER UPDATE ON run_resource BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
DROP TRIGGER run_resource_deleted;
CREATE TRIGGER run_resource_deleted AFTER DELETE ON run_resource BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
DROP TRIGGER resource_updated;
CREATE TRIGGER resource_updated AFTER UPDATE ON resource BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
DROP TRIGGER resource_deleted;
CREATE TRIGGER resource_deleted AFTER DELETE ON resource BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
DROP TRIGGER stack_updated;
CREATE TRIGGER stack_updated AFTER UPDATE ON stack BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
DROP TRIGGER stack_deleted;
CREATE TRIGGER stack_deleted AFTER DELETE ON stack BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
DROP TRIGGER frame_updated;
CREATE TRIGGER frame_updated AFTER UPDATE ON frame BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
DROP TRIGGER frame_deleted;
CREATE TRIGGER frame_deleted AFTER DELETE ON frame BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
DROP TRIGGER function_updated;
CREATE TRIGGER function_updated AFTER UPDATE ON function BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
DROP TRIGGER function_deleted;
CREATE TRIGGER function_deleted AFTER DELETE ON function BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
DROP TRIGGER module_updated;
CREATE TRIGGER module_updated AFTER UPDATE ON module BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
DROP TRIGGER module_deleted;
CREATE TRIGGER module_deleted AFTER DELETE ON module BEGIN UPDATE store_state SET generation = generation + 1, token = lower(hex(randomblob(8))); END;
