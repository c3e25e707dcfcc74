-- The two logs are appended in created_at order and only ever searched by age (pruning, the last 24 hours):
-- a BRIN index answers that from a summary per block range, where a B-tree cost an index entry (and its WAL)
-- on every insert, in the writer's transaction for broadcast_log and in every batch for delivery_log.
DROP INDEX broadcast_log_created;
CREATE INDEX broadcast_log_created ON broadcast_log USING brin (created_at);
DROP INDEX delivery_log_created;
CREATE INDEX delivery_log_created ON delivery_log USING brin (created_at);
