-- WidgetKit push (docs/widgets.md): the widget reloads a write queues, and what the relay records of them.

-- A reload of the widgets of every device row of these devices that has a widget token: one `widget` row per token,
-- due at once, or at the end of the window its last reload opened (the rows of one token coalesce when sent).
-- Called by the triggers of the writes that change what a device shows; returns the queued rows (NULL: none).
-- The window is LIVERELAY_WIDGET_MIN_INTERVAL, published by the relay when it starts (60 s on a database no relay has
-- started on), joined here rather than read by a SQL function: one with a subquery is never inlined, and would be
-- planned again for every row.
CREATE OR REPLACE FUNCTION liverelay_queue_widget_reloads(devices uuid[]) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
    queued bigint[];
BEGIN
    IF devices IS NULL THEN
        RETURN NULL;
    END IF;
    WITH queued AS (
        INSERT INTO delivery_outbox (kind, event_type, device_token, bundle_id, apns_env, platform, payload,
                                     priority, request_id, next_attempt_at)
        SELECT 'widget', 'reload', d.widget_push_token, d.bundle_id, d.apns_env, 'ios',
               '{"aps":{"content-changed":true}}'::jsonb, 10, liverelay_request_id(),
               greatest(now(), w.last_sent_at + coalesce(st.value::double precision, 60) * interval '1 second')
        FROM device_registration d
        LEFT JOIN widget_delivery_state w ON w.widget_token = d.widget_push_token
        LEFT JOIN relay_setting st ON st.name = 'widget_min_interval_seconds'
        WHERE d.device_uuid = ANY (devices) AND d.widget_push_token IS NOT NULL AND d.platform = 'ios'
        ORDER BY d.id
        RETURNING id
    )
    SELECT array_agg(id) INTO queued FROM queued;
    RETURN queued;
END $$;

-- A batch's widget outcomes: the tokens that got a reload (their window starts now), the tokens APNs declared dead
-- (set to NULL; the device row stays), and the rows put off to the end of their token's window (due then; not an
-- attempt, so no retry is spent and no error shown).
CREATE OR REPLACE FUNCTION liverelay_record_widgets(sent_tokens text[], dead_tokens text[], deferred_ids bigint[],
                                                    deferred_delays_ms bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(deferred_ids) > 0 THEN
        -- Due at the window's end as the queue function computes it (last reload + window), so that every row of a
        -- token put off in one window is due at the same instant and goes in one reload: a due time counted from
        -- this statement came later by the batch's send and record, and the rows the writers queued, due a little
        -- earlier, were sent alone, which opened a window of their own for the late ones (a third reload).
        UPDATE delivery_outbox o
        SET next_attempt_at = greatest(statement_timestamp(), coalesce(
                w.last_sent_at + coalesce(st.value::double precision, 60) * interval '1 second',
                statement_timestamp() + d.delay_ms * interval '1 millisecond'))
        FROM unnest(deferred_ids, deferred_delays_ms) AS d(id, delay_ms)
        JOIN delivery_outbox r ON r.id = d.id
        LEFT JOIN widget_delivery_state w ON w.widget_token = r.device_token
        LEFT JOIN relay_setting st ON st.name = 'widget_min_interval_seconds'
        WHERE o.id = d.id;
    END IF;
    IF cardinality(sent_tokens) > 0 THEN
        INSERT INTO widget_delivery_state (widget_token, last_sent_at)
        SELECT DISTINCT t, statement_timestamp() FROM unnest(sent_tokens) AS t
        ON CONFLICT (widget_token) DO UPDATE SET last_sent_at = excluded.last_sent_at;
    END IF;
    IF cardinality(dead_tokens) > 0 THEN
        UPDATE device_registration SET widget_push_token = NULL WHERE widget_push_token = ANY (dead_tokens);
        DELETE FROM widget_delivery_state WHERE widget_token = ANY (dead_tokens);
    END IF;
END $$;
