-- Functions the relay's own delivery queries use.

-- Replaced by liverelay_claim (below), which reads the same state in its own statement.
DROP FUNCTION IF EXISTS liverelay_locked_activity_states(uuid[]);

-- A worker's claim, in one call: up to batch_limit due outbox rows no other worker holds (locked until the batch
-- commits), the per-activity advisory lock of each of their activities it can take (one sender per activity across
-- relays; rows of an activity locked elsewhere come back with locked = false), and the current state of the
-- activities it locked. Each statement below takes its own snapshot (a VOLATILE function), so the state is read
-- after the locks are held and includes everything the previous holder of a lock committed.
--
-- The plans do not depend on statistics: the outbox is usually empty when it is analysed and holds 100,000 rows a
-- moment later. Seq scans are off inside the function, so the due index is walked (no full scan and sort of the
-- backlog per claim) and activities are looked up by primary key (no join whose cost grows with batch size squared).
CREATE OR REPLACE FUNCTION liverelay_claim(batch_limit integer)
RETURNS TABLE (id bigint, kind text, activity_id uuid, event_type text, secret_hash text, session_id text,
               device_token text, bundle_id text, apns_env text, payload text, priority integer, apns_id uuid,
               request_id uuid, enqueued_at double precision, attempts integer, db_now bigint, locked boolean,
               state_id uuid, activity_token text, state_bundle_id text, state_apns_env text, status text,
               content_state text, stale_date bigint, dismissal_date bigint, relevance_score double precision,
               state_priority integer, has_message boolean, message text, last_timestamp bigint, last_payload text,
               platform text)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    claimed delivery_outbox[];
    held uuid[];
BEGIN
    claimed := ARRAY(SELECT o FROM delivery_outbox o
                     WHERE o.next_attempt_at <= now()
                     ORDER BY o.next_attempt_at, o.id
                     LIMIT batch_limit
                     FOR UPDATE SKIP LOCKED);
    held := ARRAY(SELECT DISTINCT c.activity_id FROM unnest(claimed) c
                  WHERE c.activity_id IS NOT NULL
                    AND pg_try_advisory_xact_lock(hashtextextended(c.activity_id::text, 7031)));
    RETURN QUERY
    SELECT c.id, c.kind, c.activity_id, c.event_type, c.secret_hash, c.session_id, c.device_token, c.bundle_id,
           c.apns_env, c.payload::text, c.priority::integer, c.apns_id, c.request_id,
           extract(epoch FROM c.enqueued_at)::double precision, c.attempts,
           floor(extract(epoch FROM clock_timestamp()))::bigint, coalesce(c.activity_id = ANY(held), false),
           a.id, a.activity_token, a.bundle_id, a.apns_env, a.status, a.content_state::text,
           floor(extract(epoch FROM a.stale_date))::bigint, floor(extract(epoch FROM a.dismissal_date))::bigint,
           a.relevance_score, a.priority::integer, m.device_uuid IS NOT NULL, m.message,
           s.last_timestamp, encode(s.last_payload, 'hex'), a.platform
    FROM unnest(claimed) WITH ORDINALITY c
    LEFT JOIN activity_registration a ON a.id = c.activity_id AND c.activity_id = ANY(held)
    LEFT JOIN device_live_activity_message m ON m.device_uuid = a.device_uuid
    LEFT JOIN activity_delivery_state s ON s.activity_id = a.id
    ORDER BY c.ordinality;
END $$;
