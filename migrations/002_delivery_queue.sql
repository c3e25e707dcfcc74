-- What the relay must deliver, written by triggers in the same transaction as the write.

-- The delivery outbox. An `activity` row says "this activity needs a push": the relay builds the payload
-- from the activity's state when it sends, so a burst coalesces to the latest state and order is kept.
-- `alert` and `start` rows carry their payload and token: each is delivered once.
CREATE TABLE delivery_outbox (
    id              bigserial PRIMARY KEY,
    kind            text NOT NULL CHECK (kind IN ('activity', 'alert', 'start')),
    activity_id     uuid,
    event_type      text NOT NULL,
    secret_hash     text,
    session_id      text,
    device_token    text,
    bundle_id       text,
    apns_env        text CHECK (apns_env IN ('sandbox', 'production')),
    payload         jsonb,
    priority        smallint,
    apns_id         uuid NOT NULL DEFAULT gen_random_uuid(),
    request_id      uuid,
    enqueued_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    CHECK (kind <> 'activity' OR activity_id IS NOT NULL),
    CHECK (kind = 'activity' OR (device_token IS NOT NULL AND payload IS NOT NULL AND bundle_id IS NOT NULL))
);
CREATE INDEX delivery_outbox_due ON delivery_outbox (next_attempt_at, id);

-- Per activity: what was last sent, so aps.timestamp never decreases and a state is not sent twice.
CREATE TABLE activity_delivery_state (
    activity_id    uuid PRIMARY KEY REFERENCES activity_registration (id) ON DELETE CASCADE,
    last_timestamp bigint NOT NULL,
    last_payload   bytea NOT NULL,
    last_sent_at   timestamptz NOT NULL
);

-- The foreground stream: every event for SSE subscribers, in commit-independent sequence order.
CREATE TABLE broadcast_log (
    seq        bigserial PRIMARY KEY,
    channels   text[] NOT NULL,
    event      text NOT NULL,
    data       jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX broadcast_log_created ON broadcast_log (created_at);

-- Wake-up gate: one row per running relay. Writers NOTIFY only while some relay is idle and listening:
-- NOTIFY takes a cluster-wide lock through commit, so notifying on every write would serialise writers,
-- and a busy relay re-scans until there is nothing left anyway. Unlogged: after a crash the rows are gone
-- and each relay re-registers when it reconnects (and re-scans then).
CREATE UNLOGGED TABLE relay_wakeup (
    instance_id uuid PRIMARY KEY,
    idle        boolean NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Settings the relay keeps for itself (for example a generated token-signing secret).
CREATE TABLE relay_setting (
    name       text PRIMARY KEY,
    value      text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
