-- More than one push service (DESIGN.md "Android: FCM HTTP v1 data messages").

-- The platform of the token an alert or push-to-start row carries (activity rows follow their activity's platform).
ALTER TABLE delivery_outbox ADD COLUMN platform text NOT NULL DEFAULT 'ios'
    CONSTRAINT "platform must be ios or android" CHECK (platform IN ('ios', 'android'));

-- Which push service answered, and what it said, for every transport (apns_status and apns_reason stay, for APNs
-- rows only, for the readers that use them).
ALTER TABLE delivery_log
    ADD COLUMN transport       text CONSTRAINT "transport must be apns or fcm" CHECK (transport IN ('apns', 'fcm')),
    ADD COLUMN provider_status integer,
    ADD COLUMN provider_reason text;
