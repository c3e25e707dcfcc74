-- The stream's retention (BroadcastHub prunes every 10 minutes, on every relay).
--
-- Events older than `keep` are deleted, and the highest sequence deleted is kept in relay_setting
-- (`broadcast_log_pruned_through`): a client that resumes from an older id has missed events that are gone, and is
-- told so (a `resync` event, StreamRoutes) rather than resumed as if nothing was missing. Returns how many were
-- deleted.
CREATE OR REPLACE FUNCTION liverelay_prune_broadcast_log(keep interval) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    deleted bigint;
    through bigint;
BEGIN
    WITH gone AS (DELETE FROM broadcast_log WHERE created_at < now() - keep RETURNING seq)
    SELECT count(*), max(seq) INTO deleted, through FROM gone;
    IF through IS NOT NULL THEN
        INSERT INTO relay_setting (name, value) VALUES ('broadcast_log_pruned_through', through::text)
        ON CONFLICT (name) DO UPDATE SET value = greatest(relay_setting.value::bigint, through)::text;
    END IF;
    RETURN deleted;
END $$;

-- The highest sequence pruned from the stream's log, 0 when none was.
CREATE OR REPLACE FUNCTION liverelay_broadcast_log_pruned_through() RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT value::bigint FROM relay_setting WHERE name = 'broadcast_log_pruned_through'), 0)
$$;

-- The highest sequence the stream's log has handed out (0 before the first event), written or rolled back: no event
-- a client has read can be above it, unless the log was reset since (a database replaced).
CREATE OR REPLACE FUNCTION liverelay_broadcast_log_head() RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('broadcast_log', 'seq')::regclass), 0)
$$;
