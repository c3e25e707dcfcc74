-- How big a Live Activity push will be, checked when it is written (re-applied by every migrate).

-- Length in bytes of a JSON value serialised compactly (no spaces), as the relay sends it.
CREATE OR REPLACE FUNCTION liverelay_json_compact_length(v jsonb) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
    CASE jsonb_typeof(v)
    WHEN 'object' THEN
        RETURN 2 + coalesce((SELECT sum(octet_length(to_jsonb(e.key)::text) + 1
                                        + liverelay_json_compact_length(e.value)) + count(*) - 1
                             FROM jsonb_each(v) AS e), 0);
    WHEN 'array' THEN
        RETURN 2 + coalesce((SELECT sum(liverelay_json_compact_length(e.value)) + count(*) - 1
                             FROM jsonb_array_elements(v) AS e(value)), 0);
    ELSE
        RETURN octet_length(v::text);
    END CASE;
END $$;

-- The APNs payload of a Live Activity update or end, with a 10-digit placeholder timestamp (the relay sets the
-- real one when it sends). The relay builds the same keys: see APNsPayload.swift.
CREATE OR REPLACE FUNCTION liverelay_activity_payload(
    event text, content_state jsonb, stale_date timestamptz, dismissal_date timestamptz,
    relevance_score double precision
) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('aps',
        jsonb_build_object('timestamp', 1000000000, 'event', event,
                           'content-state', coalesce(content_state, '{}'::jsonb))
        || CASE WHEN stale_date IS NULL THEN '{}'::jsonb
                ELSE jsonb_build_object('stale-date', floor(extract(epoch FROM stale_date))::bigint) END
        || CASE WHEN dismissal_date IS NULL OR event <> 'end' THEN '{}'::jsonb
                ELSE jsonb_build_object('dismissal-date', floor(extract(epoch FROM dismissal_date))::bigint) END
        || CASE WHEN relevance_score IS NULL THEN '{}'::jsonb
                ELSE jsonb_build_object('relevance-score', relevance_score) END)
$$;

-- A JSON value serialised compactly (no spaces), as the relay sends it (its key order may differ; its length does not).
CREATE OR REPLACE FUNCTION liverelay_json_compact(v jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
    CASE jsonb_typeof(v)
    WHEN 'object' THEN
        RETURN '{' || coalesce((SELECT string_agg(to_jsonb(e.key)::text || ':' || liverelay_json_compact(e.value), ',')
                                FROM jsonb_each(v) AS e), '') || '}';
    WHEN 'array' THEN
        RETURN '[' || coalesce((SELECT string_agg(liverelay_json_compact(e.value), ',')
                                FROM jsonb_array_elements(v) AS e(value)), '') || ']';
    ELSE
        RETURN v::text;
    END CASE;
END $$;

-- The data of an Android (FCM) Live Activity message, every value a string, with a 10-digit placeholder timestamp.
-- The relay builds the same keys: see FCMPayload.swift.
CREATE OR REPLACE FUNCTION liverelay_fcm_data(
    activity_id uuid, event text, content_state jsonb, session_id text, stale_date timestamptz,
    dismissal_date timestamptz
) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('liveRelayActivityId', activity_id::text, 'liveRelayEvent', event,
                              'liveRelayContentState', liverelay_json_compact(coalesce(content_state, '{}'::jsonb)),
                              'liveRelayTimestamp', '1000000000')
        || CASE WHEN session_id IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('liveRelaySessionId', session_id) END
        || CASE WHEN stale_date IS NULL THEN '{}'::jsonb
                ELSE jsonb_build_object('liveRelayStaleDate', floor(extract(epoch FROM stale_date))::bigint::text) END
        || CASE WHEN dismissal_date IS NULL OR event <> 'end' THEN '{}'::jsonb
                ELSE jsonb_build_object('liveRelayDismissalDate',
                                        floor(extract(epoch FROM dismissal_date))::bigint::text) END
$$;

-- What an activity's message is measured by: the APNs payload for iOS, the FCM data for Android.
CREATE OR REPLACE FUNCTION liverelay_push_payload(
    platform text, activity_id uuid, session_id text, event text, content_state jsonb, stale_date timestamptz,
    dismissal_date timestamptz, relevance_score double precision
) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN platform = 'android'
                THEN liverelay_fcm_data(activity_id, event, content_state, session_id, stale_date, dismissal_date)
                ELSE liverelay_activity_payload(event, content_state, stale_date, dismissal_date, relevance_score) END
$$;

-- The most bytes a state and message can take before the exact size is worth computing: the JSON text of an
-- Android message holds the content-state as an escaped string, at most twice as long. STABLE, as to_jsonb is, so
-- that the planner inlines it into the trigger's statement: declared IMMUTABLE it ran as a function call per row,
-- which cost writers a fifth of their throughput while the relay shared the CPU.
CREATE OR REPLACE FUNCTION liverelay_size_bound(platform text, content_state jsonb, message text, session_id text)
RETURNS integer
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN platform = 'android' THEN 2 ELSE 1 END
               * (coalesce(octet_length(content_state::text), 0) + coalesce(octet_length(to_jsonb(message)::text), 0))
           + CASE WHEN platform = 'android' THEN coalesce(octet_length(session_id), 0) ELSE 0 END + 300
$$;

-- True when a payload is larger than the 4096 bytes APNs accepts. jsonb's text form is never shorter than the
-- compact form, so the exact count runs only for payloads near the limit.
CREATE OR REPLACE FUNCTION liverelay_payload_too_large(payload jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT octet_length(payload::text) > 4096 AND liverelay_json_compact_length(payload) > 4096
$$;

-- The content-state an activity is sent with: its own, plus the device's message as "note" when the device has one.
CREATE OR REPLACE FUNCTION liverelay_merge_note(content_state jsonb, has_message boolean, message text) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN has_message
                THEN coalesce(content_state, '{}'::jsonb) || jsonb_build_object('note', nullif(message, ''))
                ELSE content_state END
$$;
