-- Foreground-aware delivery and WidgetKit push (docs/foreground.md, docs/widgets.md).

-- Presence: the relays that are alive (each writes its heartbeat every few seconds) and the streams each holds that
-- make an activity foreground: a stream authorised by a device's token following device:<uuid>, or by a pairing
-- secret following session:<id> (one row per stream and such channel). A relay that stops heartbeating stops
-- counting: every reader checks heartbeat_at, and the next sweep deletes it with its streams.
CREATE TABLE relay_instance (
    id           uuid PRIMARY KEY,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE stream_presence (
    relay_id    uuid NOT NULL REFERENCES relay_instance (id) ON DELETE CASCADE,
    stream_id   bigint NOT NULL,
    device_uuid uuid,
    secret_hash text,
    session_id  text,
    opened_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT "a presence names a device, or a secret and a session"
        CHECK ((device_uuid IS NOT NULL) <> (secret_hash IS NOT NULL AND session_id IS NOT NULL))
);
CREATE INDEX stream_presence_stream ON stream_presence (relay_id, stream_id);
CREATE INDEX stream_presence_device ON stream_presence (device_uuid) WHERE device_uuid IS NOT NULL;
CREATE INDEX stream_presence_session ON stream_presence (secret_hash, session_id) WHERE session_id IS NOT NULL;

-- Activities whose update was skipped while foreground (LIVERELAY_FOREGROUND_PUSH=skip): when they stop being
-- foreground, their latest state is queued and the row removed (no foreign key: the batch that skips must not fail
-- on an activity deleted meanwhile; the catch-up ignores rows of activities that are gone).
CREATE TABLE activity_foreground_skip (
    activity_id uuid PRIMARY KEY,
    skipped_at  timestamptz NOT NULL DEFAULT now()
);

-- A skipped push is logged `skipped`; the priority of a push may be lowered because its app is open.
ALTER TABLE delivery_log DROP CONSTRAINT delivery_log_status_check;
ALTER TABLE delivery_log
    ADD CONSTRAINT "status must be sent, failed, coalesced, retrying or skipped"
        CHECK (status IN ('sent', 'failed', 'coalesced', 'retrying', 'skipped'));
ALTER TABLE delivery_log DROP CONSTRAINT "priority_reason must be requested, end, alert, start or budget";
ALTER TABLE delivery_log
    ADD CONSTRAINT "priority_reason must be requested, end, alert, start, budget or foreground"
        CHECK (priority_reason IN ('requested', 'end', 'alert', 'start', 'budget', 'foreground'));

-- WidgetKit push: a device row's widget token, and when each token last got a reload (the coalescing window).
ALTER TABLE device_registration ADD COLUMN widget_push_token text
    CONSTRAINT "widget_push_token must be 1-512 bytes" CHECK (octet_length(widget_push_token) BETWEEN 1 AND 512);
CREATE INDEX device_registration_widget ON device_registration (device_uuid)
    WHERE widget_push_token IS NOT NULL AND device_uuid IS NOT NULL;
CREATE INDEX device_registration_widget_token ON device_registration (widget_push_token)
    WHERE widget_push_token IS NOT NULL;

CREATE TABLE widget_delivery_state (
    widget_token text PRIMARY KEY,
    last_sent_at timestamptz NOT NULL
);

-- A `widget` outbox row is "reload the widgets of this token": it carries the token, bundle, environment and the
-- fixed body; rows of one token coalesce into one reload (sql/060_widgets.sql).
ALTER TABLE delivery_outbox DROP CONSTRAINT delivery_outbox_kind_check;
ALTER TABLE delivery_outbox
    ADD CONSTRAINT delivery_outbox_kind_check CHECK (kind IN ('activity', 'alert', 'start', 'channel', 'widget'));
