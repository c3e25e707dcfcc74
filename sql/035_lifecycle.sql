-- Lifecycle events and their webhooks (README "Activity lifecycle"; docs/lifecycle.md).

-- Emits lifecycle events of activities, in the caller's transaction: the documented body, built once per event,
-- goes to every enabled endpoint subscribed to its type (webhook_outbox) and onto the admin-only `admin` stream
-- channel. `deliveries` (parallel to the other arrays, or NULL) is the delivery outcome an event reports. `wake`:
-- wake an idle relay for the stream, and the webhook workers with a `webhooks` notification when rows were queued
-- (writers' triggers); a delivery batch does neither: its relay rings them after the batch. Returns how many webhook
-- rows it queued.
DROP FUNCTION IF EXISTS liverelay_emit_lifecycle(text[], uuid[], json[]);
CREATE OR REPLACE FUNCTION liverelay_emit_lifecycle(types text[], activity_ids uuid[], deliveries json[],
                                                    wake boolean)
RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    queued integer;
BEGIN
    WITH events AS MATERIALIZED (
        SELECT e.ord, e.type, a.id AS activity_id, gen_random_uuid() AS event_id, e.delivery,
               json_build_object('id', a.id, 'session_id', a.session_id, 'external_id', a.external_id,
                                 'user_id', a.user_id, 'platform', a.platform, 'status', a.status) AS activity
        FROM unnest(types, activity_ids, deliveries) WITH ORDINALITY AS e(type, activity_id, delivery, ord)
        JOIN activity_registration a ON a.id = e.activity_id
        WHERE e.type IS NOT NULL AND e.type <> ''
    ), bodies AS MATERIALIZED (
        SELECT ord, type, activity_id, event_id, json_build_object(
                   'id', event_id, 'type', type,
                   'created_at', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                   'data', CASE WHEN delivery IS NULL THEN json_build_object('activity', activity)
                                ELSE json_build_object('activity', activity, 'delivery', delivery) END)::text AS body
        FROM events
    ), queued AS (
        INSERT INTO webhook_outbox (endpoint_id, event_id, event_type, activity_id, body)
        SELECT w.id, b.event_id, b.type, b.activity_id, b.body
        FROM bodies b
        JOIN webhook_endpoint w ON w.enabled AND b.type = ANY (w.events)
        ORDER BY b.ord, w.id
        RETURNING 1
    ), announced AS (
        INSERT INTO broadcast_log (channels, event, data)
        SELECT ARRAY['admin'], type, body::jsonb FROM bodies ORDER BY ord
        RETURNING 1
    )
    -- (A data-modifying CTE runs to completion whether or not it is read: `announced` needs no reference.)
    SELECT count(*) INTO queued FROM queued;
    IF wake THEN
        PERFORM liverelay_wake();
        IF queued > 0 THEN
            PERFORM pg_notify('liverelay_wake', 'webhooks');
        END IF;
    END IF;
    RETURN queued;
END $$;

-- `started` when an activity is inserted or becomes active again, `invalidated` when its token is found dead,
-- whoever wrote the row. A push-to-start's activity (the transaction sets liverelay.push_to_start) is started when
-- APNs accepts the push-to-start, by the delivery worker.
CREATE OR REPLACE FUNCTION liverelay_activity_lifecycle() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    types text[];
    ids uuid[];
    deliveries json[];
    starting boolean := coalesce(current_setting('liverelay.push_to_start', true), '') <> 'on';
BEGIN
    IF TG_OP = 'INSERT' THEN
        SELECT array_agg('live_activity.started'::text ORDER BY n.id), array_agg(n.id ORDER BY n.id) INTO types, ids
        FROM new_rows n WHERE n.status = 'active' AND starting;
    ELSE
        -- Every event of an update needs a row that is, or was, not active: most updates (content) have none, and
        -- two scans that stop at the first such row cost them less than the join below.
        IF NOT EXISTS (SELECT 1 FROM new_rows WHERE status <> 'active')
           AND NOT EXISTS (SELECT 1 FROM old_rows WHERE status <> 'active') THEN
            RETURN NULL;
        END IF;
        SELECT array_agg(e.type ORDER BY n.id), array_agg(n.id ORDER BY n.id) INTO types, ids
        FROM new_rows n
        JOIN old_rows o ON o.id = n.id
        CROSS JOIN LATERAL (SELECT CASE
            WHEN n.status = 'invalidated' AND o.status <> 'invalidated' THEN 'live_activity.invalidated'
            WHEN n.status = 'active' AND o.status <> 'active' AND starting THEN 'live_activity.started'
        END AS type) e
        WHERE e.type IS NOT NULL;
    END IF;
    IF types IS NOT NULL THEN
        -- An `invalidated` written by a delivery batch carries the answer that declared the token dead
        -- (liverelay_retire_tokens sets it); one written by anyone else (psql, say) carries none.
        deliveries := ARRAY(SELECT CASE WHEN t.type = 'live_activity.invalidated' THEN (
                                      nullif(current_setting('liverelay.invalidated_by', true), '')::json
                                      -> (t.id::text)) END
                            FROM unnest(types, ids) WITH ORDINALITY AS t(type, id, ord) ORDER BY t.ord);
        PERFORM liverelay_emit_lifecycle(types, ids, deliveries, true);
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER activity_registration_lifecycle_insert
    AFTER INSERT ON activity_registration REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION liverelay_activity_lifecycle();
CREATE OR REPLACE TRIGGER activity_registration_lifecycle_update
    AFTER UPDATE ON activity_registration REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION liverelay_activity_lifecycle();

-- The age limit counts from the last start: an activity that becomes active again starts again.
CREATE OR REPLACE FUNCTION liverelay_activity_restarted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'active' AND OLD.status <> 'active' THEN
        NEW.started_at := now();
    END IF;
    RETURN NEW;
END $$;

CREATE OR REPLACE TRIGGER activity_registration_restarted
    BEFORE UPDATE OF status ON activity_registration FOR EACH ROW EXECUTE FUNCTION liverelay_activity_restarted();

-- Ends (once, whichever relay gets there first: the row locks decide) the active activities started longer ago
-- than `max_age_seconds`, at most `batch` of them: the update trigger queues their `end` push, and each gets a
-- `live_activity.stale` event. Returns how many it ended.
CREATE OR REPLACE FUNCTION liverelay_sweep_stale(max_age_seconds double precision, batch integer) RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    ids uuid[];
BEGIN
    WITH due AS (
        SELECT id FROM activity_registration
        WHERE status = 'active' AND started_at < now() - max_age_seconds * interval '1 second'
        ORDER BY started_at LIMIT batch FOR UPDATE SKIP LOCKED
    ), ended AS (
        UPDATE activity_registration a SET status = 'ended' FROM due WHERE a.id = due.id RETURNING a.id
    )
    SELECT array_agg(id ORDER BY id) INTO ids FROM ended;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM liverelay_emit_lifecycle(array_fill('live_activity.stale'::text, ARRAY[cardinality(ids)]), ids, NULL,
                                     true);
    RETURN cardinality(ids);
END $$;
