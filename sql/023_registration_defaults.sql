-- A registration written in SQL without a bundle_id gets the relays' APNS_DEFAULT_BUNDLE_ID (each relay publishes it
-- in relay_setting at start-up), as the HTTP routes and broadcast_channel give it. With none published, the write is
-- refused saying so, where it met only "null value in column bundle_id" before. The triggers fire only for rows that
-- leave bundle_id out: a writer that gives it pays nothing.
CREATE OR REPLACE FUNCTION liverelay_registration_bundle() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.bundle_id := (SELECT value FROM relay_setting WHERE name = 'default_bundle_id');
    IF NEW.bundle_id IS NOT NULL THEN
        RETURN NEW;
    END IF;
    IF TG_TABLE_NAME = 'activity_registration' THEN
        RAISE EXCEPTION 'LiveRelay: activity % has no bundle_id, and no relay of this database has '
                        'APNS_DEFAULT_BUNDLE_ID set', NEW.session_id
            USING ERRCODE = 'not_null_violation', HINT = 'Give bundle_id; nothing was changed.';
    END IF;
    RAISE EXCEPTION 'LiveRelay: the device has no bundle_id, and no relay of this database has APNS_DEFAULT_BUNDLE_ID '
                    'set'
        USING ERRCODE = 'not_null_violation', HINT = 'Give bundle_id; nothing was changed.';
END $$;

CREATE OR REPLACE TRIGGER activity_registration_bundle
    BEFORE INSERT ON activity_registration FOR EACH ROW WHEN (NEW.bundle_id IS NULL)
    EXECUTE FUNCTION liverelay_registration_bundle();
CREATE OR REPLACE TRIGGER device_registration_bundle
    BEFORE INSERT ON device_registration FOR EACH ROW WHEN (NEW.bundle_id IS NULL)
    EXECUTE FUNCTION liverelay_registration_bundle();
