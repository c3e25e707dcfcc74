"""The fault suite's stack: PostgreSQL (from the benchmarks' stack), the APNs and FCM simulators with fault
injection, relay processes and paced writers (what every scenario checks of what arrived: fault_checks.py)."""
import json
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.request

import psycopg

from bench_stack import ADMIN_TOKEN, ROOT, Stack, free_port

BATCH_SIZE = 500  # LIVERELAY_BATCH_SIZE's default: the most one kill can make the relay send twice


class Relay:
    """One `liverelay serve` process."""

    def __init__(self, suite, database, name="relay", extra_env=None):
        self.suite, self.name = suite, name
        self.port = free_port()
        env = suite.relay_env(database)
        env["PORT"] = str(self.port)
        env.update(extra_env or {})
        self.log = os.path.join(suite.work, f"{database}-{name}.log")
        self.process = subprocess.Popen([suite.binary, "serve"], env=env, stdout=subprocess.DEVNULL,
                                        stderr=open(self.log, "ab"))
        self.wait_ready()

    def wait_ready(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}; see {self.log}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/ready", timeout=1) as reply:
                    if reply.status == 200:
                        return
            except Exception:
                time.sleep(0.02)
        raise RuntimeError(f"{self.name} did not become ready; see {self.log}")

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def terminate(self, timeout=30):
        """SIGTERM; returns the seconds until the process exited, and its exit code."""
        started = time.time()
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.dump_threads()
            self.process.kill()
            code = self.process.wait()
        return time.time() - started, code

    def dump_threads(self):
        """Appends every thread's stack to the relay's log (a hang should say where it hangs)."""
        if shutil.which("gdb"):
            with open(self.log, "ab") as log:
                log.write(b"\n--- faults.py: still running after SIGTERM; thread stacks ---\n")
                log.flush()
                subprocess.run(["gdb", "-p", str(self.process.pid), "-batch", "-ex", "thread apply all bt"],
                               stdout=log, stderr=subprocess.STDOUT, timeout=120)

    def sent_total(self):
        """Pushes this relay recorded as sent, from its /metrics."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/metrics",
                                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        with urllib.request.urlopen(request, timeout=5) as reply:
            text = reply.read().decode()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("liverelay_deliveries_total{") and 'status="sent"' in line)


class Suite(Stack):
    """PostgreSQL (from bench_stack.Stack), the simulator, and helpers to write load and read what arrived."""

    def __init__(self, work, binary):
        super().__init__(work, binary)
        self.sim_port = free_port()
        self.sim = None
        self.sim_seen = 0
        self.apns_ids = {}  # (token, n) → apns-id of every copy the simulator accepted
        self.fcm_port = free_port()
        self.fcm = None
        self.fcm_seen = 0

    # The simulator ----------------------------------------------------------------------------------------------
    def start_simulator(self):
        self.ca, self.key = os.path.join(self.work, "sim-ca.pem"), os.path.join(self.work, "apns.p8")
        self.sim = subprocess.Popen([self.binary, "apns-sim", "--port", str(self.sim_port), "--ca-out", self.ca,
                                     "--key-file", self.key, "--quiet"],
                                    stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.work, "sim.log"), "ab"))
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.sim_port), timeout=0.2).close()
                if os.path.exists(self.ca):
                    self.tls = ssl.create_default_context(cafile=self.ca)
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise SystemExit("the simulator did not start")

    def start_fcm_simulator(self):
        self.fcm_ca = os.path.join(self.work, "fcm-ca.pem")
        self.fcm_account = os.path.join(self.work, "fcm-account.json")
        self.fcm = subprocess.Popen([self.binary, "fcm-sim", "--port", str(self.fcm_port), "--ca-out", self.fcm_ca,
                                     "--service-account-out", self.fcm_account,
                                     "--key-file", os.path.join(self.work, "fcm-key.pem"), "--quiet"],
                                    stdout=subprocess.DEVNULL,
                                    stderr=open(os.path.join(self.work, "fcm-sim.log"), "ab"))
        deadline = time.time() + 30
        while time.time() < deadline:
            if os.path.exists(self.fcm_account) and os.path.exists(self.fcm_ca):
                self.fcm_tls = ssl.create_default_context(cafile=self.fcm_ca)
                return
            time.sleep(0.05)
        raise SystemExit("the FCM simulator did not start")

    def sim_call(self, method, path, body=None, fcm=False):
        data = json.dumps(body).encode() if body is not None else None
        port, tls = (self.fcm_port, self.fcm_tls) if fcm else (self.sim_port, self.tls)
        request = urllib.request.Request(f"https://127.0.0.1:{port}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=tls, timeout=60) as reply:
            text = reply.read()
        return json.loads(text) if text else None

    def set_faults(self, **faults):
        self.sim_call("POST", "/sim/faults", faults)

    def set_fcm_faults(self, **faults):
        self.sim_call("POST", "/sim/faults", faults, fcm=True)

    def new_pushes(self):
        """Pushes and FCM messages accepted since the last call: (sequence, token, n, received_at), a topic message's
        token `/topics/<topic>`. Sequences count per simulator; a token belongs to one of them, so its order is its
        simulator's."""
        pushes = self.sim_call("GET", f"/sim/pushes?since={self.sim_seen}")["pushes"]
        out = []
        for push in pushes:
            self.sim_seen = max(self.sim_seen, push["sequence"])
            state = push["payload"].get("aps", {}).get("content-state", {})
            out.append((push["sequence"], push["token"], state.get("n"), push["receivedAt"]))
            self.apns_ids.setdefault((push["token"], state.get("n")), []).append(push["apnsID"])
        for message in self.sim_call("GET", f"/sim/messages?since={self.fcm_seen}", fcm=True)["messages"]:
            self.fcm_seen = max(self.fcm_seen, message["sequence"])
            state = json.loads(message["data"].get("liveRelayContentState", "{}"))
            # A topic message (a broadcast channel's) has no token: it is known by its topic.
            token = message["token"] or "/topics/" + (message.get("topic") or "")
            out.append((message["sequence"], token, state.get("n"), message["receivedAt"]))
        return out

    def responses(self, fcm=False):
        return self.sim_call("GET", "/sim/stats", fcm=fcm)["responses"]

    # Databases ----------------------------------------------------------------------------------------------------
    def url_for(self, database):
        return f"postgresql://postgres@127.0.0.1:{self.pg_port}/{database}?sslmode=disable"

    def create_database(self, database, activities, android_share=0.0):
        """Creates and migrates a database with `activities` activities, the first `android_share` of them Android
        (FCM registration tokens), the rest iOS; returns session → token."""
        android = int(activities * android_share)
        with psycopg.connect(self.url_for("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"')
        env = self.relay_env(database)
        subprocess.run([self.binary, "migrate"], env=env, check=True, capture_output=True)
        with psycopg.connect(self.url_for(database), autocommit=True) as conn:
            conn.execute("""
                INSERT INTO activity_registration (secret_hash, session_id, activity_token, bundle_id, content_state,
                                                   platform)
                SELECT encode(sha256('faults'), 'hex'), 'a' || i,
                       CASE WHEN i <= %s THEN 'f' || md5(%s || i) || ':APA91b' || md5(i::text)
                            ELSE md5(%s || i) || md5(i::text) END,
                       'dev.liverelay.faults', '{"n": 0}', CASE WHEN i <= %s THEN 'android' ELSE 'ios' END
                FROM generate_series(1, %s) AS i""",
                         (android, database, database, android, activities))
            conn.execute("CREATE SEQUENCE faults_n")
            rows = conn.execute("SELECT session_id, activity_token FROM activity_registration").fetchall()
        return dict(rows)

    def relay_env(self, database):
        env = dict(os.environ)
        env.update({
            "DATABASE_URL": self.url_for(database).replace("postgresql://", "postgres://"),
            "APNS_TEAM_ID": "FAULTTEAM1", "APNS_KEY_ID": "FAULTKEY01", "APNS_PRIVATE_KEY_FILE": self.key,
            "APNS_PRODUCTION_URL": f"https://127.0.0.1:{self.sim_port}",
            "APNS_SANDBOX_URL": f"https://127.0.0.1:{self.sim_port}/sandbox", "APNS_CA_FILE": self.ca,
            "APNS_CHANNELS_PRODUCTION_URL": f"https://127.0.0.1:{self.sim_port}",
            "APNS_CHANNELS_SANDBOX_URL": f"https://127.0.0.1:{self.sim_port}/sandbox",
            "FCM_SERVICE_ACCOUNT_FILE": self.fcm_account, "FCM_URL": f"https://127.0.0.1:{self.fcm_port}",
            "FCM_CA_FILE": self.fcm_ca,
            "LIVERELAY_ADMIN_TOKEN": ADMIN_TOKEN, "LOG_LEVEL": os.environ.get("FAULTS_LOG_LEVEL", "warning"),
            "LIVERELAY_SQL_DIR": ROOT,
        })
        return env

    def query(self, database, sql, params=None):
        with psycopg.connect(self.url_for(database), autocommit=True, connect_timeout=5) as conn:
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description else None

    def wait_drained(self, database, timeout):
        """Waits until nothing is left to send; returns the seconds it took, or None on timeout."""
        started = time.time()
        while time.time() - started < timeout:
            try:
                if self.query(database, "SELECT count(*) FROM delivery_outbox")[0][0] == 0:
                    return time.time() - started
            except psycopg.OperationalError:
                pass
            time.sleep(0.2)
        return None


class Writer(threading.Thread):
    """Single-row UPDATEs at a steady rate, each setting content_state = {"n": nextval(...)}. The number is taken
    when the row is written (after any wait for the row's lock), so per activity it increases in commit order, the
    order the relay must keep. Reconnects after errors (a statement that failed is not counted); remembers each
    commit's time."""

    def __init__(self, suite, database, sessions, rate, seconds):
        super().__init__(daemon=True)
        self.suite, self.database, self.sessions = suite, database, sessions
        self.rate, self.seconds = rate, seconds
        self.committed = {}  # n → commit time
        self.errors = 0
        self.stop_now = False

    def run(self):
        conn = None
        started = time.time()
        i = 0
        while not self.stop_now and (self.seconds is None or time.time() - started < self.seconds):
            if self.rate:
                due = started + i / self.rate
                delay = due - time.time()
                if delay > 0:
                    time.sleep(delay)
            i += 1
            session = random.choice(self.sessions)
            try:
                if conn is None:
                    conn = psycopg.connect(self.suite.url_for(self.database), autocommit=True, connect_timeout=2)
                n = conn.execute("UPDATE activity_registration "
                                 "SET content_state = jsonb_build_object('n', nextval('faults_n')) "
                                 "WHERE session_id = %s RETURNING (content_state->>'n')::int8",
                                 (session,)).fetchone()[0]
                self.committed[n] = time.time()
            except psycopg.Error:
                self.errors += 1
                try:
                    if conn is not None:
                        conn.close()
                except Exception:
                    pass
                conn = None
                time.sleep(0.05)
        if conn is not None:
            conn.close()
