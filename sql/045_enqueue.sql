-- How the relay's own API queues deliveries. The triggers queue what SQL writes cause; these are the three things
-- the routes queue themselves, so that the outbox's columns are written in SQL files only. Each is called inside
-- the route's transaction; the caller wakes the relay (liverelay_wake) afterwards.

-- An alert to each of the secret's devices, in each platform's own payload.
CREATE OR REPLACE FUNCTION liverelay_queue_alert(
    p_secret_hash text, p_session_id text, p_event_type text, p_apns jsonb, p_fcm jsonb, p_request_id uuid
) RETURNS void LANGUAGE sql AS $$
    INSERT INTO delivery_outbox (kind, event_type, secret_hash, session_id, device_token, bundle_id, apns_env,
                                 payload, priority, request_id, platform)
    SELECT 'alert', p_event_type, secret_hash, p_session_id, device_token, bundle_id, apns_env,
           CASE WHEN platform = 'android' THEN p_fcm ELSE p_apns END, 10, p_request_id, platform
    FROM device_registration WHERE secret_hash = p_secret_hash;
$$;

-- Push-to-start of a session's activity on every iOS device of the secret with a push-to-start token for the
-- attributes type (the OpenCode app's own type may also use the device's general token): the activity is
-- (re)registered active without an update token, holding p_state, and one `start` per device is queued. Nothing
-- happens when no device can be started. The activity's `started` event comes from the push's outcome, so the
-- lifecycle trigger is told to stay quiet for this write (liverelay.push_to_start).
CREATE OR REPLACE FUNCTION liverelay_queue_push_to_start(
    p_secret_hash text, p_session_id text, p_state jsonb, p_payload jsonb, p_attributes_type text,
    p_app_attributes_type text, p_request_id uuid
) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('liverelay.push_to_start', 'on', true);
    WITH starters AS MATERIALIZED (
        SELECT d.bundle_id, d.apns_env,
               coalesce(p.token, CASE WHEN p_attributes_type = p_app_attributes_type
                                      THEN d.push_to_start_token END) AS token
        FROM device_registration d
        LEFT JOIN device_push_to_start p ON p.device_id = d.id AND p.attributes_type = p_attributes_type
        WHERE d.secret_hash = p_secret_hash AND d.platform = 'ios'
    ), started AS (
        INSERT INTO activity_registration (secret_hash, session_id, activity_token, bundle_id, apns_env,
                                           platform, attributes_type, content_state, status)
        SELECT p_secret_hash, p_session_id, NULL, bundle_id, apns_env, 'ios', p_attributes_type, p_state, 'active'
        FROM starters WHERE token IS NOT NULL LIMIT 1
        ON CONFLICT (secret_hash, session_id) DO UPDATE
        SET activity_token = NULL, status = 'active', attributes_type = excluded.attributes_type,
            content_state = coalesce(excluded.content_state, activity_registration.content_state)
        RETURNING id
    )
    INSERT INTO delivery_outbox (kind, activity_id, event_type, secret_hash, session_id, device_token,
                                 bundle_id, apns_env, payload, priority, request_id)
    SELECT 'start', a.id, 'start', p_secret_hash, p_session_id, s.token, s.bundle_id, s.apns_env,
           p_payload, 10, p_request_id
    FROM starters s CROSS JOIN started a
    WHERE s.token IS NOT NULL;
    PERFORM set_config('liverelay.push_to_start', '', true);
END
$$;

-- The `start` message an Android app shows its ongoing notification for (iOS activities are started on the phone,
-- or by push-to-start).
CREATE OR REPLACE FUNCTION liverelay_queue_android_start(p_secret_hash text, p_session_id text)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO delivery_outbox (kind, activity_id, event_type, secret_hash, session_id, platform)
    SELECT 'activity', id, 'start', secret_hash, session_id, 'android'
    FROM activity_registration WHERE secret_hash = p_secret_hash AND session_id = p_session_id;
$$;
