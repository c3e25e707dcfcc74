-- The life of an activity (DESIGN.md "Activity lifecycle"; docs/lifecycle.md).

-- Webhook endpoints. The secret signs requests, so it is kept as given; it is never shown after creation.
CREATE TABLE webhook_endpoint (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    url        text NOT NULL
        CONSTRAINT "url must be an http(s) URL of at most 2048 characters"
        CHECK (url ~ '^https?://[^/?#@\s]+([/?#]\S*)?$' AND length(url) <= 2048),
    secret     text NOT NULL
        CONSTRAINT "secret must be 16 to 256 characters" CHECK (length(secret) BETWEEN 16 AND 256),
    events     text[] NOT NULL DEFAULT ARRAY['live_activity.started', 'live_activity.updated', 'live_activity.ended',
        'live_activity.invalidated', 'live_activity.failed', 'live_activity.stale']
        CONSTRAINT "events must be known live_activity event types"
        CHECK (events <@ ARRAY['live_activity.started', 'live_activity.updated', 'live_activity.ended',
            'live_activity.invalidated', 'live_activity.failed', 'live_activity.stale'] AND cardinality(events) > 0),
    enabled    boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Lifecycle events waiting for their webhook: one row per event and endpoint, the exact body to send.
CREATE TABLE webhook_outbox (
    id              bigserial PRIMARY KEY,
    endpoint_id     uuid NOT NULL REFERENCES webhook_endpoint (id) ON DELETE CASCADE,
    event_id        uuid NOT NULL,
    event_type      text NOT NULL,
    activity_id     uuid NOT NULL,
    body            text NOT NULL,
    enqueued_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at, id);
-- Events of one activity go to one endpoint in order: the claim looks for an earlier row of the same chain.
CREATE INDEX webhook_outbox_chain ON webhook_outbox (endpoint_id, activity_id, id);

-- Webhook deliveries are logged beside pushes; every push says at which priority it went, and why.
ALTER TABLE delivery_log DROP CONSTRAINT "transport must be apns or fcm";
ALTER TABLE delivery_log
    ADD CONSTRAINT "transport must be apns, fcm or webhook" CHECK (transport IN ('apns', 'fcm', 'webhook')),
    ADD COLUMN endpoint_id     uuid,
    ADD COLUMN event_id        uuid,
    ADD COLUMN priority        smallint,
    ADD COLUMN priority_reason text
        CONSTRAINT "priority_reason must be requested, end, alert, start or budget"
        CHECK (priority_reason IN ('requested', 'end', 'alert', 'start', 'budget'));

-- Late tokens: an activity may wait for its update token. The age limit counts from the last start.
ALTER TABLE activity_registration
    ALTER COLUMN activity_token DROP NOT NULL,
    ADD COLUMN frequent_updates boolean NOT NULL DEFAULT false,
    ADD COLUMN started_at timestamptz NOT NULL DEFAULT now();

-- The priority-10 pushes accepted in the last hour (epoch seconds), for the update budget.
ALTER TABLE activity_delivery_state ADD COLUMN priority10_sent_at bigint[] NOT NULL DEFAULT '{}';

-- Push-to-start tokens per attributes type (iOS 17.2+ reports one per type); a new one for a type replaces the old.
CREATE TABLE device_push_to_start (
    device_id       uuid NOT NULL REFERENCES device_registration (id) ON DELETE CASCADE,
    attributes_type text NOT NULL
        CONSTRAINT "attributes_type must be 1 to 255 characters" CHECK (length(attributes_type) BETWEEN 1 AND 255),
    token           text NOT NULL CONSTRAINT "token must not be empty" CHECK (token <> ''),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (device_id, attributes_type)
);
CREATE INDEX device_push_to_start_token ON device_push_to_start (token);

-- Defaults per attributes type: the stale date of pushes to activities that set none.
CREATE TABLE activity_type_setting (
    attributes_type text PRIMARY KEY,
    stale_after     interval
        CONSTRAINT "stale_after must be positive" CHECK (stale_after > interval '0'),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- The age sweeper looks only at active activities, oldest start first.
CREATE INDEX activity_registration_active_age ON activity_registration (started_at) WHERE status = 'active';
