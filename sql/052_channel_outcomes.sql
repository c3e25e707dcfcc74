-- Broadcast channels, the relay's own statements: a batch's outcomes and push-to-start from a channel
-- (what writes to broadcast_channel queue is in sql/050_channels.sql).

-- A batch's channel outcomes, in its transaction: the log rows (with the channel's name and transport), channels
-- Apple created (their id stored; their latest state queued for broadcast; a channel deleted meanwhile is deleted at
-- Apple), channels Apple refused (failed, never sent again), and what each side sent. Returns the rows it queued.
-- The log arrays hold NULL where a row has no error, answer, latency, request or priority (nullif: an earlier relay
-- sent '' / 0 / -1 for it).
CREATE OR REPLACE FUNCTION liverelay_record_channels(
    log_channel text[], log_platform text[], log_event_type text[], log_status text[], log_error text[],
    log_outbox_id bigint[], log_provider_status integer[], log_provider_reason text[], log_attempt integer[],
    log_latency_ms double precision[], log_request_id text[], log_priority integer[], log_answered boolean[],
    created_ids uuid[], created_channel_ids text[], created_bundles text[], created_envs text[],
    failed_ids uuid[], failed_errors text[],
    sent_ids uuid[], sent_platforms text[], sent_timestamps bigint[], sent_hashes text[]
) RETURNS integer
LANGUAGE plpgsql VOLATILE
-- Plans kept for the session (every statement reaches its rows by key), as the batch's own record's.
SET plan_cache_mode = force_generic_plan SET jit = off
AS $$
DECLARE
    queued bigint[];
    gone bigint[];
BEGIN
    -- One summary on the admin channel, as for pushes (the dashboard re-reads then).
    INSERT INTO broadcast_log (channels, event, data)
    SELECT ARRAY['admin'], 'deliveries', summary FROM liverelay_outcomes_summary(log_status) AS summary;
    INSERT INTO delivery_log (event_type, status, error, outbox_id, push_type, transport, provider_status,
                              provider_reason, apns_status, apns_reason, attempt, latency_ms, request_id, priority,
                              channel, created_at)
    SELECT l.event_type, l.status, nullif(l.error, ''), l.outbox_id,
           CASE WHEN l.platform = 'ios' THEN 'liveactivity' ELSE 'data' END,
           CASE WHEN NOT l.answered THEN NULL WHEN l.platform = 'ios' THEN 'apns-broadcast' ELSE 'fcm-topic' END,
           nullif(l.status_code, 0), nullif(l.reason, ''),
           CASE WHEN l.platform = 'ios' THEN nullif(l.status_code, 0) END,
           CASE WHEN l.platform = 'ios' THEN nullif(l.reason, '') END,
           l.attempt, nullif(l.latency_ms, -1), nullif(l.request_id, '')::uuid, nullif(l.priority, 0)::smallint,
           l.channel, statement_timestamp()
    FROM unnest(log_channel, log_platform, log_event_type, log_status, log_error, log_outbox_id, log_provider_status,
                log_provider_reason, log_attempt, log_latency_ms, log_request_id, log_priority, log_answered)
         AS l(channel, platform, event_type, status, error, outbox_id, status_code, reason, attempt, latency_ms,
              request_id, priority, answered);

    INSERT INTO channel_delivery_state (channel_id, platform, last_timestamp, last_payload, last_sent_at)
    SELECT s.id, s.platform, s.ts, s.hash, statement_timestamp()
    FROM unnest(sent_ids, sent_platforms, sent_timestamps, sent_hashes) AS s(id, platform, ts, hash)
    ON CONFLICT (channel_id, platform) DO UPDATE
    SET last_timestamp = excluded.last_timestamp, last_payload = excluded.last_payload,
        last_sent_at = excluded.last_sent_at;

    WITH stored AS (
        UPDATE broadcast_channel c SET apns_channel_id = x.channel_id
        FROM unnest(created_ids, created_channel_ids) AS x(id, channel_id)
        WHERE c.id = x.id
        RETURNING c.id, c.status, c.content_state
    ), queued AS (
        -- The latest state of a channel still active; the delete of one deleted while Apple was creating it.
        INSERT INTO delivery_outbox (kind, channel_id, platform, event_type, bundle_id, apns_env, payload)
        SELECT 'channel', x.id, 'ios', CASE WHEN s.status = 'active' THEN 'update' ELSE 'delete' END,
               x.bundle_id, x.apns_env,
               CASE WHEN s.id IS NULL THEN jsonb_build_object('apns_channel_id', x.channel_id) END
        FROM unnest(created_ids, created_channel_ids, created_bundles, created_envs)
             AS x(id, channel_id, bundle_id, apns_env)
        LEFT JOIN stored s ON s.id = x.id
        WHERE (s.status = 'active' AND s.content_state IS NOT NULL) OR s.status = 'deleted' OR s.id IS NULL
        RETURNING id
    )
    SELECT array_agg(id) INTO queued FROM queued;

    WITH failed AS (
        UPDATE broadcast_channel c SET status = 'failed', error = f.error
        FROM unnest(failed_ids, failed_errors) AS f(id, error)
        WHERE c.id = f.id AND c.status IN ('active', 'ended')
        RETURNING c.name, c.content_state
    )
    INSERT INTO broadcast_log (channels, event, data)
    SELECT ARRAY['channel:' || name], 'channel-update',
           jsonb_build_object('channel', name, 'status', 'failed', 'content_state', content_state)
    FROM failed;
    RETURN coalesce(cardinality(queued), 0);
END $$;

-- The iOS device rows of `device_uuids` that hold a push-to-start token for `attributes_type` (the device's general
-- token when the type is NULL or the default one), with that token: whom a channel's start reaches.
CREATE OR REPLACE FUNCTION liverelay_channel_start_targets(attributes_type text, device_uuids uuid[])
RETURNS TABLE (device_uuid uuid, token text, bundle_id text, apns_env text)
LANGUAGE sql STABLE AS $$
    SELECT d.device_uuid, t.token, d.bundle_id, d.apns_env
    FROM device_registration d
    LEFT JOIN device_push_to_start p
           ON p.device_id = d.id AND p.attributes_type = coalesce($1, 'SessionActivityAttributes')
    CROSS JOIN LATERAL (SELECT coalesce(p.token, CASE WHEN $1 IS NULL OR $1 = 'SessionActivityAttributes'
                                                      THEN d.push_to_start_token END) AS token) t
    WHERE d.device_uuid = ANY ($2) AND d.platform = 'ios' AND t.token IS NOT NULL
    ORDER BY d.device_uuid, d.id
$$;

-- Why a channel's start reaches none of a device's rows: `unknownDevice` (no row has that uuid), `notIOS` (only
-- Android rows: an Android app follows the channel's FCM topic itself), `noPushToStartToken` (no iOS row holds a
-- token for the channel's type). One row per such device of `device_uuids`, in their order.
CREATE OR REPLACE FUNCTION liverelay_channel_start_misses(attributes_type text, device_uuids uuid[])
RETURNS TABLE (device_uuid uuid, reason text)
LANGUAGE sql STABLE AS $$
    SELECT u.device_uuid,
           CASE WHEN NOT EXISTS (SELECT 1 FROM device_registration d WHERE d.device_uuid = u.device_uuid)
                THEN 'unknownDevice'
                WHEN NOT EXISTS (SELECT 1 FROM device_registration d
                                 WHERE d.device_uuid = u.device_uuid AND d.platform = 'ios')
                THEN 'notIOS'
                ELSE 'noPushToStartToken' END
    FROM (SELECT DISTINCT ON (x.device_uuid) x.device_uuid, x.n
          FROM unnest($2) WITH ORDINALITY AS x(device_uuid, n) ORDER BY x.device_uuid, x.n) u
    WHERE u.device_uuid NOT IN (SELECT t.device_uuid FROM liverelay_channel_start_targets($1, $2) t)
    ORDER BY u.n
$$;

-- Push-to-start of activities that follow a channel (iOS 18 `input-push-channel`): one `start` per iOS device of
-- `device_uuids` holding a push-to-start token for the channel's attributes type (the device's general token when
-- the channel names no type), with the channel's content-state. Returns how many were queued. A channel that does
-- not exist, is not active or is not created at Apple yet is an error, and nothing is queued.
CREATE OR REPLACE FUNCTION liverelay_start_channel(p_name text, device_uuids uuid[], attributes jsonb, alert jsonb)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    c broadcast_channel;
    queued bigint[];
BEGIN
    SELECT * INTO c FROM broadcast_channel WHERE name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'LiveRelay: there is no channel named %', p_name
            USING ERRCODE = 'no_data_found', HINT = 'Nothing was queued.';
    END IF;
    IF c.status <> 'active' OR c.apns_channel_id IS NULL THEN
        RAISE EXCEPTION 'LiveRelay: channel % is %', p_name,
                CASE WHEN c.status <> 'active' THEN c.status ELSE 'not created at Apple yet' END
            USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'Nothing was queued.';
    END IF;
    IF attributes IS NOT NULL AND jsonb_typeof(attributes) <> 'object'
       OR alert IS NOT NULL AND jsonb_typeof(alert) <> 'object' THEN
        RAISE EXCEPTION 'LiveRelay: attributes and alert must be JSON objects'
            USING ERRCODE = 'invalid_parameter_value', HINT = 'Nothing was queued.';
    END IF;
    WITH queued AS (
        INSERT INTO delivery_outbox (kind, channel_id, event_type, device_token, bundle_id, apns_env, payload,
                                     priority, request_id)
        SELECT 'start', c.id, 'start', t.token, t.bundle_id, t.apns_env,
               jsonb_build_object('aps', jsonb_build_object(
                   'timestamp', 1000000000, 'event', 'start',
                   'content-state', coalesce(c.content_state, '{}'::jsonb),
                   'attributes-type', coalesce(c.attributes_type, 'SessionActivityAttributes'),
                   'attributes', coalesce(attributes, '{}'::jsonb),
                   'alert', coalesce(alert, jsonb_build_object('title', c.name, 'body', '')),
                   'input-push-channel', c.apns_channel_id)),
               10, liverelay_request_id()
        FROM liverelay_channel_start_targets(c.attributes_type, device_uuids) t
        RETURNING id
    )
    SELECT array_agg(id) INTO queued FROM queued;
    IF queued IS NOT NULL THEN
        PERFORM liverelay_wake(queued);
    END IF;
    RETURN coalesce(cardinality(queued), 0);
END $$;
