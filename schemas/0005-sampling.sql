-- cppd store, schema version 5: how each run drew the intervals between its samples, and how far
-- overload thinned them, so that every view's header can say so.
-- sampling: 'random' (independent intervals drawn per sample, mean = period), 'fixed' (every
-- period gticks, or redrawn only now and then: a loop whose cycle divides it is mis-measured), or
-- '' when unknown (folded imports, runs stored before version 5).
ALTER TABLE run_resource ADD COLUMN sampling TEXT NOT NULL DEFAULT '';
-- thinned: the most the collector thinned the resource under load, keeping 1 sample in this many
-- (each then weighted by it in sample.hits); 1: never.
ALTER TABLE run_resource ADD COLUMN thinned INTEGER NOT NULL DEFAULT 1 CHECK (thinned >= 1);
-- hits_squared: the sum over the row's samples of each sample's hits squared. Weighted samples
-- (random thinning: a sample kept 1 in K carries K/period hits) make the error of a sum wider
-- than hits/samples says; views widen their bars by sqrt(sum of hits_squared / sum of hits).
-- 0 when unknown (rows stored before version 5, imports): each sample then counts hits/samples.
ALTER TABLE sample ADD COLUMN hits_squared INTEGER NOT NULL DEFAULT 0 CHECK (hits_squared >= 0);
