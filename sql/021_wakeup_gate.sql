-- The relay's side of the wake-up gate (sql/020_triggers.sql has the writers' side, liverelay_wake).

-- Writes relay `relay`'s relay_wakeup row (WakeupListener.writeGate decides what, and when an idle write is skipped:
-- `knows_row` and `believed_idle`). `written` says whether the row was written. When it was written idle, the row is
-- committed at once and `open_transactions` and `any_due` are read just after, in one snapshot: the transactions
-- still in progress (a writer that read "busy" before the row said idle is among them, and the relay looks again when
-- they end) and whether a delivery is due now.
-- A procedure so that the write and the look after its commit take one call (one round trip, one wake-up of the
-- listener's backend) where they took two statements; it may commit because it is called on its own, outside any
-- transaction block (the listener's connection runs no BEGIN). After the COMMIT, now() is the new transaction's start.
CREATE OR REPLACE PROCEDURE liverelay_publish_gate(
    relay uuid, says_idle boolean, knows_row boolean, believed_idle boolean,
    INOUT written boolean DEFAULT NULL, INOUT open_transactions text[] DEFAULT NULL, INOUT any_due boolean DEFAULT NULL)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO relay_wakeup (instance_id, idle, updated_at) VALUES (relay, says_idle, now())
    ON CONFLICT (instance_id) DO UPDATE SET idle = excluded.idle, updated_at = excluded.updated_at
    WHERE NOT excluded.idle OR NOT knows_row OR relay_wakeup.idle = believed_idle;
    written := FOUND;
    open_transactions := '{}';
    any_due := false;
    IF written AND says_idle THEN
        COMMIT;
        open_transactions := ARRAY(SELECT x::text FROM pg_snapshot_xip(pg_current_snapshot()) AS x);
        any_due := EXISTS (SELECT 1 FROM delivery_outbox WHERE next_attempt_at <= now());
    END IF;
END $$;
