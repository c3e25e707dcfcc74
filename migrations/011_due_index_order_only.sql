-- The due index orders the queue by (next_attempt_at, id + 0) instead of (next_attempt_at, id): the same order, but
-- `id` is no longer one of its keys. With `id` as its second key, a lookup by `id = ANY (claimed)` could take this
-- index instead of the primary key, and did whenever the drained queue's statistics described it as empty (after a
-- vacuum or an analyze): the planner costs such a scan once, while a btree walks the whole index once per element of
-- the array (BENCHMARKS.md, issue 20's ninth round: a 1,000-channel update at half speed after a bulk). A lookup by
-- id can now only use the primary key.
DROP INDEX delivery_outbox_due;
CREATE INDEX delivery_outbox_due ON delivery_outbox (next_attempt_at, (id + 0));
