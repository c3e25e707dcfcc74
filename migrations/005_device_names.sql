-- Devices by name (DESIGN.md): a name people and agents use instead of a uuid. Several rows of one device (several
-- tokens) may share it; a name found on more than one device_uuid is ambiguous, which the tools say.
ALTER TABLE device_registration ADD COLUMN device_name text
    CONSTRAINT "device_name must be 1 to 255 characters" CHECK (length(device_name) BETWEEN 1 AND 255);

-- Names are matched without regard to case ("Kitchen iPad" finds "kitchen ipad").
CREATE INDEX device_registration_name ON device_registration (lower(device_name)) WHERE device_name IS NOT NULL;
