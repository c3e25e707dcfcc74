-- Foreground-aware delivery (docs/foreground.md): which activities have their app open, as the relays of a cluster
-- report it in stream_presence, and what leaving the foreground queues.

-- How long a relay's streams count after its last heartbeat (it beats every 5 s): a relay that dies stops counting
-- within this, and its rows are deleted by the next sweep of any relay after it.
CREATE OR REPLACE FUNCTION liverelay_presence_window() RETURNS interval
LANGUAGE sql IMMUTABLE AS $$ SELECT interval '20 seconds' $$;

-- Whether an activity is foreground: a live relay holds a stream of its device (authorised by that device's token)
-- or of its session (authorised by its pairing secret). The live relays are read first and the streams probed by
-- device or session only: a plan made while the tables were empty could otherwise walk a relay's every stream for
-- each activity. PL/pgSQL so that a session plans its statements once (a SQL function with a subquery is never
-- inlined, and would be planned again at every call). The claim writes the same test inline (sql/040_delivery.sql).
CREATE OR REPLACE FUNCTION liverelay_is_foreground(p_device uuid, p_secret_hash text, p_session text)
RETURNS boolean LANGUAGE plpgsql STABLE AS $$
DECLARE
    live uuid[];
BEGIN
    SELECT coalesce(array_agg(r.id), '{}') INTO live FROM relay_instance r
    WHERE r.heartbeat_at > statement_timestamp() - liverelay_presence_window();
    RETURN EXISTS (SELECT 1 FROM stream_presence p WHERE p.device_uuid = p_device AND p.relay_id = ANY (live))
        OR EXISTS (SELECT 1 FROM stream_presence p
                   WHERE p.secret_hash = p_secret_hash AND p.session_id = p_session AND p.relay_id = ANY (live));
END $$;

-- Activities whose updates were skipped while foreground and that are foreground no more: their latest state is
-- queued (the planner sends it unless it was sent meanwhile) and their skip forgotten. Returns the queued rows.
CREATE OR REPLACE FUNCTION liverelay_catch_up_foreground() RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
    queued bigint[];
BEGIN
    WITH behind AS (
        DELETE FROM activity_foreground_skip s
        WHERE NOT EXISTS (SELECT 1 FROM activity_registration a
                          WHERE a.id = s.activity_id
                            AND liverelay_is_foreground(a.device_uuid, a.secret_hash, a.session_id))
        RETURNING s.activity_id
    ), queued AS (
        INSERT INTO delivery_outbox (kind, activity_id, event_type, secret_hash, session_id)
        SELECT 'activity', a.id, 'update', a.secret_hash, a.session_id
        FROM behind b JOIN activity_registration a ON a.id = b.activity_id
        WHERE a.status = 'active'
        ORDER BY a.id
        RETURNING id
    )
    SELECT array_agg(id) INTO queued FROM queued;
    IF queued IS NOT NULL THEN
        PERFORM liverelay_wake(queued);
    END IF;
    RETURN queued;
END $$;

-- A relay's beat, in one round trip: its heartbeat (which keeps its streams counting), the streams it opened and
-- closed since its last call -- the device streams entered (parallel arrays: one element per stream and device
-- channel), the session streams entered (one per stream and session channel), the streams left -- and, with `sweep`,
-- the removal of relays whose heartbeat stopped (their streams go with them). `replace_all`: the entered streams are
-- all the relay holds (its earlier rows go). What stops counting may leave activities behind a skip: they are caught
-- up. Returns true when the relay's row had to be created (first beat, or another relay swept it after a pause longer
-- than the window): the relay then enters all its streams again.
CREATE OR REPLACE FUNCTION liverelay_presence_update(
    relay uuid, device_streams bigint[], devices uuid[], session_streams bigint[], secret_hashes text[],
    sessions text[], left_streams bigint[], replace_all boolean, sweep boolean
) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    created boolean;
    swept integer := 0;
BEGIN
    INSERT INTO relay_instance AS r (id) VALUES (relay)
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = statement_timestamp()
    RETURNING (r.xmax = 0) INTO created;
    IF replace_all THEN
        DELETE FROM stream_presence WHERE relay_id = relay;
    ELSIF cardinality(left_streams) > 0 THEN
        DELETE FROM stream_presence WHERE relay_id = relay AND stream_id = ANY (left_streams);
    END IF;
    INSERT INTO stream_presence (relay_id, stream_id, device_uuid)
    SELECT relay, e.stream, e.device FROM unnest(device_streams, devices) AS e(stream, device);
    INSERT INTO stream_presence (relay_id, stream_id, secret_hash, session_id)
    SELECT relay, e.stream, e.secret_hash, e.session
    FROM unnest(session_streams, secret_hashes, sessions) AS e(stream, secret_hash, session);
    IF sweep THEN
        DELETE FROM relay_instance WHERE heartbeat_at < statement_timestamp() - liverelay_presence_window();
    END IF;
    IF sweep OR replace_all OR cardinality(left_streams) > 0 THEN
        PERFORM liverelay_catch_up_foreground();
    END IF;
    RETURN created;
END $$;

-- A relay that stops: its streams stop counting at once.
CREATE OR REPLACE FUNCTION liverelay_presence_leave(relay uuid) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM relay_instance WHERE id = relay;
    PERFORM liverelay_catch_up_foreground();
END $$;
