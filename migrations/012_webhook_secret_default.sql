-- An endpoint inserted in SQL without a secret gets one, as `POST /v1/webhooks` makes one: `INSERT INTO
-- webhook_endpoint (url) VALUES (…) RETURNING secret` is the only time it is shown. `whsec_` and 64 hex digits
-- from two random UUIDs (gen_random_uuid draws from the operating system's strong random source: 244 random bits;
-- no extension needed).
ALTER TABLE webhook_endpoint
    ALTER COLUMN secret SET DEFAULT 'whsec_' || replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '');
