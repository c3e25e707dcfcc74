-- The naive peer's schema (Benchmarks/naive_peer.py): what a competent user writes in an afternoon. The table the
-- writers update has the columns of LiveRelay's activity_registration that the benchmarks write; a per-row trigger
-- queues an outbox row and sends a NOTIFY carrying its id. No coalescing, no per-activity order, no outcome log.
CREATE TABLE activity_registration (
    id             bigserial PRIMARY KEY,
    secret_hash    text NOT NULL,
    session_id     text NOT NULL,
    activity_token text NOT NULL,
    bundle_id      text NOT NULL,
    content_state  jsonb,
    platform       text NOT NULL DEFAULT 'ios',
    updated_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (secret_hash, session_id)
);

CREATE TABLE peer_outbox (
    id          bigserial PRIMARY KEY,
    activity_id bigint NOT NULL
);

CREATE FUNCTION peer_queue() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    queued bigint;
BEGIN
    INSERT INTO peer_outbox (activity_id) VALUES (NEW.id) RETURNING id INTO queued;
    PERFORM pg_notify('peer_push', queued::text);
    RETURN NULL;
END $$;

CREATE TRIGGER peer_queue AFTER UPDATE OF content_state ON activity_registration
    FOR EACH ROW WHEN (NEW.content_state IS DISTINCT FROM OLD.content_state) EXECUTE FUNCTION peer_queue();
