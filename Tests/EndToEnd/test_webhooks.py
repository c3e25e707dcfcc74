"""Lifecycle webhooks as a receiver sees them (README "Activity lifecycle"): the README's verification code,
run on its worked example and on a live delivery from `liverelay dev` to a plain Python HTTP server."""
import http.server
import json
import os
import re
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def readme_example():
    """The README's verify() function and its worked example."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    code = re.search(r"```python\n(.*?)```", text[text.index("*Verifying a request*"):], re.S).group(1)
    namespace = {}
    exec(code, namespace)
    example = dict(re.findall(r"^(secret|timestamp|body|header):\s+(.*)$", text, re.M))
    return namespace["verify"], example


class Receiver(http.server.ThreadingHTTPServer):
    """A plain HTTP server that takes every webhook request (204), after `delay` seconds."""
    def __init__(self, delay=0):
        self.received = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                time.sleep(delay)  # a receiver that takes its time to answer
                outer.received.append((dict(self.headers), body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def wait(self, predicate, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if predicate(self.received):
                return self.received
            time.sleep(0.05)
        raise AssertionError(f"webhooks received: {[json.loads(b)['type'] for _, b in self.received]}")


def test_readme_worked_example_verifies():
    verify, example = readme_example()
    body = example["body"].encode()
    now = int(example["timestamp"])
    assert verify(example["secret"], example["header"], body, now=now)
    assert not verify(example["secret"], example["header"], body + b" ", now=now), "a changed body must fail"
    assert not verify(example["secret"] + "x", example["header"], body, now=now), "another secret must fail"
    assert not verify(example["secret"], example["header"], body, now=now + 3600), "an old request must fail"


def test_live_events_verify_with_readme_code(stack):
    verify, _ = readme_example()
    receiver = Receiver()
    try:
        url = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
        status, created, _ = stack.api("POST", "/v1/webhooks", {"url": url})
        assert status == 201, created
        secret = created["secret"]
        session = f"e2e-hook-{uuid.uuid4().hex[:8]}"
        status, activity, _ = stack.api("POST", "/v1/live-activities", {
            "token": uuid.uuid4().hex * 2, "externalId": session, "contentState": {"step": 1}})
        assert status == 201, activity
        stack.api("PATCH", f"/v1/live-activities/{activity['id']}", {"contentState": {"step": 2}})
        mine = lambda items: [(h, b) for h, b in items if json.loads(b)["data"]["activity"]["id"] == activity["id"]]
        received = mine(receiver.wait(lambda items: len(mine(items)) >= 2))
        types = [json.loads(body)["type"] for _, body in received]
        assert types[:2] == ["live_activity.started", "live_activity.updated"], types
        for headers, body in received:
            assert verify(secret, headers["LiveRelay-Signature"], body)
            assert json.loads(body)["id"] == headers["LiveRelay-Event-Id"]
        listed = stack.api("GET", "/v1/webhooks")[1]
        assert all("secret" not in endpoint for endpoint in listed)
        assert stack.api("DELETE", f"/v1/webhooks/{created['id']}")[0] == 204
    finally:
        receiver.shutdown()
