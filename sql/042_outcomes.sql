-- What a delivery batch learnt, recorded in its transaction (the claim is in sql/040_delivery.sql).

-- A batch's summary on the admin channel (`deliveries`: how many sent, failed, retrying, coalesced), for pushes and
-- channels alike (sql/052_channel_outcomes.sql); no row for a batch without outcomes. SETOF, so that the statements
-- that insert it take it in as a subquery rather than calling it.
CREATE OR REPLACE FUNCTION liverelay_outcomes_summary(statuses text[]) RETURNS SETOF jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object(
               'sent', count(*) FILTER (WHERE s = 'sent'), 'failed', count(*) FILTER (WHERE s = 'failed'),
               'retrying', count(*) FILTER (WHERE s = 'retrying'),
               'coalesced', count(*) FILTER (WHERE s = 'coalesced'))
    FROM unnest(statuses) AS s
    HAVING count(*) > 0
$$;

-- The common outcomes of one batch, in one statement (one round trip) and the lifecycle events they mean: its
-- delivery_log rows, finished rows removed from the outbox, retries rescheduled after their delay, and what was sent
-- remembered per activity (with the priority-10 sends of the last hour, for the update budget). The log arrays run
-- in parallel (one element per log row, NULL where a row has no such value: no activity, no answer, no latency,
-- no event; `log_lifecycle` is the event a row's outcome emits), as do the retry and sent arrays. The nullif()s
-- below read a relay of an earlier version, which sent '' / 0 / -1 for NULL, while it runs beside this one.
-- Returns how many webhook rows the events queued (the worker rings its webhook workers then).
-- PL/pgSQL, not SQL: a session keeps its statements' plans, where a SQL function plans them again at every call.
-- Times are the statement's, not now(): the batch's transaction was begun when the previous batch ended, so now()
-- may be seconds old, and a retry scheduled from it would come before its Retry-After.
DROP FUNCTION IF EXISTS liverelay_record_batch(text[], text[], text[], text[], text[], bigint[], text[], text[],
    text[], text[], uuid[], integer[], text[], integer[], double precision[], text[], text[], bigint[], bigint[],
    bigint[], text[], uuid[], bigint[], text[]);
DROP FUNCTION IF EXISTS liverelay_record_batch(text[], text[], text[], text[], text[], bigint[], text[], text[],
    text[], text[], uuid[], integer[], text[], integer[], double precision[], text[], text[], integer[], text[],
    text[], bigint[], bigint[], bigint[], text[], uuid[], bigint[], text[], boolean[]);
CREATE OR REPLACE FUNCTION liverelay_record_batch(
    log_secret_hash text[], log_event_type text[], log_session_id text[], log_status text[], log_error text[],
    log_outbox_id bigint[], log_activity_id text[], log_push_type text[], log_apns_env text[], log_token_suffix text[],
    log_apns_id uuid[], log_provider_status integer[], log_provider_reason text[], log_attempt integer[],
    log_latency_ms double precision[], log_request_id text[], log_transport text[], log_priority integer[],
    log_priority_reason text[], log_lifecycle text[],
    finished_ids bigint[], retry_ids bigint[], retry_delays_ms bigint[], retry_errors text[],
    sent_ids uuid[], sent_timestamps bigint[], sent_hashes text[], sent_priority10 boolean[]
) RETURNS integer
LANGUAGE plpgsql VOLATILE
-- Kept plans that cannot go stale, as the claim's (see liverelay_claim_deliveries): every statement reaches its rows by
-- primary key; planning them at every batch cost more than running them (1.3-1.7 ms against 0.75 for one row).
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    queued integer;
BEGIN
    WITH logged AS (
        INSERT INTO delivery_log (secret_hash, event_type, session_id, status, error, outbox_id, activity_id, push_type,
                                  apns_env, token_suffix, apns_id, apns_status, apns_reason, attempt, latency_ms,
                                  request_id, transport, provider_status, provider_reason, priority, priority_reason,
                                  created_at)
        SELECT nullif(l.secret_hash, ''), l.event_type, nullif(l.session_id, ''), l.status, nullif(l.error, ''),
               l.outbox_id, nullif(l.activity_id, '')::uuid, nullif(l.push_type, ''), nullif(l.apns_env, ''),
               nullif(l.token_suffix, ''), l.apns_id,
               CASE WHEN l.transport = 'apns' THEN nullif(l.status_code, 0) END,
               CASE WHEN l.transport = 'apns' THEN nullif(l.reason, '') END, l.attempt, nullif(l.latency_ms, -1),
               nullif(l.request_id, '')::uuid, nullif(l.transport, ''), nullif(l.status_code, 0), nullif(l.reason, ''),
               nullif(l.priority, 0)::smallint, nullif(l.priority_reason, ''), statement_timestamp()
        FROM unnest(log_secret_hash, log_event_type, log_session_id, log_status, log_error, log_outbox_id,
                    log_activity_id, log_push_type, log_apns_env, log_token_suffix, log_apns_id, log_provider_status,
                    log_provider_reason, log_attempt, log_latency_ms, log_request_id, log_transport, log_priority,
                    log_priority_reason)
             AS l(secret_hash, event_type, session_id, status, error, outbox_id, activity_id, push_type, apns_env,
                  token_suffix, apns_id, status_code, reason, attempt, latency_ms, request_id, transport, priority,
                  priority_reason)
    ), announced AS (
        -- One summary per batch on the admin channel, so a dashboard sees outcomes as they are recorded.
        INSERT INTO broadcast_log (channels, event, data)
        SELECT ARRAY['admin'], 'deliveries', summary FROM liverelay_outcomes_summary(log_status) AS summary
    ), skipped AS (
        -- An update skipped because its app is open: pushed when the app is no longer (sql/025_foreground.sql).
        INSERT INTO activity_foreground_skip (activity_id)
        SELECT DISTINCT l.activity_id::uuid
        FROM unnest(log_status, log_error, log_activity_id) AS l(status, error, activity_id)
        WHERE l.status = 'skipped' AND l.error = 'Foreground' AND l.activity_id <> ''
        ON CONFLICT (activity_id) DO NOTHING
    ), removed AS (
        DELETE FROM delivery_outbox WHERE id = ANY(finished_ids)
    ), rescheduled AS (
        UPDATE delivery_outbox o SET attempts = o.attempts + 1,
               next_attempt_at = statement_timestamp() + r.delay_ms * interval '1 millisecond', last_error = r.error
        FROM unnest(retry_ids, retry_delays_ms, retry_errors) AS r(id, delay_ms, error)
        WHERE o.id = r.id
    )
    INSERT INTO activity_delivery_state (activity_id, last_timestamp, last_payload, last_sent_at, priority10_sent_at)
    SELECT s.id, s.ts, decode(s.hash, 'hex'), statement_timestamp(),
           CASE WHEN s.priority10 THEN ARRAY[extract(epoch FROM statement_timestamp())::bigint] ELSE '{}' END
    FROM unnest(sent_ids, sent_timestamps, sent_hashes, sent_priority10) AS s(id, ts, hash, priority10)
    JOIN activity_registration a ON a.id = s.id
    ON CONFLICT (activity_id) DO UPDATE
    SET last_timestamp = excluded.last_timestamp, last_payload = excluded.last_payload,
        last_sent_at = excluded.last_sent_at,
        priority10_sent_at = ARRAY(SELECT p FROM unnest(activity_delivery_state.priority10_sent_at) AS p
                                   WHERE p > extract(epoch FROM statement_timestamp())::bigint - 3600)
                             || excluded.priority10_sent_at;

    -- The lifecycle events of these outcomes (in the order of the log rows), with the delivery each reports.
    SELECT coalesce((SELECT liverelay_emit_lifecycle(
               array_agg(l.type ORDER BY l.ord), array_agg(l.activity_id::uuid ORDER BY l.ord),
               array_agg(json_build_object('transport', l.transport, 'status', l.status,
                                           'reason', coalesce(nullif(l.reason, ''), nullif(l.error, '')),
                                           'latency_ms', nullif(l.latency_ms, -1)) ORDER BY l.ord), false)
    FROM unnest(log_lifecycle, log_activity_id, log_transport, log_status, log_provider_reason, log_error,
                log_latency_ms)
         WITH ORDINALITY AS l(type, activity_id, transport, status, reason, error, latency_ms, ord)
    WHERE l.type <> '' AND l.activity_id <> ''
    HAVING count(*) > 0), 0) INTO queued;
    RETURN queued;
END $$;

-- Dead tokens: an activity's token turns the activity `invalidated` (only while the row still holds that token: a
-- token registered meanwhile is a new one), a device token's row is deleted, a push-to-start token is forgotten.
-- Called by the batch that learnt it, in its transaction. The answer that declared each activity token dead
-- (transport, reason, latency) is handed to the lifecycle trigger through a transaction-local setting, so that the
-- `live_activity.invalidated` event it emits carries it.
DROP FUNCTION IF EXISTS liverelay_retire_tokens(uuid[], text[], text[], text[]);
CREATE OR REPLACE FUNCTION liverelay_retire_tokens(
    activity_ids uuid[], activity_tokens text[], activity_transports text[], activity_reasons text[],
    activity_latencies_ms double precision[], device_tokens text[], start_tokens text[]
) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF cardinality(activity_ids) > 0 THEN
        PERFORM set_config('liverelay.invalidated_by', (
            SELECT json_object_agg(d.id, json_build_object('transport', d.transport, 'status', 'failed',
                                                           'reason', d.reason, 'latency_ms', nullif(d.latency, -1)))
            FROM unnest(activity_ids, activity_transports, activity_reasons, activity_latencies_ms)
                 AS d(id, transport, reason, latency))::text, true);
        UPDATE activity_registration a SET status = 'invalidated'
        FROM unnest(activity_ids, activity_tokens) AS d(id, token)
        WHERE a.id = d.id AND a.activity_token = d.token AND a.status <> 'invalidated';
        PERFORM set_config('liverelay.invalidated_by', '', true);
    END IF;
    DELETE FROM device_registration WHERE device_token = ANY(device_tokens);
    UPDATE device_registration SET push_to_start_token = NULL WHERE push_to_start_token = ANY(start_tokens);
    DELETE FROM device_push_to_start WHERE token = ANY(start_tokens);
END $$;

-- APNs tokens that answered only in the other environment: every registration holding them moves there.
CREATE OR REPLACE FUNCTION liverelay_move_tokens(tokens text[], environments text[]) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    UPDATE activity_registration a SET apns_env = m.env
    FROM unnest(tokens, environments) AS m(token, env)
    WHERE a.activity_token = m.token AND a.apns_env <> m.env;
    UPDATE device_registration d SET apns_env = m.env
    FROM unnest(tokens, environments) AS m(token, env)
    WHERE (d.device_token = m.token OR d.push_to_start_token = m.token) AND d.apns_env <> m.env;
END $$;
