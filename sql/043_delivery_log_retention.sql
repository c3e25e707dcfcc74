-- The delivery log's retention (LIVERELAY_DELIVERY_LOG_RETENTION, 30 days by default; DeliveryLogRetention prunes
-- every 10 minutes, on every relay).
--
-- Deletes up to `batch` rows older than `keep` and returns how many: the caller repeats it until fewer come back, so
-- a first prune of a years-old log is many short transactions, never one that holds millions of rows' locks and a
-- snapshot that keeps vacuum from cleaning up behind the deliveries. Rows another relay's prune holds are passed over
-- (SKIP LOCKED), not waited for.
--
-- The oldest rows are the first `batch` by id (ids are handed out as rows are written), read from the primary key's
-- head, so a prune with nothing to delete reads one batch of rows, however large the log. Not by `created_at`: once
-- pruning frees the table's first pages, new rows fill them, and then neither a scan of the table from its start nor
-- the BRIN index on `created_at` (whose ranges only ever widen) finds the old rows without reading everything.
CREATE OR REPLACE FUNCTION liverelay_prune_delivery_log(keep interval, batch integer) RETURNS integer
LANGUAGE sql VOLATILE
-- (Arrays, not `IN (subquery)`: the planner cannot know that the head is `batch` rows, and joined the old rows it
-- guessed from the statistics (hundreds of thousands, with the JIT compiler) to it instead of looking the head up.)
SET jit = off AS $$
    WITH gone AS (
        DELETE FROM delivery_log d
        WHERE d.id = ANY (ARRAY(
            SELECT l.id FROM delivery_log l
            WHERE l.id = ANY (ARRAY(SELECT h.id FROM delivery_log h ORDER BY h.id LIMIT batch))
              AND l.created_at < now() - keep
            FOR UPDATE SKIP LOCKED))
        RETURNING 1
    )
    SELECT count(*)::integer FROM gone
$$;
