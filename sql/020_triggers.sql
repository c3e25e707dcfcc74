-- What a SQL write does (README "What a SQL write does"): triggers record deliveries and broadcast events in the
-- writer's transaction.
-- Statement-level triggers with transition tables: one pass per statement, however many rows it touches.

-- Wake idle relays (a relay that reads the write-ahead log for commits says busy: WALWatcher). Gated by relay_wakeup
-- so that busy relays (which re-scan until the outbox is empty) do not make every writer take NOTIFY's commit lock:
-- the first writer to find a relay idle marks it busy and notifies; writers that come while that writer's
-- transaction is open (the row is locked: skipped) or after it (busy) do not. A rolled-back writer undoes its mark. A
-- writer that finds every relay busy relies on the relay re-scanning after it marks itself idle again: it does so at
-- once, and again whenever one of the transactions that were in progress just after it said idle ends (such a writer
-- is one of them: it has written, so it has a transaction id).

-- `queued`: the outbox rows this statement queued. A notification names them when they are few (a row written alone:
-- the common case), so that the woken worker claims them by primary key (liverelay_claim_deliveries with `ids`) rather
-- than by scanning the queue; rows of later statements of the transaction, and of large statements, are found by a
-- general claim (the one that follows a batch, or the re-scan when the relay goes idle).
CREATE OR REPLACE FUNCTION liverelay_wake(queued bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    -- A transaction that has woken a relay is done: its NOTIFY goes out at its commit. (The flag is
    -- transaction-local, and rolled back with the subtransaction that set it, as the NOTIFY is.) Until then every
    -- statement looks again: the check closest to the commit is the one that counts.
    IF current_setting('liverelay.woken', true) = 'yes' THEN
        RETURN;
    END IF;
    -- A relay refreshes its row at least every 30 s; an older row is a relay that died, not one that waits.
    UPDATE relay_wakeup SET idle = false
    WHERE instance_id IN (SELECT instance_id FROM relay_wakeup
                          WHERE idle AND updated_at > now() - interval '2 minutes' FOR UPDATE SKIP LOCKED);
    -- A relay that reads the write-ahead log (its row says busy: reads_wal) sees this commit when it is flushed,
    -- which for an asynchronous commit is up to wal_writer_delay later: such a writer notifies it.
    IF FOUND OR (current_setting('synchronous_commit') = 'off'
                 AND EXISTS (SELECT 1 FROM relay_wakeup
                             WHERE reads_wal AND updated_at > now() - interval '2 minutes')) THEN
        PERFORM set_config('liverelay.woken', 'yes', true);
        PERFORM pg_notify('liverelay_wake', CASE WHEN cardinality(queued) BETWEEN 1 AND 32
                                                 THEN array_to_string(queued, ',') ELSE '' END);
    END IF;
END $$;

CREATE OR REPLACE FUNCTION liverelay_wake() RETURNS void
LANGUAGE sql AS $$
    SELECT liverelay_wake(NULL::bigint[])
$$;

-- The HTTP request a write belongs to (set by the relay's routes with set_config), so it can report the outcomes.
CREATE OR REPLACE FUNCTION liverelay_request_id() RETURNS uuid
LANGUAGE sql STABLE AS $$
    SELECT nullif(current_setting('liverelay.request_id', true), '')::uuid
$$;

-- An alert to show with the next update of the written activities (set by PATCH /v1/live-activities/{id}).
CREATE OR REPLACE FUNCTION liverelay_request_extras() RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN coalesce(current_setting('liverelay.alert', true), '') = '' THEN NULL
                ELSE jsonb_build_object('alert', current_setting('liverelay.alert', true)::jsonb) END
$$;

-- The queues no longer wake the relay themselves: the triggers below (and the relay's routes) call liverelay_wake()
-- once per statement that queued something.
DROP TRIGGER IF EXISTS delivery_outbox_wake ON delivery_outbox;
DROP TRIGGER IF EXISTS broadcast_log_notify ON broadcast_log;
DROP FUNCTION IF EXISTS liverelay_queue_inserted();

-- updated_at follows every write.
CREATE OR REPLACE FUNCTION liverelay_touch() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER activity_registration_touch
    BEFORE UPDATE ON activity_registration FOR EACH ROW EXECUTE FUNCTION liverelay_touch();
CREATE OR REPLACE TRIGGER device_registration_touch
    BEFORE UPDATE ON device_registration FOR EACH ROW EXECUTE FUNCTION liverelay_touch();
CREATE OR REPLACE TRIGGER device_live_activity_message_touch
    BEFORE UPDATE ON device_live_activity_message FOR EACH ROW EXECUTE FUNCTION liverelay_touch();

-- Raises when a payload is over APNs' limit, or FCM data over FCM's (nothing is written then); true otherwise.
CREATE OR REPLACE FUNCTION liverelay_assert_fits(session_id text, payload jsonb, what text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF liverelay_payload_too_large(payload) THEN
        RAISE EXCEPTION '%', format('LiveRelay: %sthe %s for session %s would be %s bytes; %s accepts at most 4096',
                what, CASE WHEN payload ? 'aps' THEN 'APNs payload' ELSE 'FCM message data' END, session_id,
                liverelay_json_compact_length(payload), CASE WHEN payload ? 'aps' THEN 'APNs' ELSE 'FCM' END)
            USING ERRCODE = 'check_violation',
                  HINT = 'Shorten content_state (or the device''s live activity message); nothing was changed.';
    END IF;
    RETURN true;
END $$;

-- UPDATE activity_registration: content_state of an active activity (or a new token) → update; ended → end.
-- One pass: the size of a push is checked only when its content and message text could bring it near the limit
-- (at most ~300 bytes of aps keys and dates come on top), and an oversized one aborts the statement.
CREATE OR REPLACE FUNCTION liverelay_activity_updated() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    queued bigint[];
BEGIN
    WITH events AS (
        SELECT n.id, n.secret_hash, n.session_id, n.device_uuid, n.status, n.content_state,
               CASE WHEN n.status = 'ended' THEN 'end' ELSE 'update' END AS event
        FROM new_rows n
        JOIN old_rows o ON o.id = n.id
        LEFT JOIN device_live_activity_message m ON m.device_uuid = n.device_uuid
        WHERE ((n.status = 'ended' AND o.status = 'active')
            OR (n.status = 'active' AND n.content_state IS NOT NULL
                AND (n.content_state IS DISTINCT FROM o.content_state
                     -- An update the relay's routes send with an alert goes out even when the state is the same:
                     -- the alert is what was asked for. (Any other write of an unchanged state pushes nothing.)
                     OR liverelay_request_extras() IS NOT NULL))
            -- A token that arrives (late, or rotated) gets the latest state at once.
            OR (n.status = 'active' AND n.content_state IS NOT NULL AND n.activity_token IS NOT NULL
                AND n.activity_token IS DISTINCT FROM o.activity_token))
          AND (liverelay_size_bound(n.platform, n.content_state, m.message, n.session_id) <= 4096
               OR liverelay_assert_fits(n.session_id, liverelay_push_payload(
                      n.platform, n.id, n.session_id, CASE WHEN n.status = 'ended' THEN 'end' ELSE 'update' END,
                      liverelay_merge_note(n.content_state, m.device_uuid IS NOT NULL, m.message),
                      n.stale_date, n.dismissal_date, n.relevance_score), ''))
    ), queued AS (
        INSERT INTO delivery_outbox (kind, activity_id, event_type, secret_hash, session_id, request_id, payload)
        SELECT 'activity', id, event, secret_hash, session_id, liverelay_request_id(), liverelay_request_extras()
        FROM events ORDER BY id
        RETURNING id
    ), logged AS (
        INSERT INTO broadcast_log (channels, event, data)
        SELECT CASE WHEN device_uuid IS NULL THEN ARRAY['session:' || session_id]
                    ELSE ARRAY['session:' || session_id, 'device:' || device_uuid] END,
               'activity-' || event,
               jsonb_build_object('session_id', session_id, 'device_uuid', device_uuid, 'status', status,
                                  'content_state', content_state)
        FROM events ORDER BY id
    ), reloads AS (
        -- What the device shows changed: its widgets reload (sql/027_widgets.sql).
        SELECT liverelay_queue_widget_reloads(array_agg(DISTINCT device_uuid)) AS ids
        FROM events WHERE device_uuid IS NOT NULL
    )
    -- (Every event queues one outbox row and one stream event: rows queued means something to wake for.)
    SELECT (SELECT array_agg(id) FROM queued) || (SELECT ids FROM reloads) INTO queued;
    IF queued IS NOT NULL THEN
        PERFORM liverelay_wake(queued);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER activity_registration_deliver
    AFTER UPDATE ON activity_registration REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION liverelay_activity_updated();

-- INSERT/UPDATE device_live_activity_message: an event on device:<uuid>, and an update push to every active
-- activity of that device with the message merged in as "note".
CREATE OR REPLACE FUNCTION liverelay_message_written() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    oversized record;
    queued bigint[];
BEGIN
    SELECT a.session_id, a.platform, liverelay_json_compact_length(p.payload) AS size INTO oversized
    FROM new_rows m
    JOIN activity_registration a ON a.device_uuid = m.device_uuid AND a.status = 'active'
    CROSS JOIN LATERAL (SELECT liverelay_push_payload(a.platform, a.id, a.session_id, 'update',
        liverelay_merge_note(a.content_state, true, m.message), a.stale_date, NULL, a.relevance_score) AS payload) p
    WHERE liverelay_size_bound(a.platform, a.content_state, m.message, a.session_id) > 4096
      AND liverelay_payload_too_large(p.payload)
    LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION '%', format(
                'LiveRelay: with this message the %s for session %s would be %s bytes; %s accepts at most 4096',
                CASE WHEN oversized.platform = 'android' THEN 'FCM message data' ELSE 'APNs payload' END,
                oversized.session_id, oversized.size,
                CASE WHEN oversized.platform = 'android' THEN 'FCM' ELSE 'APNs' END)
            USING ERRCODE = 'check_violation', HINT = 'Shorten the message; nothing was changed.';
    END IF;

    WITH queued AS (
        INSERT INTO delivery_outbox (kind, activity_id, event_type, secret_hash, session_id, request_id)
        SELECT 'activity', a.id, 'update', a.secret_hash, a.session_id, liverelay_request_id()
        FROM new_rows m
        JOIN activity_registration a ON a.device_uuid = m.device_uuid AND a.status = 'active'
        ORDER BY a.id
        RETURNING id
    )
    SELECT array_agg(id) INTO queued FROM queued;
    -- What the device shows changed: its widgets reload (sql/027_widgets.sql).
    queued := queued || liverelay_queue_widget_reloads((SELECT array_agg(DISTINCT device_uuid) FROM new_rows));

    INSERT INTO broadcast_log (channels, event, data)
    SELECT ARRAY['device:' || m.device_uuid], 'live-activity-message',
           jsonb_build_object('device_uuid', m.device_uuid, 'message', m.message)
    FROM new_rows m ORDER BY m.device_uuid;
    IF FOUND THEN
        PERFORM liverelay_wake(queued);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER device_live_activity_message_insert_deliver
    AFTER INSERT ON device_live_activity_message REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION liverelay_message_written();
CREATE OR REPLACE TRIGGER device_live_activity_message_update_deliver
    AFTER UPDATE ON device_live_activity_message REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION liverelay_message_written();

