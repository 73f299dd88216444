-- cppd store, schema version 3: an identity and a generation, so that what cppctl derives from a
-- store and keeps elsewhere (the tree indexes of big stores, in a cache directory) is used only
-- while the store is that store, unchanged.
CREATE TABLE store_state (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    uuid        TEXT NOT NULL,          -- random hex, made with the store (or by this migration)
    generation  INTEGER NOT NULL        -- bumped by every change to what a view reads
);
INSERT INTO store_state (id, uuid, generation) VALUES (1, lower(hex(randomblob(16))), 0);

-- The bumps: triggers, so that a store edited by hand counts too. New stacks, frames, functions
-- and modules change nothing until a sample refers to them, which bumps.
CREATE TRIGGER sample_inserted AFTER INSERT ON sample BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER sample_updated AFTER UPDATE ON sample BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER sample_deleted AFTER DELETE ON sample BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER run_resource_inserted AFTER INSERT ON run_resource BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER run_resource_updated AFTER UPDATE ON run_resource BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER run_resource_deleted AFTER DELETE ON run_resource BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER resource_updated AFTER UPDATE ON resource BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER resource_deleted AFTER DELETE ON resource BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER stack_updated AFTER UPDATE ON stack BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER stack_deleted AFTER DELETE ON stack BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER frame_updated AFTER UPDATE ON frame BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER frame_deleted AFTER DELETE ON frame BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER function_updated AFTER UPDATE ON function BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER function_deleted AFTER DELETE ON function BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER module_updated AFTER UPDATE ON module BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER module_deleted AFTER DELETE ON module BEGIN UPDATE store_state SET generation = generation + 1; END;
CREATE TRIGGER store_state_kept BEFORE DELETE ON store_state BEGIN SELECT RAISE(ABORT, 'store_state is the store''s identity'); END;
