-- Functions the relay's own delivery queries use.

-- Replaced by the claim below, which reads the same state itself.
DROP FUNCTION IF EXISTS liverelay_locked_activity_states(uuid[]);
DROP FUNCTION IF EXISTS liverelay_claimed_rows(bigint[]);
DROP FUNCTION IF EXISTS liverelay_claim_ids(bigint[]);
-- Its return type grew with the update budget and late tokens, and it gained `ids`: replaced, not altered.
DROP FUNCTION IF EXISTS liverelay_claim_batch(integer);

-- A delivery worker's claim, in one round trip: up to `batch` due outbox rows no other worker holds, oldest due
-- first, or, given `ids`, those of the rows a writer's wake-up named (liverelay_wake), found by primary key. It takes
-- the per-activity advisory lock of each of their activities it can (one sender per activity across all relays;
-- activities it cannot lock stay for later) and returns every claimed row (`locked` says whether its activity may be
-- sent now) with the locked activity's state beside it: its content, the device's message, and what was last sent.
-- The row and activity locks last until the caller's transaction ends. "Due" is measured against the statement's
-- start, not now(): a worker begins its next batch's transaction when a batch ends, so now() is the time of the
-- previous batch, and a row written since then (its next_attempt_at is its writer's now()) would not be due until
-- the worker's next transaction, a whole batch later.
--
-- The state is read by a statement of its own, after the locks are held: each PL/pgSQL statement takes a new
-- snapshot, so it sees everything the lock's previous holder committed (what it sent, and the state it sent). Read
-- in a snapshot taken before the locks, a relay could build a push from an older state than one another relay sent
-- meanwhile, and send it after that one.
--
-- The claimed rows are returned sorted by a row value, `(next_attempt_at, id)`, which no index supplies: ordered by
-- the two columns, a plan made while the queue was described as empty (a vacuum of the drained queue leaves it
-- `reltuples` 0 with its pages) walked the whole due index for the claimed ids instead of looking them up by primary
-- key, 82 ms for a claim of 500 rows, and the next bulk drained at half speed.
--
-- Plans that cannot go stale: every statement reaches its rows through an index whatever the tables held when the
-- session planned it (`enable_seqscan = off` within the function), so a plan is made once per session and kept
-- (force_generic_plan) instead of at every call. The queue swings between empty and 100,000 rows: the due rows are
-- read from delivery_outbox_due in order, never sorted, and everything else by primary key. (`jit = off`: a scan
-- without an index to use carries seqscan's penalty in its cost, which would start the JIT compiler, 230 ms, for a
-- statement that takes a fraction of a millisecond.)
--
-- Channel rows (sql/050_channels.sql) are locked per channel and side instead (a chain), and returned with
-- `channel_id` and, for a locked chain, `channel_state`: the channel and what its side last sent, read after the
-- locks as an activity's state is (one round trip for both kinds).
--
-- Widget rows (sql/027_widgets.sql) are locked per widget token, and return whether the token is still registered
-- and how long ago it last got a reload. An activity's row says whether its app is open (`foreground`, see
-- sql/025_foreground.sql), read with its state.
DROP FUNCTION IF EXISTS liverelay_claim(integer);
-- The claim's name until channel rows came (its rows gained `channel_id`).
DROP FUNCTION IF EXISTS liverelay_claim_batch(integer, bigint[]);
-- Its rows gained `foreground` and the widget columns: replaced, not altered.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'liverelay_claim_deliveries'
               AND NOT 'foreground' = ANY (proargnames)) THEN
        DROP FUNCTION liverelay_claim_deliveries(integer, bigint[]);
    END IF;
END $$;
-- A claimed channel row's channel as the relay reads it, with what its side last sent; NULL when the channel row is
-- gone (or was not locked: `ch` is then all NULL).
CREATE OR REPLACE FUNCTION liverelay_channel_claimed(ch broadcast_channel, last_timestamp bigint, last_payload text)
RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN ch.id IS NOT NULL THEN
        json_build_object(
            'id', ch.id, 'name', ch.name, 'bundle_id', ch.bundle_id, 'apns_env', ch.apns_env,
            'storage_policy', ch.storage_policy, 'status', ch.status, 'apns_channel_id', ch.apns_channel_id,
            'fcm_topic', ch.fcm_topic, 'content_state', ch.content_state, 'priority', ch.priority,
            'stale_date', floor(extract(epoch FROM ch.stale_date))::bigint,
            'dismissal_date', floor(extract(epoch FROM ch.dismissal_date))::bigint,
            'relevance_score', ch.relevance_score,
            'last_timestamp', last_timestamp, 'last_payload', last_payload)::text
    END
$$;

CREATE OR REPLACE FUNCTION liverelay_claim_deliveries(batch integer, ids bigint[] DEFAULT NULL)

RETURNS TABLE (id bigint, kind text, platform text, activity_id uuid, event_type text, secret_hash text,
               session_id text, device_token text, bundle_id text, apns_env text, payload text, priority integer,
               apns_id uuid, request_id uuid, enqueued_at double precision, attempts integer, db_now bigint,
               locked boolean, state_id uuid, activity_token text, state_bundle_id text, state_apns_env text,
               status text, content_state text, stale_date bigint, dismissal_date bigint,
               relevance_score double precision, state_priority integer, has_message boolean, message text,
               last_timestamp bigint, last_payload text, state_platform text, frequent_updates boolean,
               priority10_last_hour integer, channel_id uuid, channel_state text, foreground boolean,
               widget_registered boolean, widget_idle_seconds double precision)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off
SET enable_sort = on SET enable_bitmapscan = on
AS $$
#variable_conflict use_column
DECLARE
    claimed bigint[];
    -- What this claim holds, as sets (JSON objects whose keys are the held activities, `<channel>:<platform>` chains
    -- and widget tokens): a claimed row looks itself up in O(log n). Joined as arrays instead, every claimed row
    -- scanned the whole array: 250,000 comparisons and ~15 ms in a claim of 500 rows.
    held_activities jsonb;
    held_chains jsonb;
    held_widgets jsonb;
    chains boolean;
    widgets boolean;
    live_relays uuid[];
BEGIN
    IF ids IS NULL THEN
        -- Walking delivery_outbox_due in order up to the limit, never reading every due row and sorting them
        -- (restored for the statements after it, and by the function's SET on return). `id + 0` is the index's
        -- second key (migrations/011): the order of `id`, without making the index one on `id`.
        PERFORM set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true);
        SELECT array_agg(c.id), bool_or(c.kind = 'channel'), bool_or(c.kind = 'widget'),
               (SELECT coalesce(array_agg(r.id), '{}') FROM relay_instance r
                WHERE r.heartbeat_at > statement_timestamp() - liverelay_presence_window())
        INTO claimed, chains, widgets, live_relays
        FROM (SELECT o.id, o.kind FROM delivery_outbox o
              WHERE o.next_attempt_at <= statement_timestamp()
              ORDER BY o.next_attempt_at, o.id + 0
              LIMIT batch
              FOR UPDATE SKIP LOCKED) c;
        PERFORM set_config('enable_sort', 'on', true), set_config('enable_bitmapscan', 'on', true);
    ELSE
        SELECT array_agg(c.id), bool_or(c.kind = 'channel'), bool_or(c.kind = 'widget'),
               (SELECT coalesce(array_agg(r.id), '{}') FROM relay_instance r
                WHERE r.heartbeat_at > statement_timestamp() - liverelay_presence_window())
        INTO claimed, chains, widgets, live_relays
        FROM (SELECT o.id, o.kind FROM delivery_outbox o
              -- (`IS TRUE`: not a condition the due index can serve, so the named rows are found by primary key
              -- even while a backlog of due rows fills that index.)
              WHERE o.id = ANY (ids) AND (o.next_attempt_at <= statement_timestamp()) IS TRUE
              FOR UPDATE SKIP LOCKED) c;
    END IF;
    IF claimed IS NULL THEN
        RETURN;
    END IF;
    SELECT jsonb_object_agg(d.activity_id::text, true) INTO held_activities
    FROM (SELECT DISTINCT o.activity_id FROM delivery_outbox o
          WHERE o.id = ANY (claimed) AND o.activity_id IS NOT NULL) d
    WHERE pg_try_advisory_xact_lock(hashtextextended(d.activity_id::text, 7031));
    -- (Chains and widget tokens only when the claim holds such rows: a statement less each for the common batch.)
    IF chains THEN
        SELECT jsonb_object_agg(d.channel_id::text || ':' || d.platform, true) INTO held_chains
        FROM (SELECT DISTINCT o.channel_id, o.platform FROM delivery_outbox o
              WHERE o.id = ANY (claimed) AND o.kind = 'channel' AND o.channel_id IS NOT NULL) d
        WHERE pg_try_advisory_xact_lock(hashtextextended(d.channel_id::text || ':' || d.platform, 7032));
    END IF;
    IF widgets THEN
        SELECT jsonb_object_agg(d.token, true) INTO held_widgets
        FROM (SELECT DISTINCT o.device_token AS token FROM delivery_outbox o
              WHERE o.id = ANY (claimed) AND o.kind = 'widget' AND o.device_token IS NOT NULL) d
        WHERE pg_try_advisory_xact_lock(hashtextextended(d.token, 7033));
    END IF;
    IF NOT (chains OR widgets) THEN
        -- Activities, alerts and starts only (the common claim): the same rows without the channel and widget joins,
        -- which a statement sets up at every call whether or not a row reaches them (a fifth of a one-row claim).
        -- A claim holding channel or widget rows takes the whole statement below, whose plan suits bulk channels.
        -- The two return the same columns, and an activity's row alike (OutboxSQLTests.claimWithAndWithoutChannels).
        RETURN QUERY
        SELECT c.id, c.kind, c.platform, c.activity_id, c.event_type, c.secret_hash, c.session_id, c.device_token,
               c.bundle_id, c.apns_env, c.payload::text, c.priority::int4, c.apns_id, c.request_id,
               extract(epoch FROM c.enqueued_at)::float8, c.attempts,
               floor(extract(epoch FROM clock_timestamp()))::int8,
               c.activity_held,
               a.id, a.activity_token, a.bundle_id, a.apns_env, a.status, a.content_state::text,
               floor(extract(epoch FROM coalesce(a.stale_date, a.updated_at + t.stale_after)))::bigint,
               floor(extract(epoch FROM a.dismissal_date))::bigint,
               a.relevance_score, a.priority::integer, m.device_uuid IS NOT NULL, m.message,
               s.last_timestamp, encode(s.last_payload, 'hex'), a.platform, coalesce(a.frequent_updates, false),
               coalesce((SELECT count(*)::integer FROM unnest(s.priority10_sent_at) AS p(at)
                         WHERE p.at > extract(epoch FROM statement_timestamp()) - 3600), 0),
               c.channel_id, NULL::text,
               a.id IS NOT NULL
               AND (EXISTS (SELECT 1 FROM stream_presence p
                            WHERE p.device_uuid = a.device_uuid AND p.relay_id = ANY (live_relays))
                    OR EXISTS (SELECT 1 FROM stream_presence p
                               WHERE p.secret_hash = a.secret_hash AND p.session_id = a.session_id
                                 AND p.relay_id = ANY (live_relays))),
               false, NULL::float8
        FROM (SELECT o.*, coalesce(held_activities ? o.activity_id::text, false) AS activity_held
              FROM delivery_outbox o WHERE o.id = ANY (claimed)) c
        LEFT JOIN activity_registration a ON c.activity_held AND a.id = c.activity_id
        LEFT JOIN device_live_activity_message m ON m.device_uuid = a.device_uuid
        LEFT JOIN activity_delivery_state s ON s.activity_id = a.id
        LEFT JOIN activity_type_setting t ON t.attributes_type = a.attributes_type
        ORDER BY (c.next_attempt_at, c.id);
        RETURN;
    END IF;
    IF held_activities IS NULL AND NOT widgets THEN
        -- Channels only (no activity locked, no widget row): the statement below without the activity and widget
        -- joins, which it would set up at every call for nothing (the activity columns read NULL, as they would).
        RETURN QUERY
        SELECT c.id, c.kind, c.platform, c.activity_id, c.event_type, c.secret_hash, c.session_id, c.device_token,
               c.bundle_id, c.apns_env, c.payload::text, c.priority::int4, c.apns_id, c.request_id,
               extract(epoch FROM c.enqueued_at)::float8, c.attempts,
               floor(extract(epoch FROM clock_timestamp()))::int8,
               c.chain_held,
               NULL::uuid, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::bigint, NULL::bigint,
               NULL::float8, NULL::integer, false, NULL::text, NULL::bigint, NULL::text, NULL::text, false, 0,
               c.channel_id, liverelay_channel_claimed(ch, cs.last_timestamp, cs.last_payload), false, false,
               NULL::float8
        FROM (SELECT o.*, coalesce(held_chains ? (o.channel_id::text || ':' || o.platform), false) AS chain_held
              FROM delivery_outbox o WHERE o.id = ANY (claimed)) c
        LEFT JOIN broadcast_channel ch ON c.chain_held AND ch.id = c.channel_id
        LEFT JOIN LATERAL (SELECT cs.last_timestamp, cs.last_payload FROM channel_delivery_state cs
                           WHERE c.chain_held AND cs.channel_id = c.channel_id AND cs.platform = c.platform
                           LIMIT 1) cs ON true
        ORDER BY (c.next_attempt_at, c.id);
        RETURN;
    END IF;
    RETURN QUERY
    SELECT c.id, c.kind, c.platform, c.activity_id, c.event_type, c.secret_hash, c.session_id, c.device_token,
           c.bundle_id, c.apns_env, c.payload::text, c.priority::int4, c.apns_id, c.request_id,
           extract(epoch FROM c.enqueued_at)::float8, c.attempts,
           floor(extract(epoch FROM clock_timestamp()))::int8,
           c.activity_held OR c.chain_held OR c.widget_held,
           a.id, a.activity_token, a.bundle_id, a.apns_env, a.status, a.content_state::text,
           -- An activity without a stale date of its own gets its type's default, counted from its last write.
           floor(extract(epoch FROM coalesce(a.stale_date, a.updated_at + t.stale_after)))::bigint,
           floor(extract(epoch FROM a.dismissal_date))::bigint,
           a.relevance_score, a.priority::integer, m.device_uuid IS NOT NULL, m.message,
           s.last_timestamp, encode(s.last_payload, 'hex'), a.platform, coalesce(a.frequent_updates, false),
           coalesce((SELECT count(*)::integer FROM unnest(s.priority10_sent_at) AS p(at)
                     WHERE p.at > extract(epoch FROM statement_timestamp()) - 3600), 0),
           c.channel_id,
           -- A locked channel row's channel, with what its side last sent (NULL when the channel row is gone).
           liverelay_channel_claimed(ch, cs.last_timestamp, cs.last_payload),
           -- Foreground (sql/025_foreground.sql): a stream of its device or session on a live relay, probed by the
           -- device or the session (the live relays were read once, with the claim's first statement).
           a.id IS NOT NULL
           AND (EXISTS (SELECT 1 FROM stream_presence p
                        WHERE p.device_uuid = a.device_uuid AND p.relay_id = ANY (live_relays))
                OR EXISTS (SELECT 1 FROM stream_presence p
                           WHERE p.secret_hash = a.secret_hash AND p.session_id = a.session_id
                             AND p.relay_id = ANY (live_relays))),
           c.widget_held AND EXISTS (SELECT 1 FROM device_registration d WHERE d.widget_push_token = c.device_token),
           extract(epoch FROM clock_timestamp() - w.last_sent_at)::float8
    FROM (SELECT o.*, coalesce(held_activities ? o.activity_id::text, false) AS activity_held,
                 coalesce(held_chains ? (o.channel_id::text || ':' || o.platform), false) AS chain_held,
                 o.kind = 'widget' AND coalesce(held_widgets ? o.device_token, false) AS widget_held
          FROM delivery_outbox o WHERE o.id = ANY (claimed)) c
    LEFT JOIN activity_registration a ON c.activity_held AND a.id = c.activity_id
    LEFT JOIN device_live_activity_message m ON m.device_uuid = a.device_uuid
    LEFT JOIN activity_delivery_state s ON s.activity_id = a.id
    LEFT JOIN activity_type_setting t ON t.attributes_type = a.attributes_type
    LEFT JOIN broadcast_channel ch ON c.chain_held AND ch.id = c.channel_id
    -- What a chain and a widget token last sent, looked up by key for each row (`LIMIT 1` keeps each lookup a
    -- subquery of its own): joined plainly, a plan made while these tables held a row or two scanned the whole table
    -- for every claimed row once they held thousands (a 1,000-channel update at 60% speed after a bulk).
    LEFT JOIN LATERAL (SELECT cs.last_timestamp, cs.last_payload FROM channel_delivery_state cs
                       WHERE c.chain_held AND cs.channel_id = c.channel_id AND cs.platform = c.platform
                       LIMIT 1) cs ON true
    LEFT JOIN LATERAL (SELECT w.last_sent_at FROM widget_delivery_state w
                       WHERE c.widget_held AND w.widget_token = c.device_token LIMIT 1) w ON true
    ORDER BY (c.next_attempt_at, c.id);
END $$;
