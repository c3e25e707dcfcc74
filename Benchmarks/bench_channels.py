"""B9: broadcast channels (issue 22), on bench.py's stack (its PostgreSQL, h2o as Apple's channel API and
broadcast endpoint, the release relay).

- Latency: `rate` channel updates a second for `seconds`, each to its own channel (created first, one INSERT);
  commit → the broadcast request received at h2o, beside B1's p50 of the same run.
- Throughput: one statement updating `bulk` channels; broadcasts a second after its commit, beside B2's pushes/s.
- Cost: one update to an audience of 1,000,000 is one request to Apple (and one FCM topic message); the same audience
  as per-device activities is 1,000,000 pushes at B2's measured rate.
"""
import time

import psycopg

from bench_peer import paced_writes
from bench_stack import pct

AUDIENCE = 1_000_000


def create_channels(stack, prefix, count, timeout=120):
    """`count` channels in one INSERT; waits until the relay has created them all at 'Apple' (h2o)."""
    stack.sql(f"INSERT INTO broadcast_channel (name, bundle_id) SELECT '{prefix}' || i, 'dev.liverelay.bench' "
              f"FROM generate_series(1, {count}) i")
    deadline = time.time() + timeout
    while time.time() < deadline:
        with psycopg.connect(stack.url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
            rows = conn.execute(f"SELECT name, apns_channel_id FROM broadcast_channel WHERE name LIKE '{prefix}%%' "
                                "AND apns_channel_id IS NOT NULL").fetchall()
        if len(rows) >= count:
            return {name: "channel:" + channel for name, channel in rows}
        time.sleep(0.25)
    raise SystemExit(f"B9: only {len(rows)} of {count} channels were created at the endpoint")


def wait_for_keys(stack, before, keys, timeout):
    """The log's lines after the first `before`, once each of `keys` is among them (or at the timeout). Not a count of
    lines: with FCM configured each channel update is two requests (its broadcast and its topic message), so a count
    is reached while the last broadcasts are still on their way."""
    deadline = time.time() + timeout
    while True:
        lines = stack.log_lines()[before:]
        if keys <= {key for _, key in lines} or time.time() >= deadline:
            return lines
        time.sleep(0.05)


def timed_channel_writes(url, rate, seconds, names, prefix):
    """`rate` one-row UPDATEs of broadcast_channel a second (as B1's); commit times by the channel's Apple id."""
    return paced_writes(url, rate, seconds,
                        "UPDATE broadcast_channel SET content_state = jsonb_build_object('n', %s) WHERE name = %s",
                        lambda i: (i, f"{prefix}{i}"), lambda i: names[f"{prefix}{i}"])


def bench_b9(stack, rate, seconds, bulk):
    names = create_channels(stack, "b9-", rate * seconds)
    time.sleep(1)
    before = len(stack.log_lines())
    commits, durations = timed_channel_writes(stack.url, rate, seconds, names, "b9-")
    lines = wait_for_keys(stack, before, set(commits), 60)
    latencies = [(received - commits[key]) * 1000 for received, key in lines if key in commits]

    bulk_names = create_channels(stack, "b9bulk-", bulk)
    time.sleep(1)
    before = len(stack.log_lines())
    started = time.time()
    stack.sql("UPDATE broadcast_channel SET content_state = jsonb_build_object('n', 1) WHERE name LIKE 'b9bulk-%%'")
    committed = time.time()
    keys = set(bulk_names.values())
    received = [t for t, key in wait_for_keys(stack, before, keys, 120) if key in keys]
    last = max(received) if received else committed
    return {"writes": len(commits), "received": len(latencies), "latencies_ms": latencies, "write_ms": durations,
            "bulk": {"channels": bulk, "received": len(received), "statement_seconds": committed - started,
                     "first_broadcast_ms": (min(received) - committed) * 1000 if received else None,
                     "seconds_after_commit": last - committed,
                     "broadcasts_per_second": len(received) / max(last - committed, 1e-9)}}


def summarize(results, summary, slim):
    """B9's lines: latency beside B1's p50, the bulk rate beside B2's, and the audience arithmetic."""
    b9 = results["B9"]
    lat = b9["latencies_ms"]
    p50 = pct(lat, 50)
    line = (f"{b9['received']}/{b9['writes']} received; commit → broadcast request p50 {p50:.3f} ms, "
            f"p90 {pct(lat, 90):.3f}, p99 {pct(lat, 99):.3f}; write p50 "
            f"{pct(b9['write_ms'], 50):.3f} ms")
    if "B1" in results:
        b1 = pct(results["B1"]["latencies_ms"], 50)
        verdict = "met" if p50 <= b1 + 0.2 else "missed"
        line += f"; B1 p50 {b1:.3f} ms, target ≤ {b1 + 0.2:.3f} ({verdict})"
    summary["B9"] = line
    bulk = b9["bulk"]
    line = (f"one UPDATE of {bulk['channels']} channels ({bulk['statement_seconds'] * 1000:.0f} ms): "
            f"{bulk['received']} broadcasts in {bulk['seconds_after_commit']:.3f} s after commit = "
            f"{bulk['broadcasts_per_second']:,.0f}/s, the first {bulk['first_broadcast_ms']:.1f} ms after commit")
    per_device = results.get("B2", {}).get("pushes_per_second")
    if per_device:
        verdict = "met" if bulk["broadcasts_per_second"] >= per_device else "missed"
        line += f"; B2 {per_device:,.0f} pushes/s ({verdict})"
    summary["B9 bulk"] = line
    if per_device:
        summary["B9 audience"] = (
            f"one update to {AUDIENCE:,} subscribers: 1 broadcast request (+1 FCM topic message) on a channel, "
            f"against {AUDIENCE:,} pushes = {AUDIENCE / per_device:,.0f} s at B2's {per_device:,.0f} pushes/s "
            f"as per-device activities")
    slim["B9"] = {"latencies_ms": {p: pct(lat, p) for p in (50, 90, 99, 99.9)},
                  "write_ms": {p: pct(b9["write_ms"], p) for p in (50, 90, 99)}, "bulk": bulk}
