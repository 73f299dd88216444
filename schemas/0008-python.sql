-- cppd store, schema version 8: what a run's Python frames were, for the headers.
-- python_samples: samples of the resource that carried Python frames (read in the kernel at each
-- sample of a CPython process); python_cut: of which those whose outermost Python frames were
-- left out (deeper than the walker's bound); python_unreadable: Python frames stored as
-- [python: unreadable] (a code object that could not be read or checked).
ALTER TABLE run_resource ADD COLUMN python_samples INTEGER NOT NULL DEFAULT 0 CHECK (python_samples >= 0);
ALTER TABLE run_resource ADD COLUMN python_cut INTEGER NOT NULL DEFAULT 0 CHECK (python_cut >= 0);
ALTER TABLE run_resource ADD COLUMN python_unreadable INTEGER NOT NULL DEFAULT 0 CHECK (python_unreadable >= 0);
