-- The tables writers use directly (DESIGN.md "Tables").

CREATE TABLE device_registration (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    secret_hash         text NOT NULL
        CONSTRAINT "secret_hash must be lowercase hex SHA-256 of the pairing secret"
        CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
    device_token        text NOT NULL
        CONSTRAINT "device_token must not be empty" CHECK (device_token <> ''),
    bundle_id           text NOT NULL,
    apns_env            text NOT NULL DEFAULT 'production'
        CONSTRAINT "apns_env must be sandbox or production" CHECK (apns_env IN ('sandbox', 'production')),
    platform            text NOT NULL DEFAULT 'ios'
        CONSTRAINT "platform must be ios or android" CHECK (platform IN ('ios', 'android')),
    push_to_start_token text,
    device_uuid         uuid,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE (secret_hash, device_token)
);
CREATE INDEX device_registration_token ON device_registration (device_token);
CREATE INDEX device_registration_device ON device_registration (device_uuid) WHERE device_uuid IS NOT NULL;

CREATE TABLE activity_registration (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    secret_hash     text NOT NULL
        CONSTRAINT "secret_hash must be lowercase hex SHA-256 of the pairing secret"
        CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
    session_id      text NOT NULL,
    activity_token  text NOT NULL
        CONSTRAINT "activity_token must not be empty" CHECK (activity_token <> ''),
    bundle_id       text NOT NULL,
    apns_env        text NOT NULL DEFAULT 'production'
        CONSTRAINT "apns_env must be sandbox or production" CHECK (apns_env IN ('sandbox', 'production')),
    platform        text NOT NULL DEFAULT 'ios'
        CONSTRAINT "platform must be ios or android" CHECK (platform IN ('ios', 'android')),
    device_uuid     uuid,
    attributes_type text,
    attributes      jsonb
        CONSTRAINT "attributes must be a JSON object" CHECK (attributes IS NULL OR jsonb_typeof(attributes) = 'object'),
    content_state   jsonb
        CONSTRAINT "content_state must be a JSON object" CHECK (content_state IS NULL OR jsonb_typeof(content_state) = 'object'),
    status          text NOT NULL DEFAULT 'active'
        CONSTRAINT "status must be active, ended or invalidated" CHECK (status IN ('active', 'ended', 'invalidated')),
    -- Optional push fields: APNs stale-date, dismissal-date (for end), relevance-score, apns-priority of updates.
    stale_date      timestamptz,
    dismissal_date  timestamptz,
    relevance_score double precision,
    priority        smallint NOT NULL DEFAULT 10
        CONSTRAINT "priority must be 5 or 10" CHECK (priority IN (5, 10)),
    external_id     text,
    user_id         text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (secret_hash, session_id)
);
CREATE INDEX activity_registration_device ON activity_registration (device_uuid) WHERE device_uuid IS NOT NULL;

CREATE TABLE device_live_activity_message (
    device_uuid uuid PRIMARY KEY,
    message     text NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text
);

-- One row per delivery outcome.
CREATE TABLE delivery_log (
    id           bigserial PRIMARY KEY,
    secret_hash  text,
    event_type   text NOT NULL,
    session_id   text,
    status       text NOT NULL CHECK (status IN ('sent', 'failed', 'coalesced', 'retrying')),
    error        text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    outbox_id    bigint,
    activity_id  uuid,
    push_type    text,
    apns_env     text,
    token_suffix text,
    apns_id      uuid,
    apns_status  integer,
    apns_reason  text,
    attempt      integer,
    latency_ms   double precision,
    request_id   uuid
);
CREATE INDEX delivery_log_created ON delivery_log (created_at);
CREATE INDEX delivery_log_request ON delivery_log (request_id) WHERE request_id IS NOT NULL;
