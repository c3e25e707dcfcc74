"""The webhook-receiver-down scenario of the fault suite (issue 12): lifecycle events while the receiver refuses
connections for a while and the relay is SIGKILLed once; every event must arrive, signed, first copies in order per
activity."""
import hashlib
import hmac
import http.server
import json
import threading
import time

from bench_stack import free_port
from fault_checks import collect, nothing_lost
from fault_suite import Relay, Writer

SECRET = "whsec_faults_0123456789abcdef"


class Receiver:
    """A plain HTTP receiver that can go down (connection refused) and come back on the same port. Checks each
    request's signature; records (event id, activity id, arrival) of the valid ones."""

    def __init__(self, port):
        self.port = port
        self.arrivals, self.bad_signatures = [], 0
        self.lock = threading.Lock()
        self.server = None
        self.up()

    def handler(self):
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                parts = dict(item.split("=", 1) for item in self.headers["LiveRelay-Signature"].split(","))
                expected = hmac.new(SECRET.encode(), parts["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
                event = json.loads(body)
                with outer.lock:
                    if hmac.compare_digest(expected, parts["v1"]) and event["id"] == self.headers["LiveRelay-Event-Id"]:
                        outer.arrivals.append((event["id"], event["data"]["activity"]["id"], time.time()))
                    else:
                        outer.bad_signatures += 1
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        return Handler

    def up(self):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), self.handler())
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def down(self):
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/hook"


def scenario_webhook_down(suite, quick):
    rate, seconds = (100, 8) if quick else (200, 30)
    tokens = suite.create_database("webhooks", 300)
    receiver = Receiver(free_port())
    suite.query("webhooks", "INSERT INTO webhook_endpoint (url, secret) VALUES (%s, %s)", (receiver.url, SECRET))
    first_seq = suite.query("webhooks", "SELECT coalesce(max(seq), 0) FROM broadcast_log")[0][0]
    allow = {"LIVERELAY_WEBHOOK_ALLOW_PRIVATE": "true"}
    relay = Relay(suite, "webhooks", extra_env=allow)
    writer = Writer(suite, "webhooks", list(tokens), rate, seconds)
    writer.start()
    time.sleep(seconds / 4)
    receiver.down()
    time.sleep(seconds / 4)
    relay.kill()
    relay = Relay(suite, "webhooks", name="relay-2", extra_env=allow)
    time.sleep(seconds / 4)
    receiver.up()
    writer.join()
    drained, pushes, result = collect(suite, "webhooks", 120)
    deadline = time.time() + 180
    while time.time() < deadline:
        if suite.query("webhooks", "SELECT count(*) FROM webhook_outbox")[0][0] == 0:
            break
        time.sleep(0.2)
    waiting = suite.query("webhooks", "SELECT count(*) FROM webhook_outbox")[0][0]
    relay.terminate()
    receiver.down()
    emitted = suite.query("webhooks", "SELECT seq, data->>'id', data->'data'->'activity'->>'id' FROM broadcast_log "
                          "WHERE seq > %s AND event LIKE 'live_activity.%%' ORDER BY seq", (first_seq,))
    first = {}
    for event_id, activity, arrived in receiver.arrivals:
        first.setdefault(event_id, arrived)
    lost = [event_id for _, event_id, _ in emitted if event_id not in first]
    order_violations = 0
    by_activity = {}
    for _, event_id, activity in emitted:
        if event_id in first:
            by_activity.setdefault(activity, []).append(first[event_id])
    for arrivals in by_activity.values():
        if arrivals != sorted(arrivals):
            order_violations += 1
    duplicates = len(receiver.arrivals) - len(first)
    failed = suite.query("webhooks", "SELECT count(*) FROM delivery_log WHERE transport = 'webhook' "
                         "AND status = 'failed'")[0][0]
    result.update(events=len(emitted), events_lost=len(lost), event_order_violations=order_violations,
                  duplicate_events=duplicates, bad_signatures=receiver.bad_signatures, webhook_failed=failed,
                  still_waiting=waiting, writes=len(writer.committed))
    result["pass"] = (nothing_lost(result, drained) and emitted and not lost and order_violations == 0
                      and receiver.bad_signatures == 0 and waiting == 0 and failed == 0)
    result["summary"] = (f"receiver down for {seconds / 2:.0f} s and one SIGKILL during {len(writer.committed)} "
                         f"updates at {rate}/s: {len(emitted)} events, {len(lost)} lost, {duplicates} repeated, "
                         f"{order_violations} order violations, {receiver.bad_signatures} bad signatures; "
                         f"{result['final_states_lost']} final push states lost")
    return result
