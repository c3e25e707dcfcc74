-- Deleting a webhook endpoint must answer at once, even while a webhook worker is sending its events. With the
-- foreign key's ON DELETE CASCADE the DELETE waited for the outbox rows the worker held (up to a receiver's 10 s
-- answer limit) and hit lock_timeout. Without it the endpoint row goes at once; its waiting events are removed by the
-- same request where no worker holds them, and otherwise by the worker when it records their outcome or by the
-- relay's sweeper (liverelay_drop_orphan_webhooks). Nothing claims an event whose endpoint is gone.
ALTER TABLE webhook_outbox DROP CONSTRAINT IF EXISTS webhook_outbox_endpoint_id_fkey;
