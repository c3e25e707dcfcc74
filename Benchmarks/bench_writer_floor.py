"""B1f: what any trigger-and-wake-up design costs B1's writer on this machine, beside what LiveRelay's triggers cost.

Issue 20 asks the writer's one-row `UPDATE` + `COMMIT` to stay within 1.3× of the same table's with LiveRelay's
triggers disabled. This scenario measures the floor under that ratio on a copy of `activity_registration` (its
columns, defaults, checks and indexes; none of its triggers), written:
- bare;
- with the smallest trigger that records a delivery (row-level, one outbox row, as the naive peer's);
- with that trigger also sending a `NOTIFY` that a listening connection reads (the wake-up every relay of this kind
  needs, the peer's and LiveRelay's);
- with that `NOTIFY` sent to LiveRelay instead (the relay wakes, claims, finds nothing and goes idle: what waking
  this relay costs the writer by itself).
LiveRelay's own table, its triggers on (the relay serving) and off, is written in the same alternation, so every
figure comes from the same minutes of a machine whose speed drifts.
"""
import threading
import time
from collections import Counter

import psycopg

from bench_peer import paced_writes
from bench_stack import BENCH_SECRET_HASH, pct, register

FLOOR_SQL = """
DROP TABLE IF EXISTS bench_floor, bench_floor_outbox;
CREATE TABLE bench_floor (LIKE activity_registration INCLUDING ALL);
CREATE TABLE bench_floor_outbox (id bigserial PRIMARY KEY, activity_id uuid NOT NULL);
CREATE OR REPLACE FUNCTION bench_floor_queue() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    queued bigint;
BEGIN
    INSERT INTO bench_floor_outbox (activity_id) VALUES (NEW.id) RETURNING id INTO queued;
    IF TG_ARGV[0] = 'notify' THEN
        PERFORM pg_notify('bench_floor', queued::text);
    ELSIF TG_ARGV[0] = 'relay' THEN
        -- LiveRelay's wake-up channel, naming no row: the relay wakes, claims, finds nothing, goes idle again.
        PERFORM pg_notify('liverelay_wake', '');
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER bench_floor_insert AFTER UPDATE ON bench_floor
    FOR EACH ROW EXECUTE FUNCTION bench_floor_queue('insert');
CREATE TRIGGER bench_floor_notify AFTER UPDATE ON bench_floor
    FOR EACH ROW EXECUTE FUNCTION bench_floor_queue('notify');
CREATE TRIGGER bench_floor_relay AFTER UPDATE ON bench_floor
    FOR EACH ROW EXECUTE FUNCTION bench_floor_queue('relay');
"""


def only(trigger):
    """The copy table with just `trigger` enabled."""
    return f"ALTER TABLE bench_floor DISABLE TRIGGER USER; ALTER TABLE bench_floor ENABLE TRIGGER {trigger}"


# Each variant: the table written, and the SQL that sets its triggers before the segment.
VARIANTS = {
    "liverelay": ("activity_registration", "ALTER TABLE activity_registration ENABLE TRIGGER USER"),
    "disabled": ("activity_registration", "ALTER TABLE activity_registration DISABLE TRIGGER USER"),
    "copy": ("bench_floor", "ALTER TABLE bench_floor DISABLE TRIGGER USER"),
    "copy + outbox row": ("bench_floor", only("bench_floor_insert")),
    "copy + outbox row + NOTIFY": ("bench_floor", only("bench_floor_notify")),
    "copy + outbox row + NOTIFY the relay": ("bench_floor", only("bench_floor_relay")),
}


class Listener:
    """A connection that LISTENs on `bench_floor` and reads every notification as it comes (a relay's wake-up)."""

    def __init__(self, url):
        self.conn = psycopg.connect(url, autocommit=True)
        self.conn.execute("LISTEN bench_floor")
        self.received = 0
        self.stopping = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping:
            for _ in self.conn.notifies(timeout=0.5):
                self.received += 1

    def close(self):
        self.stopping = True
        self.thread.join(timeout=5)
        self.conn.close()


def bench_writer_floor(stack, rate=200, seconds=2, rounds=3):
    """`rounds` rounds of every variant, `seconds` of paced one-row writes each, every write a fresh row."""
    url = stack.url.replace("postgres://", "postgresql://")
    per_segment = rate * seconds
    stack.sql(FLOOR_SQL)
    # A fresh row for every write: registered as B1's are, and the same rows copied into the copy table (as many as
    # the table written by the most variants takes).
    register(stack, "fl-", per_segment * rounds * max(Counter(table for table, _ in VARIANTS.values()).values()))
    stack.sql("INSERT INTO bench_floor SELECT * FROM activity_registration WHERE session_id LIKE 'fl-%'")
    stack.sql("VACUUM ANALYZE bench_floor, bench_floor_outbox, activity_registration")
    listener = Listener(url)
    durations = {name: [] for name in VARIANTS}
    used = {"activity_registration": 0, "bench_floor": 0}
    try:
        for _ in range(rounds):
            for name, (table, setup) in VARIANTS.items():
                stack.sql(setup)
                first = used[table]
                used[table] += per_segment
                time.sleep(0.2)
                _, ms = paced_writes(url, rate, seconds,
                                     f"UPDATE {table} SET content_state = jsonb_build_object('n', %s) "
                                     "WHERE secret_hash = %s AND session_id = %s",
                                     lambda i: (i, BENCH_SECRET_HASH, f"fl-{first + i}"), lambda i: i)
                durations[name] += ms
    finally:
        stack.sql("ALTER TABLE activity_registration ENABLE TRIGGER USER")
        listener.close()
    notified = per_segment * rounds  # the one variant that notifies `bench_floor`
    return {"rate": rate, "seconds_per_segment": seconds, "rounds": rounds,
            "notifications_read": listener.received, "notifications_sent": notified,
            "write_ms": {name: {p: pct(ms, p) for p in (50, 90, 99)} for name, ms in durations.items()}}


def summarize(result):
    """One line: each variant's p50 and its ratio to LiveRelay's table with the triggers disabled."""
    w = result["write_ms"]
    base = w["disabled"][50]
    parts = [f"{name} {w[name][50]:.3f} ms ({w[name][50] / base:.2f}×)" for name in VARIANTS]
    return ("writer UPDATE + COMMIT p50, alternated in one run (× LiveRelay's table with its triggers disabled): "
            + ", ".join(parts) + f"; the listener read {result['notifications_read']}/"
            f"{result['notifications_sent']} notifications")
