-- Broadcast channels: one write reaches every subscriber (README "Broadcast channels", docs/channels.md).

CREATE TABLE broadcast_channel (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name            text NOT NULL UNIQUE
        CONSTRAINT "name must be 1-64 characters of A-Za-z0-9_.~%- (an FCM topic)"
        CHECK (name ~ '^[A-Za-z0-9_.~%-]{1,64}$'),
    -- Filled from APNS_DEFAULT_BUNDLE_ID when the writer gives none (liverelay_channel_defaults).
    bundle_id       text NOT NULL CONSTRAINT "bundle_id must not be empty" CHECK (bundle_id <> ''),
    apns_env        text NOT NULL DEFAULT 'production'
        CONSTRAINT "apns_env must be sandbox or production" CHECK (apns_env IN ('sandbox', 'production')),
    storage_policy  smallint NOT NULL DEFAULT 0
        CONSTRAINT "storage_policy must be 0 (none) or 1 (latest message stored)"
        CHECK (storage_policy IN (0, 1)),
    attributes_type text,
    content_state   jsonb
        CONSTRAINT "content_state must be a JSON object"
        CHECK (content_state IS NULL OR jsonb_typeof(content_state) = 'object'),
    status          text NOT NULL DEFAULT 'active'
        CONSTRAINT "status must be active, ended, deleted or failed"
        CHECK (status IN ('active', 'ended', 'deleted', 'failed')),
    apns_channel_id text,
    fcm_topic       text NOT NULL
        CONSTRAINT "fcm_topic must be 1-900 characters of A-Za-z0-9_.~%-"
        CHECK (fcm_topic ~ '^[A-Za-z0-9_.~%-]+$' AND length(fcm_topic) <= 900),
    priority        smallint NOT NULL DEFAULT 10 CONSTRAINT "priority must be 5 or 10" CHECK (priority IN (5, 10)),
    stale_date      timestamptz,
    dismissal_date  timestamptz,
    relevance_score double precision,
    error           text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX broadcast_channel_status ON broadcast_channel (status, name);

-- A `channel` outbox row says "this channel needs a create, update, end or delete on one side": `platform` ios is
-- Apple's side (channel management and broadcast), android the FCM topic. Updates and ends are built from the
-- channel's state when they are sent (a burst coalesces); a row queued by a SQL DELETE carries the channel as it was
-- in `payload`, since the row is gone by then.
ALTER TABLE delivery_outbox ADD COLUMN channel_id uuid;
ALTER TABLE delivery_outbox DROP CONSTRAINT delivery_outbox_kind_check;
ALTER TABLE delivery_outbox DROP CONSTRAINT delivery_outbox_check1;
ALTER TABLE delivery_outbox
    ADD CONSTRAINT delivery_outbox_kind_check CHECK (kind IN ('activity', 'alert', 'start', 'channel')),
    ADD CONSTRAINT delivery_outbox_check1 CHECK (kind IN ('activity', 'channel')
        OR (device_token IS NOT NULL AND payload IS NOT NULL AND bundle_id IS NOT NULL)),
    ADD CONSTRAINT "a channel row names its channel" CHECK (kind <> 'channel' OR channel_id IS NOT NULL);

-- Per channel and side: what was last sent, so the timestamp never decreases and a state is not sent twice.
CREATE TABLE channel_delivery_state (
    channel_id     uuid NOT NULL,
    platform       text NOT NULL,
    last_timestamp bigint NOT NULL,
    last_payload   text NOT NULL,
    last_sent_at   timestamptz NOT NULL,
    PRIMARY KEY (channel_id, platform)
);

-- Channel deliveries in the log: the channel's name, and the two channel transports.
ALTER TABLE delivery_log DROP CONSTRAINT "transport must be apns, fcm or webhook";
ALTER TABLE delivery_log
    ADD CONSTRAINT "transport must be apns, fcm, webhook, apns-broadcast, fcm-topic"
        CHECK (transport IN ('apns', 'fcm', 'webhook', 'apns-broadcast', 'fcm-topic')),
    ADD COLUMN channel text;
CREATE INDEX delivery_log_channel ON delivery_log (channel, id) WHERE channel IS NOT NULL;
