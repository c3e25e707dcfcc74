"""Where B1's time goes, read from the wire: a packet capture on the loopback interface taken while B1 runs
(BENCH_PATH=1, also for B9; needs tcpdump; the script installs it from Debian when it is missing and it may).

For every claim that followed a wake-up (a writer's NOTIFY, or the write-ahead log's bytes on the relay's replication
connection), the capture gives four instants: the wake-up, the relay's claim (on another connection), PostgreSQL's
answer to that claim, and the next request the relay writes to the push endpoint. Printed as percentiles of the three
segments between them, so a change can be judged by the segment it was meant to shorten. The commit itself costs ~0:
PostgreSQL sends the notification (or the walsender the log's bytes) when the writer's commit is flushed, before the
writer reads its answer.
"""
import os
import shutil
import struct
import subprocess
import sys


def start_capture(path, ports):
    """tcpdump on `lo` for the given TCP ports (packets with a payload), or None when it cannot run."""
    if not shutil.which("tcpdump"):
        if os.geteuid() != 0 or subprocess.run(["apt-get", "install", "-y", "-q", "tcpdump"],
                                               capture_output=True).returncode != 0:
            print("path     tcpdump is not installed (apt-get install tcpdump); no breakdown", file=sys.stderr)
            return None
    condition = " or ".join(f"tcp port {port}" for port in ports)
    return subprocess.Popen(["tcpdump", "-i", "lo", "-s", "200", "-U", "-w", path, f"({condition}) and greater 60"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_capture(process):
    if process:
        process.terminate()
        process.wait()


def packets(path):
    """(time, source port, destination port, payload) of every packet with a payload, from a pcap file."""
    out = []
    with open(path, "rb") as f:
        f.read(24)
        while True:
            header = f.read(16)
            if len(header) < 16:
                return out
            seconds, micros, length, _ = struct.unpack("<IIII", header)
            frame = f.read(length)
            ip = frame[14:]
            tcp = ip[(ip[0] & 15) * 4:]
            source, destination = struct.unpack(">HH", tcp[:4])
            payload = tcp[(tcp[12] >> 4) * 4:]
            if payload:
                out.append((seconds + micros / 1e6, source, destination, payload))


def is_wakeup(payload):
    """A packet that wakes the relay: a writer's NOTIFY on `liverelay_wake` (NotificationResponse), or the write-ahead
    log's bytes (CopyData carrying XLogData) on its replication connection."""
    notification = payload[:1] == b"A" and b"liverelay_wake" in payload[:64]
    return notification or (payload[:1] == b"d" and payload[5:6] == b"w")


def segments(path, pg_port, push_port, window=400, gap_ms=5.0):
    """Milliseconds per claim that followed a wake-up: wake-up → claim sent, claim → answer, answer → push
    written.

    Every claim the relay sends (a message naming `liverelay_claim`) is matched with the last wake-up PostgreSQL sent
    it within `gap_ms` before: a log's CopyData comes for every flush (the relay's own records too), so a wake-up is
    whatever came last before a claim, not every packet that could be one."""
    names = ("wake-up → claim sent", "claim → answer", "answer → push written", "wake-up → push")
    found = {name: [] for name in names}
    captured = packets(path)
    last_wakeup = None
    for i, (at, source, destination, payload) in enumerate(captured):
        if source == pg_port and is_wakeup(payload):
            last_wakeup = (at, destination)
            continue
        if destination != pg_port or b"liverelay_claim" not in payload or last_wakeup is None:
            continue
        woken, listener = last_wakeup
        last_wakeup = None
        if source == listener or (at - woken) * 1000 > gap_ms:
            continue
        later = captured[i + 1:i + window]
        answer = next((p for p in later if p[1] == pg_port and p[2] == source), None)
        push = next((p for p in later if p[2] == push_port), None)
        if answer is None or push is None or push[0] < answer[0]:
            continue
        found["wake-up → claim sent"].append((at - woken) * 1000)
        found["claim → answer"].append((answer[0] - at) * 1000)
        found["answer → push written"].append((push[0] - answer[0]) * 1000)
        found["wake-up → push"].append((push[0] - woken) * 1000)
    return found


def on_the_wire(stack, name, run):
    """`run()`'s result; with BENCH_PATH=1, taken under a capture whose split of every wake-up it carries as "path"."""
    if not os.environ.get("BENCH_PATH"):
        return run()
    capture = os.path.join(stack.work, f"{name.lower()}.pcap")
    wire = start_capture(capture, [stack.pg_port, stack.h2o_port])
    try:
        result = run()
    finally:
        stop_capture(wire)
    if wire:
        result["path"] = segments(capture, stack.pg_port, stack.h2o_port)
    return result


def summary(found):
    lines = []
    for name, values in found.items():
        if not values:
            continue
        values = sorted(values)
        pick = lambda q: values[min(len(values) - 1, int(len(values) * q))]
        lines.append(f"{name}: p50 {pick(0.5):.3f} / p90 {pick(0.9):.3f} / p99 {pick(0.99):.3f}")
    return f"{len(found['wake-up → push'])} wake-ups (ms); " + "; ".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit("usage: b1_path.py CAPTURE.pcap POSTGRES_PORT PUSH_PORT")
    print(summary(segments(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
