"""B10: foreground-aware delivery (issue 23), on bench.py's stack (its PostgreSQL, h2o as APNs, the release relay).

- Budget: `activities` activities, the apps of half of them open (a stream each, authorised by the device's token),
  `rounds` updates of every activity (one UPDATE a round, each round delivered before the next): the priority-10
  pushes APNs received, beside the same rounds with every stream closed (what the relay sent before this feature).
- Cost: B1's paced one-row writes with the streams open (presence rows, heartbeats, the claim's presence probe
  finding some) and closed, alternated, so that the same run says what presence costs a write's latency.
"""
import json
import os
import socket
import time
import urllib.request

from bench_peer import cpu_per_write, timed_writes
from bench_stack import ADMIN_TOKEN, pct, register


def priorities_since(stack, offset):
    """(token, apns-priority) of each APNs request logged after byte `offset`; and the new offset."""
    with open(stack.access_log, "rb") as f:
        f.seek(offset)
        chunk = f.read()
    complete = chunk[:chunk.rfind(b"\n") + 1]
    out = []
    for line in complete.decode().splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[1].startswith("/3/device/"):
            out.append((parts[1][len("/3/device/"):], parts[3]))
    return out, offset + len(complete)


def open_streams(port, devices):
    """An app's stream per device, as the app opens it: a device token minted by the admin, then `GET /v1/stream` of
    its `device:` channel on a connection of its own, kept open (the caller closes the sockets)."""
    streams = []
    for device in devices:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/devices/{device}/token",
                                         data=b"{}", method="POST",
                                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            token = json.loads(reply.read())["token"]
        connection = socket.create_connection(("127.0.0.1", port), timeout=10)
        connection.sendall((f"GET /v1/stream?channel=device:{device} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            f"Authorization: Bearer {token}\r\n\r\n").encode())
        if b" 200 " not in connection.recv(4096).split(b"\r\n", 1)[0]:
            raise RuntimeError("a stream was refused")
        streams.append(connection)
    return streams


def wait_for_presence(stack, streams, timeout=30):
    """Until the relay has written (or removed) the open apps' presence: `streams` rows of stream_presence."""
    deadline = time.time() + timeout
    while stack.sql("SELECT count(*) FROM stream_presence")[0][0] != streams:
        if time.time() > deadline:
            raise RuntimeError(f"B10: presence did not reach {streams} streams")
        time.sleep(0.05)


def rounds_of_updates(stack, prefix, tokens, rounds, first):
    """`rounds` UPDATEs of every activity, each delivered before the next; (priority → requests) received."""
    counts = {}
    offset = os.path.getsize(stack.access_log)
    for k in range(first, first + rounds):
        stack.sql(f"UPDATE activity_registration SET content_state = jsonb_build_object('n', {k}) "
                  f"WHERE session_id LIKE '{prefix}%%'")
        seen, deadline = set(), time.time() + 60
        while len(seen) < len(tokens) and time.time() < deadline:
            lines, offset = priorities_since(stack, offset)
            for token, priority in lines:
                if token in tokens:
                    seen.add(token)
                    counts[priority] = counts.get(priority, 0) + 1
            time.sleep(0.02)
    return counts


def bench_b10(stack, activities=1000, rounds=10, rate=200, seconds=10, pairs=3):
    prefix = "b10-"
    stack.sql(f"""
        INSERT INTO activity_registration (secret_hash, session_id, activity_token, bundle_id, content_state,
                                           device_uuid)
        SELECT encode(sha256('bench'), 'hex'), '{prefix}' || i, md5('{prefix}' || i) || md5(i::text),
               'dev.liverelay.bench', '{{"n": 0}}', md5('{prefix}' || i)::uuid
        FROM generate_series(1, {activities}) AS i""")
    rows = stack.sql(f"SELECT activity_token, device_uuid::text FROM activity_registration "
                     f"WHERE session_id LIKE '{prefix}%%' ORDER BY session_id")
    tokens = {token for token, _ in rows}
    open_devices = [device for _, device in rows[: activities // 2]]
    streams = open_streams(stack.http_port, open_devices)
    with_feature = rounds_of_updates(stack, prefix, tokens, rounds, 1)
    for stream in streams:
        stream.close()
    wait_for_presence(stack, 0)
    without = rounds_of_updates(stack, prefix, tokens, rounds, rounds + 1)

    # B1's writes with the apps open and closed, alternated open-closed-closed-open (neither state always first,
    # right after B10's rounds); each segment writes activities of its own (a state written twice is not sent twice).
    latency = {"open": [], "closed": []}
    segments = []
    for pair in range(pairs):
        for state in (("open", "closed"), ("closed", "open"))[pair % 2]:
            segment = f"b10{state[0]}{pair}-"
            sessions = register(stack, segment, rate * seconds)
            streams = open_streams(stack.http_port, open_devices) if state == "open" else []
            wait_for_presence(stack, len(streams))
            before = len(stack.log_lines())
            cpu_before = stack.cpu_seconds()
            commits, _ = timed_writes(stack.url, rate, seconds, sessions, segment)
            lines = stack.wait_for_log(before + len(commits), 30)[before:]
            cpu = cpu_per_write(cpu_before, stack.cpu_seconds(), len(commits))
            measured = [(received - commits[token]) * 1000 for received, token in lines if token in commits]
            latency[state] += measured
            segments.append((state, pct(measured, 50), pct(measured, 99), cpu))
            for stream in streams:
                stream.close()
    p10_with, p10_without = with_feature.get("10", 0), without.get("10", 0)
    result = {"activities": activities, "open_apps": len(open_devices), "rounds": rounds,
              "with_feature": with_feature, "without_feature": without,
              "priority10_saved": 1 - p10_with / max(p10_without, 1),
              "b1_open": {p: pct(latency["open"], p) for p in (50, 90, 99)},
              "b1_closed": {p: pct(latency["closed"], p) for p in (50, 90, 99)},
              "b1_writes": {k: len(v) for k, v in latency.items()}, "b1_segments": segments}
    result["b1_ratio"] = {p: result["b1_open"][p] / result["b1_closed"][p] for p in (50, 99)}
    return result


def summarize(results, summary, slim):
    """B10's lines: priority-10 pushes with half the apps open against none, and B1 with presence against without."""
    b10 = results["B10"]
    p10_with, p10_without = b10["with_feature"].get("10", 0), b10["without_feature"].get("10", 0)
    summary["B10"] = (f"{b10['activities']} activities, {b10['open_apps']} apps open, {b10['rounds']} updates each: "
                      f"{p10_with:,} priority-10 pushes (+{b10['with_feature'].get('5', 0):,} at 5) against "
                      f"{p10_without:,} with every app closed = {b10['priority10_saved']:.0%} of Apple's budget "
                      f"spent less")
    opened, closed, ratio = b10["b1_open"], b10["b1_closed"], b10["b1_ratio"]
    verdict = "met" if ratio[50] <= 1.05 and ratio[99] <= 1.05 else "missed"
    summary["B10 B1"] = (f"B1's writes with {b10['open_apps']} apps open p50/p99 {opened[50]:.3f}/{opened[99]:.3f} ms, "
                         f"all closed {closed[50]:.3f}/{closed[99]:.3f} ms: {ratio[50]:.2f}×/{ratio[99]:.2f}× "
                         f"(target within 5%: {verdict}; {b10['b1_writes']['open']} and "
                         f"{b10['b1_writes']['closed']} writes; segments p50 "
                         + ", ".join(f"{state} {p50:.3f}" for state, p50, *_ in b10["b1_segments"])
                         + "; CPU per write, relay / PostgreSQL: "
                         + ", ".join(f"{state} {cpu['relay']:.0f} / {cpu['postgres']:.0f} µs"
                                     for state, _, _, cpu in b10["b1_segments"]) + ")")
    slim["B10"] = {k: v for k, v in b10.items()}
