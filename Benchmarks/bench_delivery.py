"""B1 (one write at a time), B2 and B2m (one statement over 100,000 activities) and B5 (16 writers): what reaches
h2o after a commit, and what the triggers cost the writer."""
import os
import time

from bench_peer import cpu_per_write, timed_writes
from bench_stack import BENCH_SECRET_HASH, cpu_seconds, register, rss_kb
from bench_tools import pgbench


def bench_b1(stack, rate, seconds):
    """B1: `rate` one-row writes a second; commit → request received, and each write's UPDATE + COMMIT. Then the same
    kind of writes, for half as long, to the same table with LiveRelay's triggers disabled, for what the triggers cost
    the writer."""
    bare_seconds = max(1, seconds // 2)
    # Every write updates a row never updated before, in both phases: a second update of the same row (its hint bits
    # set, its page already pruned) is a different write from a first one.
    sessions = register(stack, "b1-", rate * (seconds + bare_seconds))
    time.sleep(1)
    before = len(stack.log_lines())
    cpu_before = stack.cpu_seconds()
    commits, durations = timed_writes(stack.url, rate, seconds, sessions, "b1-")
    lines = stack.wait_for_log(before + len(commits), 30)[before:]
    cpu_after = stack.cpu_seconds()
    latencies = [(received - commits[token]) * 1000 for received, token in lines if token in commits]
    if os.environ.get("BENCH_B1_DUMP"):
        with open(os.environ["BENCH_B1_DUMP"], "w") as f:
            f.write("\n".join(f"{x:.4f}" for x in latencies))
    if os.environ.get("BENCH_DB_TLS"):
        # What BENCH_DB_TLS=1 measured: the relay's sessions and walsender encrypted, and the log read.
        print("B1 TLS   relay connections encrypted / all, reads the log:", stack.sql("""
            SELECT count(*) FILTER (WHERE s.ssl), count(*), (SELECT bool_and(reads_wal) FROM relay_wakeup)
            FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name LIKE 'liverelay%'
            """)[0], flush=True)
    stack.sql("ALTER TABLE activity_registration DISABLE TRIGGER USER")
    try:
        _, bare = timed_writes(stack.url, rate, bare_seconds, sessions, "b1-",
                               first=rate * seconds + 1)
    finally:
        stack.sql("ALTER TABLE activity_registration ENABLE TRIGGER USER")
    return {"writes": len(commits), "received": len(latencies), "latencies_ms": latencies, "write_ms": durations,
            "write_ms_triggers_disabled": bare,
            "cpu_microseconds_per_write": cpu_per_write(cpu_before, cpu_after, len(commits))}


def seed_b2(stack, count):
    """B2's activities as the independent harness seeds them: before the relay starts, no state yet, then
    `VACUUM; CHECKPOINT`."""
    register(stack, "b2-", count, state="NULL")
    stack.sql("VACUUM")
    stack.sql("CHECKPOINT")


def b2_round(stack, k, count, where="session_id LIKE 'b2-%%'"):
    """One UPDATE as the harness writes it (a new state per round); CPU counted from before the statement (the
    triggers' work is the writer's cost), peak RSS from a high-water mark reset before the round."""
    with open(f"/proc/{stack.relay.pid}/clear_refs", "w") as f:
        f.write("5")
    before = len(stack.log_lines())
    pids = [("relay", stack.relay.pid, False), ("postgres", stack.postmaster_pid(), True), ("h2o", stack.h2o.pid, True)]
    cpu_before = {name: cpu_seconds(pid, children) for name, pid, children in pids}
    started = time.time()
    stack.sql(f"UPDATE activity_registration SET content_state = jsonb_build_object('status', 'working', 'n', {k}) "
              f"WHERE {where}")
    committed = time.time()
    lines = stack.wait_for_log(before + count, 180)[before:]
    cpu = {name: cpu_seconds(pid, children) - cpu_before[name] for name, pid, children in pids}
    times = sorted(received for received, _ in lines)
    last = times[-1] if times else committed
    by_transport = {}
    for name in ("apns", "fcm"):
        mine = [t for t, token in lines if (token == "fcm") == (name == "fcm")]
        if mine:
            by_transport[name] = {"received": len(mine),
                                  "pushes_per_second": len(mine) / max(max(mine) - committed, 1e-9)}
    return {"activities": count, "received": len(times), "statement_seconds": committed - started,
            "by_transport": by_transport,
            "first_push_ms": (times[0] - committed) * 1000 if times else None,
            "seconds_after_commit": last - committed, "pushes_per_second": len(times) / max(last - committed, 1e-9),
            "peak_rss_mb": rss_kb(stack.relay.pid, "VmHWM") / 1024, "timeline": [t - committed for t in times],
            "cpu_seconds_from_statement_to_last_push": cpu,
            "cpu_microseconds_per_push": {k: v * 1e6 / max(len(times), 1) for k, v in cpu.items()}}


def warm_up(stack):
    """The harness's 1,000-row warm-up, before B1."""
    b2_round(stack, 0, 1000, where="session_id IN (SELECT 'b2-' || i FROM generate_series(1, 1000) i)")


def bench_b2(stack, count):
    """Two rounds over the same activities; the second is reported (the first is printed too)."""
    first = b2_round(stack, 1, count)
    second = b2_round(stack, 2, count)
    second["first_round"] = {k: v for k, v in first.items() if k != "timeline"}
    # The same statement on the same table with LiveRelay's triggers disabled: what the triggers cost the writer.
    stack.sql("ALTER TABLE activity_registration DISABLE TRIGGER USER")
    try:
        started = time.time()
        stack.sql("UPDATE activity_registration SET content_state = jsonb_build_object('status', 'working', 'n', 3) "
                  "WHERE session_id LIKE 'b2-%%'")
        second["statement_seconds_triggers_disabled"] = time.time() - started
    finally:
        stack.sql("ALTER TABLE activity_registration ENABLE TRIGGER USER")
    return second


def bench_b2m(stack, count):
    """B2 with half the activities Android (FCM), seeded while the relay runs and then `VACUUM; CHECKPOINT`; two
    rounds (the second reported), then one round over the Android half alone for FCM's CPU per message."""
    register(stack, "b2m-", count, state="NULL", android_share=0.5)
    stack.sql("VACUUM")
    stack.sql("CHECKPOINT")
    where = "session_id LIKE 'b2m-%%'"
    first = b2_round(stack, 1, count, where=where)
    second = b2_round(stack, 2, count, where=where)
    second["first_round"] = {k: v for k, v in first.items() if k != "timeline"}
    android = b2_round(stack, 3, count // 2, where=where + " AND platform = 'android'")
    second["android_only"] = {k: v for k, v in android.items() if k != "timeline"}
    return second


def bench_b5(stack, clients, seconds, rows):
    # By the unique key (secret_hash, session_id), as a backend writes: B2's 100,000 rows are in the same table.
    script = (f"\\set id random(1, {rows})\n"
              "UPDATE activity_registration SET content_state = jsonb_build_object('n', random()) "
              f"WHERE secret_hash = '{BENCH_SECRET_HASH}' AND session_id = 'b1-' || :id;\n")
    with_relay = pgbench(stack, clients, seconds, script)
    stack.sql("ALTER TABLE activity_registration DISABLE TRIGGER USER")
    try:
        bare = pgbench(stack, clients, seconds, script)
    finally:
        stack.sql("ALTER TABLE activity_registration ENABLE TRIGGER USER")
    # The same with the relay stopped: what the triggers alone cost, the rest being the relay's delivery work
    # sharing the machine. What they queued is dropped, so that it does not mix with the next scenario's pushes.
    stack.stop_relay()
    triggers_only = pgbench(stack, clients, seconds, script)
    stack.sql("TRUNCATE delivery_outbox")
    return {"clients": clients, "seconds": seconds, "tps_with_triggers_and_relay": with_relay, "tps_bare": bare,
            "tps_triggers_relay_stopped": triggers_only, "ratio": with_relay / bare,
            "ratio_triggers_only": triggers_only / bare}
