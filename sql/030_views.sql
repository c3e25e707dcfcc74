-- Read-only views for dashboards, served by GET /v1/views/{name} (re-applied by every migrate).

-- The update budget of an activity: priority-10 pushes an hour (LIVERELAY_PRIORITY10_PER_HOUR, doubled for frequent
-- updates), and how many in the last hour show as a warning. The relay writes both into relay_setting when it
-- starts (UpdateBudget in the relay's code has the defaults, used here only on a database no relay has started on).
CREATE OR REPLACE FUNCTION liverelay_priority10_limit(frequent boolean) RETURNS integer
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT value::integer FROM relay_setting WHERE name = 'priority10_per_hour'), 120)
           * CASE WHEN frequent THEN 2 ELSE 1 END
$$;

CREATE OR REPLACE FUNCTION liverelay_priority10_warning() RETURNS integer
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT value::integer FROM relay_setting WHERE name = 'priority10_warning'), 30)
$$;

CREATE OR REPLACE VIEW liverelay_devices AS
SELECT id, device_uuid, platform, bundle_id, apns_env, right(device_token, 8) AS token_suffix,
       push_to_start_token IS NOT NULL
           OR EXISTS (SELECT 1 FROM device_push_to_start p WHERE p.device_id = device_registration.id)
           AS has_push_to_start,
       created_at, updated_at, device_name
FROM device_registration;

CREATE OR REPLACE VIEW liverelay_activities AS
SELECT a.id, a.session_id, a.device_uuid, a.status, a.platform, a.bundle_id, a.apns_env,
       right(a.activity_token, 8) AS token_suffix, a.attributes_type, a.content_state, m.message AS device_message,
       s.last_sent_at, a.created_at, a.updated_at,
       b.priority10_last_hour, b.budget_limit AS priority10_limit,
       CASE WHEN b.priority10_last_hour >= b.budget_limit THEN 'downgraded'
            WHEN b.priority10_last_hour >= liverelay_priority10_warning() THEN 'warning' ELSE 'ok' END AS budget_state,
       a.frequent_updates, a.started_at,
       liverelay_is_foreground(a.device_uuid, a.secret_hash, a.session_id) AS foreground
FROM activity_registration a
LEFT JOIN device_live_activity_message m ON m.device_uuid = a.device_uuid
LEFT JOIN activity_delivery_state s ON s.activity_id = a.id
CROSS JOIN LATERAL (
    SELECT (SELECT count(*)::integer FROM unnest(s.priority10_sent_at) AS p(at)
            WHERE p.at > extract(epoch FROM now()) - 3600) AS priority10_last_hour,
           liverelay_priority10_limit(a.frequent_updates) AS budget_limit) b;

CREATE OR REPLACE VIEW liverelay_recent_deliveries AS
SELECT id, created_at, status, event_type, session_id, activity_id, push_type, apns_env, token_suffix, apns_id,
       apns_status, apns_reason, attempt, latency_ms, error, transport, provider_status, provider_reason,
       priority, priority_reason, endpoint_id, event_id
FROM delivery_log
WHERE created_at > now() - interval '24 hours';

CREATE OR REPLACE VIEW liverelay_delivery_stats AS
SELECT date_trunc('hour', created_at) AS hour, status, coalesce(apns_reason, '') AS reason, count(*) AS deliveries,
       round(avg(latency_ms)::numeric, 3) AS avg_latency_ms,
       round((percentile_cont(0.99) WITHIN GROUP (ORDER BY latency_ms))::numeric, 3) AS p99_latency_ms
FROM delivery_log
GROUP BY 1, 2, 3;

CREATE OR REPLACE VIEW liverelay_queue_depth AS
SELECT kind, count(*) AS queued, count(*) FILTER (WHERE next_attempt_at <= now()) AS due,
       count(*) FILTER (WHERE attempts > 0) AS retrying,
       coalesce(extract(epoch FROM now() - min(enqueued_at)), 0)::float8 AS oldest_seconds
FROM delivery_outbox
GROUP BY kind;

-- Webhook endpoints without their secrets, with what waits for each.
CREATE OR REPLACE VIEW liverelay_webhooks AS
SELECT w.id, w.url, w.events, w.enabled, w.created_at,
       (SELECT count(*) FROM webhook_outbox o WHERE o.endpoint_id = w.id) AS pending,
       (SELECT min(o.enqueued_at) FROM webhook_outbox o WHERE o.endpoint_id = w.id) AS oldest_pending_at
FROM webhook_endpoint w;
