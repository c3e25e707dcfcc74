"""`liverelay dev` as a new user runs it (its own state folder and port), for the end-to-end tests: the relay, its
PostgreSQL cluster and the APNs and FCM simulators, with helpers to call the API, write SQL and read what the
simulators accepted."""
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

import psycopg

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def binary():
    path = os.environ.get("LIVERELAY_BINARY")
    if path:
        return path
    bin_dir = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.strip()
    return os.path.join(bin_dir, "liverelay")


class DevStack:
    def __init__(self, state=None, cwd=None):
        """Starts `liverelay dev` on a new state folder, or on `state` (a folder a stopped one left), in `cwd` (by
        default the tests' own)."""
        self.state = state or tempfile.mkdtemp(prefix="liverelay-e2e-")
        os.chmod(self.state, 0o755)
        self.port = free_port()
        self.binary = binary()
        env = dict(os.environ, PORT=str(self.port), LIVERELAY_SQL_DIR=ROOT, LOG_LEVEL="warning")
        for name in ("DATABASE_URL", "LIVERELAY_ADMIN_TOKEN", "APNS_KEY_ID", "FCM_SERVICE_ACCOUNT_FILE"):
            env.pop(name, None)
        self.lines = []
        self.process = subprocess.Popen([self.binary, "dev", "--state-directory", self.state], env=env, cwd=cwd,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        welcome = self.wait_for_line(r"UPDATE activity_registration", timeout=120)
        assert welcome, "liverelay dev did not start:\n" + "\n".join(self.lines[-40:])
        text = "\n".join(self.lines)
        self.token = re.search(r"Bearer (\S+)", text).group(1)
        self.database_url = re.search(r'psql "([^"]+)"', text).group(1)
        self.apns_port = int(re.search(r"APNs sim:\s+https://127\.0\.0\.1:(\d+)", text).group(1))
        self.dashboard_link = re.search(r"Dashboard: (\S+)", text).group(1)
        self.base = f"http://127.0.0.1:{self.port}"
        self.tls = ssl.create_default_context(cafile=os.path.join(self.state, "apns-sim-ca.pem"))

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for_line(self, pattern, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(re.search(pattern, line) for line in list(self.lines)):
                return True
            if self.process.poll() is not None:
                return False
            time.sleep(0.05)
        return False

    def stop(self, keep_state=False):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                return  # its cluster may still run: the state stays for a look
        # `liverelay dev` stopped its cluster as it exited; nothing in the state directory is needed any more.
        if not keep_state:
            shutil.rmtree(self.state, ignore_errors=True)

    # The relay ---------------------------------------------------------------------------------------------------
    def api(self, method, path, body=None, token="admin"):
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + (self.token if token == "admin" else token)
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read() or b"null"), dict(response.headers)
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null"), dict(error.headers)

    def sql(self, query, params=None):
        with psycopg.connect(self.database_url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
            cursor = conn.execute(query, params)
            return cursor.fetchall() if cursor.description else None

    def wait_for_row(self, query, predicate, timeout=30, message="no such row"):
        """Polls `query` until `predicate` holds for its first row; returns that row."""
        deadline = time.time() + timeout
        while not predicate(row := self.sql(query)[0]):
            assert time.time() < deadline, f"{message}: {row}"
            time.sleep(0.1)
        return row

    def transaction(self, statements):
        """Runs (query, params) pairs in one transaction: what they write is committed, and delivered, together."""
        with psycopg.connect(self.database_url.replace("postgres://", "postgresql://")) as conn:
            for query, params in statements:
                conn.execute(query, params)

    # The APNs simulator ------------------------------------------------------------------------------------------
    def pushes(self):
        url = f"https://127.0.0.1:{self.apns_port}/sim/pushes"
        with urllib.request.urlopen(url, context=self.tls, timeout=10) as response:
            return json.loads(response.read())["pushes"]

    def set_faults(self, **faults):
        """`POST /sim/faults`: what is not given is off."""
        request = urllib.request.Request(f"https://127.0.0.1:{self.apns_port}/sim/faults", method="POST",
                                         data=json.dumps(faults).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=self.tls, timeout=10) as response:
            return json.loads(response.read())

    def wait_for_push(self, predicate, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = [push for push in self.pushes() if predicate(push)]
            if found:
                return found[-1]
            time.sleep(0.1)
        raise AssertionError("no such push at the APNs simulator; it has: " + json.dumps(self.pushes())[-2000:])

    def broadcasts(self):
        url = f"https://127.0.0.1:{self.apns_port}/sim/broadcasts"
        with urllib.request.urlopen(url, context=self.tls, timeout=10) as response:
            return json.loads(response.read())["broadcasts"]

    def wait_for_broadcast(self, predicate, timeout=10):
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = [broadcast for broadcast in self.broadcasts() if predicate(broadcast)]
            if found:
                return found[-1]
            time.sleep(0.1)
        raise AssertionError("no such broadcast at the APNs simulator; it has: "
                             + json.dumps(self.broadcasts())[-2000:])

    # The stream --------------------------------------------------------------------------------------------------
    def open_stream(self, channel, token=None):
        """Opens GET /v1/stream for a channel (as the admin, or with a device token); returns a function that waits
        for an event by name and predicate."""
        connection = socket.create_connection(("127.0.0.1", self.port), timeout=15)
        connection.sendall((f"GET /v1/stream?channel={channel} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            f"Authorization: Bearer {token or self.token}\r\n"
                            "Accept: text/event-stream\r\n\r\n").encode())
        reader = connection.makefile("rb")
        assert b" 200 " in reader.readline()

        def next_event(name, predicate=lambda data: True, timeout=10):
            deadline = time.time() + timeout
            event = {}
            while time.time() < deadline:
                line = reader.readline().decode().rstrip("\r\n")
                if line.startswith("event: "):
                    event["event"] = line[7:]
                elif line.startswith("data: "):
                    event["data"] = json.loads(line[6:])
                elif line == "" and event:
                    if event.get("event") == name and predicate(event.get("data")):
                        return event["data"]
                    event = {}
            raise AssertionError(f"no {name} event on {channel}")

        def close():
            # The reader holds the socket open until it is closed too.
            reader.close()
            connection.close()
        next_event.close = close
        return next_event
