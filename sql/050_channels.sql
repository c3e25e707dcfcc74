-- Broadcast channels (docs/channels.md): what a write to broadcast_channel queues, and the relay's own statements.

-- The APNs broadcast payload of a channel update or end, with a placeholder timestamp (the relay sets the real one).
CREATE OR REPLACE FUNCTION liverelay_channel_payload(event text, c broadcast_channel) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT liverelay_activity_payload(event, c.content_state, c.stale_date, c.dismissal_date, c.relevance_score)
$$;

-- The data of a channel's FCM topic message, every value a string (FCMPayload.channelData builds the same keys).
CREATE OR REPLACE FUNCTION liverelay_channel_fcm_data(event text, c broadcast_channel) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('liveRelayChannel', c.name, 'liveRelayEvent', event,
                              'liveRelayContentState', liverelay_json_compact(coalesce(c.content_state, '{}'::jsonb)),
                              'liveRelayTimestamp', '1000000000')
        || CASE WHEN c.stale_date IS NULL THEN '{}'::jsonb
                ELSE jsonb_build_object('liveRelayStaleDate', floor(extract(epoch FROM c.stale_date))::bigint::text) END
        || CASE WHEN c.dismissal_date IS NULL OR event <> 'end' THEN '{}'::jsonb
                ELSE jsonb_build_object('liveRelayDismissalDate',
                                        floor(extract(epoch FROM c.dismissal_date))::bigint::text) END
$$;

-- The channel as it was, for the rows a SQL DELETE queues (the row is gone when they are sent).
CREATE OR REPLACE FUNCTION liverelay_channel_snapshot(c broadcast_channel) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('name', c.name, 'apns_channel_id', c.apns_channel_id, 'fcm_topic', c.fcm_topic,
                              'storage_policy', c.storage_policy, 'content_state', c.content_state,
                              'priority', c.priority,
                              'stale_date', floor(extract(epoch FROM c.stale_date))::bigint,
                              'dismissal_date', floor(extract(epoch FROM c.dismissal_date))::bigint,
                              'relevance_score', c.relevance_score)
$$;

-- Before a row is written: defaults that come from the relay (bundle_id from APNS_DEFAULT_BUNDLE_ID, published in
-- relay_setting at start-up), the topic's default, the name that never changes, and the sizes Apple and Google
-- accept. A refusal says why; nothing is written.
CREATE OR REPLACE FUNCTION liverelay_channel_defaults() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    size integer;
BEGIN
    IF TG_OP = 'INSERT' AND NEW.name !~ '^[A-Za-z0-9_.~%-]{1,64}$' THEN
        RAISE EXCEPTION 'LiveRelay: channel name "%" must be 1 to 64 characters of A-Z, a-z, 0-9 and _ . ~ %% - '
                        '(it is also the channel''s FCM topic)', NEW.name
            USING ERRCODE = 'check_violation', HINT = 'Nothing was changed.';
    END IF;
    IF TG_OP = 'UPDATE' THEN
        IF NEW.name IS DISTINCT FROM OLD.name THEN
            RAISE EXCEPTION 'LiveRelay: a channel''s name cannot change (it names its SSE stream and FCM topic)'
                USING ERRCODE = 'check_violation', HINT = 'Create a new channel instead; nothing was changed.';
        END IF;
        NEW.updated_at := now();
    END IF;
    IF NEW.bundle_id IS NULL THEN
        NEW.bundle_id := (SELECT value FROM relay_setting WHERE name = 'default_bundle_id');
        IF NEW.bundle_id IS NULL THEN
            RAISE EXCEPTION 'LiveRelay: channel % has no bundle_id, and APNS_DEFAULT_BUNDLE_ID is not set', NEW.name
                USING ERRCODE = 'not_null_violation', HINT = 'Give bundle_id; nothing was changed.';
        END IF;
    END IF;
    NEW.fcm_topic := coalesce(NEW.fcm_topic, 'liverelay.' || NEW.name);
    IF NEW.content_state IS NOT NULL AND octet_length(NEW.content_state::text) > 2000 THEN
        size := liverelay_json_compact_length(liverelay_channel_payload('end', NEW));
        IF size > 5120 THEN
            RAISE EXCEPTION '%', format('LiveRelay: the broadcast payload for channel %s would be %s bytes; APNs '
                                        'accepts at most 5120 on a channel', NEW.name, size)
                USING ERRCODE = 'check_violation', HINT = 'Shorten content_state; nothing was changed.';
        END IF;
        size := liverelay_json_compact_length(liverelay_channel_fcm_data('end', NEW));
        IF size > 4096 AND liverelay_fcm_enabled() THEN
            RAISE EXCEPTION '%', format('LiveRelay: the FCM topic message data for channel %s would be %s bytes; FCM '
                                        'accepts at most 4096', NEW.name, size)
                USING ERRCODE = 'check_violation', HINT = 'Shorten content_state; nothing was changed.';
        END IF;
    END IF;
    RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER broadcast_channel_defaults
    BEFORE INSERT OR UPDATE ON broadcast_channel FOR EACH ROW EXECUTE FUNCTION liverelay_channel_defaults();

-- Whether the relays send FCM topic messages (published at start-up); without FCM only Apple's side is queued.
CREATE OR REPLACE FUNCTION liverelay_fcm_enabled() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT value = 'true' FROM relay_setting WHERE name = 'fcm_enabled'), false)
$$;

-- After a statement: the outbox rows and stream events its rows call for, then one wake-up.
--   INSERT (active): Apple creates the channel (its state is broadcast once it exists); the topic gets the state.
--   content_state of an active channel: update on both sides. active → ended: end on both sides.
--   → deleted: end first when it was active, then Apple deletes the channel. DELETE of the row: the same.
-- Writes to ended, deleted or failed channels, and the relay's own (apns_channel_id, failed), queue nothing.
-- Queues a statement's channel steps with their stream events; returns the outbox rows. Steps are queued in the order
-- given, Apple's before FCM's: a chain (one channel's one side) keeps its order, and a statement writing many channels
-- has its broadcasts claimed first, since they reach every iOS subscriber at once, where FCM fans a topic message out
-- at its own pace ("optimized for throughput rather than latency", in Google's words): the topic messages follow in
-- the next batches, and the whole statement takes about as long as with the two sides alternating.
CREATE OR REPLACE FUNCTION liverelay_queue_channel_steps(
    ids uuid[], platforms text[], steps text[], bundles text[], envs text[], payloads jsonb[], names text[],
    statuses text[], states jsonb[], events text[]
) RETURNS bigint[]
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    queued bigint[];
BEGIN
    WITH s AS MATERIALIZED (
        SELECT * FROM unnest(ids, platforms, steps, bundles, envs, payloads, names, statuses, states, events)
            WITH ORDINALITY AS s(id, platform, step, bundle_id, apns_env, payload, name, status, content_state, sse,
                                 ord)
    ), queued AS (
        INSERT INTO delivery_outbox (kind, channel_id, platform, event_type, bundle_id, apns_env, payload, request_id)
        SELECT 'channel', id, platform, step, bundle_id, apns_env, payload, liverelay_request_id()
        FROM s WHERE step IS NOT NULL ORDER BY platform <> 'ios', ord
        RETURNING id
    ), logged AS (
        INSERT INTO broadcast_log (channels, event, data)
        SELECT ARRAY['channel:' || name], sse,
               jsonb_build_object('channel', name, 'status', status, 'content_state', content_state)
        FROM s WHERE sse IS NOT NULL ORDER BY ord
    )
    SELECT array_agg(id) INTO queued FROM queued;
    RETURN queued;
END $$;

-- After a statement: the outbox rows and stream events its rows call for, then one wake-up.
--   INSERT (active): Apple creates the channel (its state is broadcast once it exists); the topic gets the state.
--   content_state of an active channel: update on both sides. active → ended: end on both sides.
--   → deleted: end first when it was active, then Apple deletes the channel. DELETE of the row: the same.
-- Writes to ended, deleted or failed channels, and the relay's own (apns_channel_id, failed), queue nothing.
-- A step of the other side (FCM) is queued only when the relays send FCM; its stream event is the iOS step's.
CREATE OR REPLACE FUNCTION liverelay_channel_written() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    queued bigint[];
    fcm boolean := liverelay_fcm_enabled();
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT liverelay_queue_channel_steps(
                   array_agg(n.id ORDER BY n.id, s.ord), array_agg(s.platform ORDER BY n.id, s.ord),
                   array_agg(CASE WHEN s.platform = 'ios' OR (fcm AND n.content_state IS NOT NULL) THEN s.step END
                             ORDER BY n.id, s.ord),
                   array_agg(n.bundle_id ORDER BY n.id, s.ord), array_agg(n.apns_env ORDER BY n.id, s.ord),
                   array_agg(NULL::jsonb ORDER BY n.id, s.ord), array_agg(n.name ORDER BY n.id, s.ord),
                   array_agg(n.status ORDER BY n.id, s.ord), array_agg(n.content_state ORDER BY n.id, s.ord),
                   array_agg(CASE WHEN s.platform = 'ios' AND n.content_state IS NOT NULL THEN 'channel-update' END
                             ORDER BY n.id, s.ord))
        INTO queued
        FROM new_rows n
        CROSS JOIN (VALUES (1, 'ios', 'create'), (2, 'android', 'update')) AS s(ord, platform, step)
        WHERE n.status = 'active';
    ELSIF TG_OP = 'UPDATE' THEN
        SELECT liverelay_queue_channel_steps(
                   array_agg(n.id ORDER BY n.id, s.ord), array_agg(s.platform ORDER BY n.id, s.ord),
                   array_agg(CASE WHEN s.platform = 'ios' OR fcm THEN s.step END ORDER BY n.id, s.ord),
                   array_agg(n.bundle_id ORDER BY n.id, s.ord), array_agg(n.apns_env ORDER BY n.id, s.ord),
                   array_agg(NULL::jsonb ORDER BY n.id, s.ord), array_agg(n.name ORDER BY n.id, s.ord),
                   array_agg(n.status ORDER BY n.id, s.ord), array_agg(n.content_state ORDER BY n.id, s.ord),
                   array_agg(s.sse ORDER BY n.id, s.ord))
        INTO queued
        FROM new_rows n
        JOIN old_rows o ON o.id = n.id
        CROSS JOIN (VALUES
            (1, 'ios', 'update', 'channel-update'), (2, 'android', 'update', NULL),
            (3, 'ios', 'end', 'channel-end'), (4, 'android', 'end', NULL), (5, 'ios', 'delete', NULL)
        ) AS s(ord, platform, step, sse)
        WHERE CASE s.step
              WHEN 'update' THEN o.status = 'active' AND n.status = 'active' AND n.content_state IS NOT NULL
                                 AND n.content_state IS DISTINCT FROM o.content_state
              WHEN 'end' THEN o.status = 'active' AND n.status IN ('ended', 'deleted')
              ELSE o.status IN ('active', 'ended') AND n.status = 'deleted'
          END;
    ELSE
        SELECT liverelay_queue_channel_steps(
                   array_agg(o.id ORDER BY o.id, s.ord), array_agg(s.platform ORDER BY o.id, s.ord),
                   array_agg(CASE WHEN s.platform = 'ios' OR fcm THEN s.step END ORDER BY o.id, s.ord),
                   array_agg(o.bundle_id ORDER BY o.id, s.ord), array_agg(o.apns_env ORDER BY o.id, s.ord),
                   array_agg(liverelay_channel_snapshot(o) ORDER BY o.id, s.ord),
                   array_agg(o.name ORDER BY o.id, s.ord),
                   array_agg('deleted'::text ORDER BY o.id, s.ord), array_agg(o.content_state ORDER BY o.id, s.ord),
                   array_agg(s.sse ORDER BY o.id, s.ord))
        INTO queued
        FROM old_rows o
        CROSS JOIN (VALUES
            (3, 'ios', 'end', 'channel-end'), (4, 'android', 'end', NULL), (5, 'ios', 'delete', NULL)
        ) AS s(ord, platform, step, sse)
        WHERE CASE s.step WHEN 'end' THEN o.status = 'active' ELSE o.status IN ('active', 'ended') END;
    END IF;
    IF queued IS NOT NULL THEN
        PERFORM liverelay_wake(queued);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER broadcast_channel_inserted
    AFTER INSERT ON broadcast_channel REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION liverelay_channel_written();
CREATE OR REPLACE TRIGGER broadcast_channel_updated
    AFTER UPDATE ON broadcast_channel REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION liverelay_channel_written();
CREATE OR REPLACE TRIGGER broadcast_channel_deleted
    AFTER DELETE ON broadcast_channel REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION liverelay_channel_written();
