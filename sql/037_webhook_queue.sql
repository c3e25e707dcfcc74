-- The webhook queue: the workers' claim, lease, sweep and record (the events are emitted in sql/035_lifecycle.sql).

-- How far each claimed chain (endpoint, activity) may be sent: up to (not including) its first row in the outbox
-- that this claim does not hold, read with a snapshot taken after the chain locks (a separate VOLATILE function for
-- that reason, as the delivery claim reads states). Such a row holds back every row after it: one that waits for
-- a retry (another relay may have rescheduled it just before our locks), one past the claim's limit, or one another
-- worker had locked when we claimed (it skipped the chain) while we took the rows around it. A chain none of whose
-- claimed rows may go is unlocked here (the claim's chain locks are session-level, see liverelay_claim_webhooks).
DROP FUNCTION IF EXISTS liverelay_open_webhook_chains(uuid[], uuid[], bigint[]);
CREATE OR REPLACE FUNCTION liverelay_webhook_chains_until(endpoint_ids uuid[], activity_ids uuid[],
                                                          claimed_ids bigint[])
RETURNS TABLE (endpoint_id uuid, activity_id uuid, until_id bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    chain record;
BEGIN
    FOR chain IN
        SELECT c.e, c.a,
               coalesce((SELECT min(o.id) FROM webhook_outbox o
                         WHERE o.endpoint_id = c.e AND o.activity_id = c.a AND o.id <> ALL (claimed_ids)),
                        9223372036854775807) AS until_id,
               (SELECT min(o.id) FROM webhook_outbox o
                WHERE o.endpoint_id = c.e AND o.activity_id = c.a AND o.id = ANY (claimed_ids)) AS first_claimed
        FROM unnest(endpoint_ids, activity_ids) AS c(e, a)
    LOOP
        IF chain.first_claimed IS NOT NULL AND chain.first_claimed < chain.until_id THEN
            endpoint_id := chain.e;
            activity_id := chain.a;
            until_id := chain.until_id;
            RETURN NEXT;
        ELSE
            PERFORM pg_advisory_unlock(hashtextextended(chain.e::text || chain.a::text, 7032));
        END IF;
    END LOOP;
END $$;

-- One webhook worker's claim, one statement in its own transaction: up to `batch` due rows of existing, enabled
-- endpoints that no earlier row of their chain waits before, of the chains (endpoint, activity) this session could
-- lock, oldest first. The chain locks are session-level: they outlive the statement and are the claim's lease. The
-- worker sends each chain's rows in order, records their outcomes (liverelay_record_webhooks) and only then unlocks
-- the chain (liverelay_unlock_webhook_chains), chain by chain, so that an endpoint that hangs holds only its own
-- chains. A relay that dies loses its connection and with it its locks: its rows are claimed again at once.
-- `busy_endpoints`/`busy_activities` are the chains the session is still sending: a session-level lock is
-- re-entrant, so the caller names them to keep their rows out of the claim. A chain locked here whose every row turns
-- out held back is unlocked before the statement ends (liverelay_webhook_chains_until).
-- Every statement goes through an index, as in the delivery claim (sql/040_delivery.sql), but is planned at each call
-- (a claim every 50 ms at most): with its busy chains as a constant the planner can look each row up in a hash of them
-- (`<> ALL` over a constant list); a generic plan compared every row with every busy chain, 300 ms a claim once 2,000
-- chains were in flight and 100,000 events waited.
DROP FUNCTION IF EXISTS liverelay_claim_webhooks(integer);
DROP FUNCTION IF EXISTS liverelay_claim_webhooks(integer, uuid[], uuid[]);
CREATE FUNCTION liverelay_claim_webhooks(batch integer, busy_endpoints uuid[], busy_activities uuid[])
RETURNS TABLE (id bigint, endpoint_id uuid, url text, secret text, event_id uuid, event_type text, activity_id uuid,
               body text, enqueued_at double precision, attempts integer)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_custom_plan SET enable_seqscan = off SET jit = off
SET enable_sort = on SET enable_bitmapscan = on
AS $$
#variable_conflict use_column
DECLARE
    claimed bigint[];
    chain_endpoints uuid[];
    chain_activities uuid[];
    busy text[] := ARRAY(SELECT b.e::text || b.a::text FROM unnest(busy_endpoints, busy_activities) AS b(e, a));
BEGIN
    -- The oldest due rows come from walking webhook_outbox_due in order until the limit: never a scan of every due
    -- row and a sort, which the planner picks when it expects the filters to leave few rows (600 ms a claim with
    -- 230,000 events waiting). Restored for the statements after it (and by the function's SET on return).
    PERFORM set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true);
    SELECT array_agg(c.id) INTO claimed
    FROM (SELECT o.id FROM webhook_outbox o
          WHERE o.next_attempt_at <= now()
            -- An earlier row of the chain waiting for its retry holds this one back. Looked up per row through
            -- webhook_outbox_chain: OFFSET 0 keeps it a per-row lookup and IS TRUE keeps the due index out of it. As a
            -- join, the planner (expecting one waiting row) read every waiting row once per candidate: 114 ms a claim
            -- with 3,000 rows waiting for retries, against 4 ms.
            AND NOT EXISTS (SELECT 1 FROM webhook_outbox e
                            WHERE e.endpoint_id = o.endpoint_id AND e.activity_id = o.activity_id AND e.id < o.id
                              AND (e.next_attempt_at > now()) IS TRUE
                            OFFSET 0)
            AND EXISTS (SELECT 1 FROM webhook_endpoint w WHERE w.id = o.endpoint_id AND w.enabled)
            AND o.endpoint_id::text || o.activity_id::text <> ALL (busy)
          ORDER BY o.next_attempt_at, o.id
          LIMIT batch
          FOR UPDATE OF o SKIP LOCKED) c;
    PERFORM set_config('enable_sort', 'on', true), set_config('enable_bitmapscan', 'on', true);
    IF claimed IS NULL THEN
        RETURN;
    END IF;
    -- (pg_try_advisory_lock is volatile: the planner evaluates it once per chain, never pushed below the grouping.)
    SELECT array_agg(c.endpoint_id ORDER BY c.first_id), array_agg(c.activity_id ORDER BY c.first_id)
    INTO chain_endpoints, chain_activities
    FROM (SELECT o.endpoint_id, o.activity_id, min(o.id) AS first_id FROM webhook_outbox o
          WHERE o.id = ANY (claimed) GROUP BY 1, 2) c
    WHERE pg_try_advisory_lock(hashtextextended(c.endpoint_id::text || c.activity_id::text, 7032));
    IF chain_endpoints IS NULL THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT o.id, o.endpoint_id, w.url, w.secret, o.event_id, o.event_type, o.activity_id, o.body,
           extract(epoch FROM o.enqueued_at)::float8, o.attempts
    FROM liverelay_webhook_chains_until(chain_endpoints, chain_activities, claimed) k
    JOIN webhook_outbox o ON o.endpoint_id = k.endpoint_id AND o.activity_id = k.activity_id AND o.id < k.until_id
                             AND o.id = ANY (claimed)
    JOIN webhook_endpoint w ON w.id = o.endpoint_id
    ORDER BY o.id;
END $$;

-- Ends the lease of chains whose outcomes are recorded (see liverelay_claim_webhooks): called after the record's
-- transaction committed, so that whoever locks a chain next sees what was sent.
CREATE OR REPLACE FUNCTION liverelay_unlock_webhook_chains(endpoint_ids uuid[], activity_ids uuid[])
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_unlock(hashtextextended(c.e::text || c.a::text, 7032))
    FROM unnest(endpoint_ids, activity_ids) AS c(e, a);
END $$;

-- Events left behind by a deleted endpoint (a writer that read the endpoint just before it went, or a row a worker
-- held while the endpoint was deleted and has not recorded). Returns how many it removed. The endpoints the queue
-- names are listed by skipping through webhook_outbox_chain (one probe per endpoint), so a sweep costs next to
-- nothing however many events wait for endpoints that exist (62 ms against 4 ms with 100,000 waiting).
CREATE OR REPLACE FUNCTION liverelay_drop_orphan_webhooks(batch integer) RETURNS integer
LANGUAGE sql VOLATILE AS $$
    WITH RECURSIVE named AS (
        SELECT (SELECT endpoint_id FROM webhook_outbox ORDER BY endpoint_id LIMIT 1) AS id
        UNION ALL
        SELECT (SELECT o.endpoint_id FROM webhook_outbox o WHERE o.endpoint_id > n.id ORDER BY o.endpoint_id LIMIT 1)
        FROM named n WHERE n.id IS NOT NULL
    ), gone AS (
        DELETE FROM webhook_outbox WHERE id IN (
            SELECT o.id FROM webhook_outbox o
            WHERE o.endpoint_id IN (SELECT n.id FROM named n
                                    WHERE n.id IS NOT NULL
                                      AND NOT EXISTS (SELECT 1 FROM webhook_endpoint w WHERE w.id = n.id))
            LIMIT batch FOR UPDATE SKIP LOCKED)
        RETURNING 1)
    SELECT count(*)::integer FROM gone;
$$;

-- Seconds until the earliest row of an enabled endpoint is due (at most 0 when one is due already, held by another
-- worker or behind its chain's head; NULL when there is none): how long an idle webhook worker may sleep.
-- The earliest row is found by walking webhook_outbox_due in order, not by aggregating the whole queue.
DROP FUNCTION IF EXISTS liverelay_next_webhook_due();
CREATE FUNCTION liverelay_next_webhook_due() RETURNS double precision
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET jit = off
AS $$
BEGIN
    RETURN (SELECT extract(epoch FROM o.next_attempt_at - now())::float8
            FROM webhook_outbox o
            WHERE EXISTS (SELECT 1 FROM webhook_endpoint w WHERE w.id = o.endpoint_id AND w.enabled)
            ORDER BY o.next_attempt_at
            LIMIT 1);
END $$;

-- Webhook outcomes in one statement: log rows, delivered and given-up rows removed, retries rescheduled.
-- (PL/pgSQL for its kept plans.) NULL where an outcome has no error, status or latency (nullif: an earlier relay
-- sent '' / 0 / -1 for it).
CREATE OR REPLACE FUNCTION liverelay_record_webhooks(
    log_outbox_id bigint[], log_status text[], log_error text[], log_http_status integer[],
    log_latency_ms double precision[], finished_ids bigint[], retry_ids bigint[], retry_delays_ms bigint[],
    retry_errors text[]
) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    WITH logged AS (
        INSERT INTO delivery_log (event_type, status, error, outbox_id, activity_id, attempt, latency_ms, transport,
                                  provider_status, endpoint_id, event_id, session_id)
        SELECT o.event_type, l.status, nullif(l.error, ''), o.id, o.activity_id, o.attempts + 1,
               nullif(l.latency_ms, -1), 'webhook', nullif(l.http_status, 0), o.endpoint_id, o.event_id, a.session_id
        FROM unnest(log_outbox_id, log_status, log_error, log_http_status, log_latency_ms)
             AS l(outbox_id, status, error, http_status, latency_ms)
        JOIN webhook_outbox o ON o.id = l.outbox_id
        LEFT JOIN activity_registration a ON a.id = o.activity_id
    ), announced AS (
        -- A summary on the admin channel, as for pushes, of a batch that changes what an endpoint shows (a dashboard's
        -- webhook list and delivery log follow it): one that holds a refusal, or a success after refusals. The steady
        -- flow of first-attempt successes is left out: a log row per batch cost B8 5-10% of its rate.
        INSERT INTO broadcast_log (channels, event, data)
        SELECT ARRAY['admin'], 'deliveries', summary FROM liverelay_outcomes_summary(log_status) AS summary
        WHERE EXISTS (SELECT 1 FROM unnest(log_outbox_id, log_status) AS l(outbox_id, status)
                      JOIN webhook_outbox o ON o.id = l.outbox_id
                      WHERE l.status <> 'sent' OR o.attempts > 0)
    ), removed AS (
        -- A retry for an endpoint deleted meanwhile is dropped, not rescheduled.
        DELETE FROM webhook_outbox o
        WHERE o.id = ANY (finished_ids)
           OR (o.id = ANY (retry_ids) AND NOT EXISTS (SELECT 1 FROM webhook_endpoint w WHERE w.id = o.endpoint_id))
    )
    UPDATE webhook_outbox o SET attempts = o.attempts + 1,
           next_attempt_at = now() + r.delay_ms * interval '1 millisecond', last_error = r.error
    FROM unnest(retry_ids, retry_delays_ms, retry_errors) AS r(id, delay_ms, error)
    WHERE o.id = r.id AND EXISTS (SELECT 1 FROM webhook_endpoint w WHERE w.id = o.endpoint_id);
END $$;

-- An endpoint enabled again (`PATCH /v1/webhooks/{id}` or any SQL writer) has its waiting events due at once, retries
-- included, and wakes every relay's webhook workers: a paused endpoint's events waited for it, not for a backoff.
CREATE OR REPLACE FUNCTION liverelay_webhook_resumed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE webhook_outbox SET next_attempt_at = now() WHERE endpoint_id = NEW.id AND next_attempt_at > now();
    PERFORM pg_notify('liverelay_wake', 'webhooks');
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER webhook_endpoint_resumed
    AFTER UPDATE OF enabled ON webhook_endpoint
    FOR EACH ROW WHEN (NEW.enabled AND NOT OLD.enabled) EXECUTE FUNCTION liverelay_webhook_resumed();
