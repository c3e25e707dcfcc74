"""B8 (issue 12): lifecycle events to a local webhook receiver. A second h2o (plain HTTP, one thread) answers 204
and logs the microsecond and the LiveRelay-Event-Id of every request; the relay's endpoint is registered by SQL,
as an operator may. Used by bench.py, which also runs B1 and B5 with this endpoint registered (webhooks enabled)."""
import os
import time

from bench_stack import cpu_seconds, start_h2o
from bench_tools import Housekeeping

WEBHOOK_SECRET = "whsec_bench_0123456789abcdef"


class HookReceiver:
    def __init__(self, work, port):
        self.port, self.log = port, os.path.join(work, "hooks.log")
        self._seen, self._offset = [], 0
        conf = os.path.join(work, "hooks.conf")
        with open(conf, "w") as f:
            f.write(f"""listen:
  host: 127.0.0.1
  port: {port}
num-threads: 1
error-log: {work}/hooks-error.log
hosts:
  default:
    paths:
      /:
        mruby.handler: |
          Proc.new do |env|
            [204, {{}}, []]
          end
        access-log:
          path: {self.log}
          format: "%{{usec}}t %{{LiveRelay-Event-Id}}i"
""")
        self.process = start_h2o(conf, port, "the webhook receiver (h2o)")

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/hook"

    def received(self):
        """(receive time in seconds, event id) of every request so far; reads only what was logged since the last
        call (re-reading the whole log ten times a second took the CPU the run measures)."""
        if os.path.exists(self.log):
            with open(self.log, "rb") as f:
                f.seek(self._offset)
                chunk = f.read()
            complete = chunk[:chunk.rfind(b"\n") + 1]
            self._offset += len(complete)
            for line in complete.decode().splitlines():
                parts = line.split()
                if len(parts) == 2:
                    self._seen.append((int(parts[0]) / 1e6, parts[1]))
        return self._seen

    def stop(self):
        self.process.terminate()


def register_endpoint(stack, url):
    stack.sql("INSERT INTO webhook_endpoint (url, secret) VALUES (%s, %s)", (url, WEBHOOK_SECRET))


def bench_b8(stack, receiver, count):
    """`count` activities registered in one statement: `count` live_activity.started events (plus whatever else the
    run emits), from the commit to the last request at the receiver; lost = events in broadcast_log's record of them
    that never arrived."""
    # The scenarios before it (B2's 200,000 `updated` events) may still be draining: B8 counts from an empty queue.
    deadline = time.time() + 600
    while stack.sql("SELECT count(*) FROM webhook_outbox")[0][0] > 0 and time.time() < deadline:
        time.sleep(0.5)
    before = len(receiver.received())
    stack.sql("SELECT setval(pg_get_serial_sequence('broadcast_log', 'seq'), nextval(pg_get_serial_sequence("
              "'broadcast_log', 'seq')))")
    first_seq = stack.sql("SELECT coalesce(max(seq), 0) FROM broadcast_log")[0][0]
    pids = [("relay", stack.relay.pid, False), ("postgres", stack.postmaster_pid(), True),
            ("receiver", receiver.process.pid, True)]
    cpu_before = {name: cpu_seconds(pid, children) for name, pid, children in pids}
    upkeep = Housekeeping(stack)
    stack.sql("""
        INSERT INTO activity_registration (secret_hash, session_id, activity_token, bundle_id, content_state)
        SELECT encode(sha256('bench'), 'hex'), 'b8-' || i, md5('b8' || i) || md5(i::text), 'dev.liverelay.bench',
               '{"n": 0}'
        FROM generate_series(1, %s) AS i""", (count,))
    committed = time.time()
    expected = {str(row[0]) for row in stack.sql(
        "SELECT data->>'id' FROM broadcast_log WHERE seq > %s AND event = 'live_activity.started' "
        "AND data->'data'->'activity'->>'session_id' LIKE 'b8-%%'", (first_seq,))}
    deadline = time.time() + 120
    arrived, checked = {}, before
    while time.time() < deadline:
        received = receiver.received()
        for received_at, event_id in received[checked:]:
            arrived.setdefault(event_id, received_at)
        checked = len(received)
        if expected <= arrived.keys():
            break
        time.sleep(0.1)
    cpu = {name: cpu_seconds(pid, children) - cpu_before[name] for name, pid, children in pids}
    housekeeping = upkeep.stop()
    got = [arrived[e] for e in expected if e in arrived]
    seconds = (max(got) - committed) if got else float("nan")
    requests = len(receiver.received()) - before
    return {"events": len(expected), "received": len(got), "lost": len(expected) - len(got),
            "seconds_after_commit": seconds, "events_per_second": len(got) / seconds if got else 0.0,
            "requests": requests, "cpu_seconds": cpu, "housekeeping": housekeeping,
            "first_event_ms": (min(got) - committed) * 1000 if got else float("nan")}
