-- The delivery log's retention (LIVERELAY_DELIVERY_LOG_RETENTION, 30 days by default; DeliveryLogRetention prunes
-- every 10 minutes, on every relay).
--
-- Deletes up to `batch` rows older than `keep` and returns how many: the caller repeats it until fewer come back, so
-- a first prune of a years-old log is many short transactions, never one that holds millions of rows' locks and a
-- snapshot that keeps vacuum from cleaning up behind the deliveries. Rows another relay's prune holds are passed over
-- (SKIP LOCKED), not waited for. The old rows are found through the BRIN index on created_at, which reads only the
-- block ranges that can hold them (the log is appended to in time order), and the LIMIT ends the scan at `batch`.
CREATE OR REPLACE FUNCTION liverelay_prune_delivery_log(keep interval, batch integer) RETURNS integer
LANGUAGE sql VOLATILE AS $$
    WITH gone AS (
        DELETE FROM delivery_log
        WHERE id IN (SELECT l.id FROM delivery_log l WHERE l.created_at < now() - keep
                     LIMIT batch FOR UPDATE SKIP LOCKED)
        RETURNING 1
    )
    SELECT count(*)::integer FROM gone
$$;
