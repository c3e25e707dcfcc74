#!/usr/bin/env python3
"""LiveRelay benchmarks (issue 4): one run, one machine, h2o as an independent HTTP/2 + TLS endpoint.

Starts its own PostgreSQL cluster (default durable commits), h2o (answers APNs' 200, FCM's 200 body and an OAuth
token, and logs the microsecond each request arrives), and the release `liverelay serve`; measures B1, B2, B2m (half
Android), B3, B5 and B6, prints percentiles and ratios to the h2load ceiling of the same run, and writes results.json
and PNG plots. Run it through Benchmarks/run.
"""
import argparse
import hashlib
import asyncio
import uuid
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import psycopg

import b1_path
from bench_peer import Peer, cpu_per_write, peer_b1, peer_b2, peer_b5, timed_writes
from bench_webhooks import HookReceiver, bench_b8, register_endpoint
from bench_channels import bench_b9, summarize as summarize_b9
from bench_foreground import bench_b10, summarize as summarize_b10
from bench_writer_floor import bench_writer_floor, summarize as summarize_floor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADMIN_TOKEN = "bench-admin-token-0123456789"
# The pairing secret of every benchmark activity, hashed as the tables store it.
BENCH_SECRET_HASH = hashlib.sha256(b"bench").hexdigest()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pct(values, p):
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def as_postgres(args, **kw):
    if os.geteuid() == 0:
        args = ["runuser", "-u", "postgres", "--"] + args
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw)


def rss_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid, children=False):
    """CPU time (user + system) of a process; with children, also of its live and exited child processes."""
    tick = os.sysconf("SC_CLK_TCK")
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    total = (int(fields[11]) + int(fields[12])) / tick
    if children:
        total += (int(fields[13]) + int(fields[14])) / tick
        for child in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split():
            total += cpu_seconds(int(child))
    return total


class Stack:
    def __init__(self, work, binary):
        self.work, self.binary = work, binary
        self.bindir = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True).stdout.strip()
        self.pg_port, self.h2o_port, self.http_port = free_port(), free_port(), free_port()
        self.relay = None
        self.h2o = None

    # PostgreSQL ------------------------------------------------------------------------------------------------
    def start_postgres(self):
        data = os.path.join(self.work, "pg")
        os.makedirs(data)
        if os.geteuid() == 0:
            shutil.chown(self.work, "postgres", "postgres")
            shutil.chown(data, "postgres", "postgres")
        as_postgres([f"{self.bindir}/initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-instructions"])
        # The independent harness's cluster (issue 9): initdb's defaults (shared_buffers 128 MB) with a larger WAL
        # and checkpoint interval. BENCH_POSTGRES=tuned adds shared_buffers = 256MB (the setting of earlier runs).
        settings = "max_wal_size = 4GB\ncheckpoint_timeout = 30min\n" + (
            "shared_buffers = 256MB\n" if os.environ.get("BENCH_POSTGRES") == "tuned" else "")
        if os.environ.get("BENCH_PGSS"):
            # A profile of the statements (nested ones included), printed at the end: BENCH_PGSS=1.
            settings += "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track = all\n"
        with open(os.path.join(data, "postgresql.conf"), "a") as f:
            f.write("\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\nmax_connections = 200\n"
                    + settings)
        as_postgres([f"{self.bindir}/pg_ctl", "-D", data, "-o", f"-p {self.pg_port}", "-l", f"{data}/log", "-w", "start"])
        as_postgres([f"{self.bindir}/createdb", "-h", "127.0.0.1", "-p", str(self.pg_port), "-U", "postgres", "bench"])
        self.data = data
        self.url = f"postgres://postgres@127.0.0.1:{self.pg_port}/bench?sslmode=disable"

    def postmaster_pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def stop_postgres(self):
        try:
            as_postgres([f"{self.bindir}/pg_ctl", "-D", self.data, "-m", "fast", "stop"])
        except subprocess.CalledProcessError:
            pass

    def sql(self, query, params=None):
        with psycopg.connect(self.url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
            cur = conn.execute(query, params)
            return cur.fetchall() if cur.description else None

    # h2o ---------------------------------------------------------------------------------------------------------
    def start_h2o(self):
        self.cert, self.key = os.path.join(self.work, "cert.pem"), os.path.join(self.work, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                        "-keyout", self.key, "-out", self.cert], check=True, capture_output=True)
        self.access_log = os.path.join(self.work, "access.log")
        conf = os.path.join(self.work, "h2o.conf")
        with open(conf, "w") as f:
            f.write(f"""listen:
  host: 127.0.0.1
  port: {self.h2o_port}
  ssl:
    certificate-file: {self.cert}
    key-file: {self.key}
num-threads: 1
http2-max-concurrent-requests-per-connection: 1000
error-log: {self.work}/h2o-error.log
hosts:
  default:
    paths:
      /:
        mruby.handler: |
          Proc.new do |env|
            path = env["PATH_INFO"]
            if path == "/token"
              [200, {{"content-type" => "application/json"}},
               ['{{"access_token":"ya29.bench","expires_in":3600,"token_type":"Bearer"}}']]
            elsif path.start_with?("/1/apps/") && env["REQUEST_METHOD"] == "POST"
              [201, {{"apns-channel-id" => "h2o-" + env["HTTP_APNS_REQUEST_ID"].to_s}}, []]
            elsif path.start_with?("/1/apps/")
              [204, {{}}, []]
            elsif path.start_with?("/v1/projects/")
              [200, {{"content-type" => "application/json; charset=UTF-8"}},
               ['{{"name":"projects/liverelay-bench/messages/0:1795246286000000%0"}}']]
            else
              [200, {{"apns-id" => (env["HTTP_APNS_ID"] || "")}}, []]
            end
          end
        access-log:
          path: {self.access_log}
          format: "%{{usec}}t %U %{{apns-channel-id}}i %{{apns-priority}}i"
""")
        self.h2o = subprocess.Popen(["h2o", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.h2o_port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("h2o did not start")

    def log_lines(self):
        """Lines of the access log so far: (receive time in seconds, token; "fcm" for an FCM message, whose token is
        in its body). Read incrementally, so that polling it costs little CPU next to the relay being measured."""
        if not hasattr(self, "_lines"):
            self._lines, self._offset = [], 0
        with open(self.access_log) as f:
            f.seek(self._offset)
            chunk = f.read()
        complete = chunk[:chunk.rfind("\n") + 1]
        self._offset += len(complete.encode())
        for line in complete.splitlines():
            parts = line.split()
            if len(parts) < 2:
                continue
            if parts[1].startswith("/3/device/"):
                self._lines.append((int(parts[0]) / 1e6, parts[1][len("/3/device/"):]))
            elif parts[1].startswith("/v1/projects/"):
                self._lines.append((int(parts[0]) / 1e6, "fcm"))
            elif parts[1].startswith("/4/broadcasts/") and len(parts) > 2:
                # A channel's broadcast (B9): named by the channel's id at Apple.
                self._lines.append((int(parts[0]) / 1e6, "channel:" + parts[2]))
        return list(self._lines)

    def wait_for_log(self, count, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if len(self.log_lines()) >= count:
                break
            time.sleep(0.25)
        return self.log_lines()

    # The relay ----------------------------------------------------------------------------------------------------
    def relay_env(self):
        key = os.path.join(self.work, "apns.p8")
        if not os.path.exists(key):
            subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key],
                           check=True, capture_output=True)
        account = os.path.join(self.work, "fcm-account.json")
        if not os.path.exists(account):
            rsa = os.path.join(self.work, "fcm-key.pem")
            subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", rsa],
                           check=True, capture_output=True)
            with open(rsa) as f, open(account, "w") as out:
                json.dump({"type": "service_account", "project_id": "liverelay-bench", "private_key_id": "bench-key",
                           "private_key": f.read(), "client_email": "bench@liverelay-bench.iam.gserviceaccount.com",
                           "token_uri": f"https://127.0.0.1:{self.h2o_port}/token"}, out)
        env = dict(os.environ)
        env.update({
            "FCM_SERVICE_ACCOUNT_FILE": account, "FCM_URL": f"https://127.0.0.1:{self.h2o_port}",
            "FCM_CA_FILE": self.cert,
            "DATABASE_URL": self.url, "APNS_TEAM_ID": "BENCHTEAM1", "APNS_KEY_ID": "BENCHKEY01", "APNS_PRIVATE_KEY_FILE": key,
            "APNS_PRODUCTION_URL": f"https://127.0.0.1:{self.h2o_port}", "APNS_SANDBOX_URL": f"https://127.0.0.1:{self.h2o_port}",
            "APNS_CHANNELS_PRODUCTION_URL": f"https://127.0.0.1:{self.h2o_port}",
            "APNS_CHANNELS_SANDBOX_URL": f"https://127.0.0.1:{self.h2o_port}",
            "APNS_CA_FILE": self.cert, "PORT": str(self.http_port),
            "LIVERELAY_WEBHOOK_ALLOW_PRIVATE": "true", "LIVERELAY_ADMIN_TOKEN": ADMIN_TOKEN,
            "LOG_LEVEL": os.environ.get("BENCH_LOG_LEVEL", "warning"),
            # Another tree's sql/ and migrations/ (a change to the SQL alone, measured beside the current one).
            "LIVERELAY_SQL_DIR": os.environ.get("BENCH_SQL_DIR", ROOT),
        })
        if os.environ.get("BENCH_NO_FCM"):  # an iOS-only relay (what FCM costs B9's channels)
            for name in ("FCM_SERVICE_ACCOUNT_FILE", "FCM_URL", "FCM_CA_FILE"):
                env.pop(name)
        return env

    def migrate(self):
        subprocess.run([self.binary, "migrate"], env=self.relay_env(), check=True, capture_output=True)

    def start_relay(self):
        started = time.time()
        self.relay = subprocess.Popen([self.binary, "serve"], env=self.relay_env(), stdout=subprocess.DEVNULL,
                                      stderr=open(os.path.join(self.work, "relay.log"), "ab"))
        while time.time() - started < 30:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/ready", timeout=1) as r:
                    if r.status == 200:
                        return time.time() - started
            except Exception:
                time.sleep(0.005)
        raise SystemExit("relay did not become ready; see relay.log")

    def stop_relay(self):
        if self.relay:
            self.relay.send_signal(signal.SIGTERM)
            self.relay.wait(timeout=30)
            self.relay = None


def register(stack, prefix, count, state="'{\"n\": 0}'", android_share=0.0):
    """Activities `prefix1`…; every 1/android_share-th of them (spread evenly) Android, with an FCM token."""
    every = int(round(1 / android_share)) if android_share else 0
    stack.sql(f"""
        INSERT INTO activity_registration (secret_hash, session_id, activity_token, bundle_id, content_state, platform)
        SELECT encode(sha256('bench'), 'hex'), %s || i, md5(%s || i) || md5(i::text), 'dev.liverelay.bench', {state},
               CASE WHEN %s > 0 AND i %% %s = 0 THEN 'android' ELSE 'ios' END
        FROM generate_series(1, %s) AS i
        """, (prefix, prefix, every, max(every, 1), count))
    rows = stack.sql("SELECT session_id, activity_token FROM activity_registration WHERE session_id LIKE %s", (prefix + "%",))
    return dict(rows)


def h2load_ceiling(stack, requests):
    payload = os.path.join(stack.work, "payload.json")
    with open(payload, "w") as f:
        f.write('{"aps":{"content-state":{"n":1},"event":"update","timestamp":1795246286}}')
    out = subprocess.run(["h2load", "-n", str(requests), "-c", "1", "-m", "500", "-t", "1", "-d", payload,
                          "-H", "apns-push-type: liveactivity", f"https://127.0.0.1:{stack.h2o_port}/3/device/ceiling"],
                         capture_output=True, text=True).stdout
    rps = float(out.split("finished in")[1].split(",")[1].split("req/s")[0])
    return rps, out


def bench_b1(stack, rate, seconds):
    """B1: `rate` one-row writes a second; commit → request received, and each write's UPDATE + COMMIT. Then the same
    writes to the same table with LiveRelay's triggers disabled, for what the triggers cost the writer."""
    sessions = register(stack, "b1-", rate * seconds)
    time.sleep(1)
    before = len(stack.log_lines())
    cpu_before = (cpu_seconds(stack.relay.pid), cpu_seconds(stack.postmaster_pid(), True))
    commits, durations = timed_writes(stack.url, rate, seconds, sessions, BENCH_SECRET_HASH, "b1-")
    lines = stack.wait_for_log(before + len(commits), 30)[before:]
    cpu_after = (cpu_seconds(stack.relay.pid), cpu_seconds(stack.postmaster_pid(), True))
    latencies = [(received - commits[token]) * 1000 for received, token in lines if token in commits]
    stack.sql("ALTER TABLE activity_registration DISABLE TRIGGER USER")
    try:
        bare_seconds = max(1, seconds // 2)
        _, bare = timed_writes(stack.url, rate, bare_seconds, sessions, BENCH_SECRET_HASH, "b1-")
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


class SSEClient(asyncio.Protocol):
    """One B3 stream reader: callbacks on the event loop, no coroutine per read, so that 10,000 of them in one Python
    process measure the relay rather than asyncio's stream readers (with those, a server that writes all 10,000 events
    in 110 ms is seen at p99 570 ms; with this, at 112 ms)."""

    def __init__(self, request, on_connected, on_event):
        self.request, self.on_connected, self.on_event = request, on_connected, on_event
        self.buffer, self.state = b"", "waiting"

    def connection_made(self, transport):
        transport.write(self.request)

    def data_received(self, data):
        self.buffer += data
        if self.state == "waiting" and b": connected" in self.buffer:
            self.state, self.buffer = "connected", self.buffer[self.buffer.index(b": connected"):]
            self.on_connected()
        if self.state == "connected" and b"event: live-activity-message" in self.buffer:
            self.state = "received"
            self.on_event(time.time())


async def bench_b3_async(stack, clients, out):
    devices = [str(uuid.UUID(int=i + 1)) for i in range(clients)]
    loop = asyncio.get_running_loop()
    received, connected = [], 0
    all_connected, all_received = asyncio.Event(), asyncio.Event()
    gate = asyncio.Semaphore(256)

    def on_connected():
        nonlocal connected
        connected += 1
        if connected == clients:
            all_connected.set()

    def on_event(at):
        received.append(at)
        if len(received) == clients:
            all_received.set()

    transports = []

    async def connect(device):
        request = (f"GET /v1/stream?channel=device:{device} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   f"Authorization: Bearer {ADMIN_TOKEN}\r\n\r\n").encode()
        async with gate:
            transport, _ = await loop.create_connection(lambda: SSEClient(request, on_connected, on_event),
                                                        "127.0.0.1", stack.http_port)
            transports.append(transport)

    connecting = [asyncio.create_task(connect(device)) for device in devices]
    try:
        await asyncio.wait_for(all_connected.wait(), 120)
    except asyncio.TimeoutError:
        pass
    await asyncio.sleep(1)  # the last connections' set-up ends before the relay's memory is read
    rss_connected = rss_kb(stack.relay.pid, "VmRSS") / 1024
    # BENCH_PERF=B3 profiles the relay from the write until every client has the event.
    perf = start_perf(stack, out, "B3", 4999)
    started = time.time()
    await asyncio.to_thread(stack.sql, "INSERT INTO device_live_activity_message (device_uuid, message) "
                            "SELECT unnest(%s::uuid[]), 'b3'", (devices,))
    committed = time.time()
    try:
        await asyncio.wait_for(all_received.wait(), 60)
    except asyncio.TimeoutError:
        pass
    stop_perf(perf)
    for task in connecting:
        task.cancel()
    # The clients stay connected while the event is measured, as open apps do; they leave together afterwards.
    for transport in transports:
        transport.close()
    latencies = [(t - committed) * 1000 for t in received]
    return {"clients": clients, "connected": connected, "received": len(received), "statement_seconds": committed - started,
            "latencies_ms": latencies, "relay_rss_connected_mb": rss_connected,
            "relay_peak_rss_mb": rss_kb(stack.relay.pid, "VmHWM") / 1024}


def start_perf(stack, out, scenario, frequency=int(os.environ.get("BENCH_PERF_HZ", "999")), any_name=False):
    """`perf record` on the relay while a scenario runs, when BENCH_PERF names it (or, `any_name`, is set at all)."""
    wanted = os.environ.get("BENCH_PERF")
    if not wanted or (wanted != scenario and not any_name):
        return None
    return subprocess.Popen(["perf", "record", "-F", str(frequency), "-g", "-p", str(stack.relay.pid), "-o",
                             os.path.join(out, f"{scenario.lower()}-perf.data")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_perf(perf):
    if perf:
        perf.send_signal(signal.SIGINT)
        perf.wait()


def bench_b3(stack, clients, out):
    return asyncio.run(bench_b3_async(stack, clients, out))


def pgbench(stack, clients, seconds, script, database="bench"):
    path = os.path.join(stack.work, "b5.sql")
    with open(path, "w") as f:
        f.write(script)
    out = subprocess.run([f"{stack.bindir}/pgbench", "-n", "-c", str(clients), "-j", "2", "-T", str(seconds), "-f", path,
                          "-h", "127.0.0.1", "-p", str(stack.pg_port), "-U", "postgres", database],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("tps ="):
            return float(line.split()[2])
    raise SystemExit("pgbench failed:\n" + out)


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


def plots(results, directory):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    made = []
    lat = sorted(results.get("B1", {}).get("latencies_ms", []))
    if lat:
        plt.figure(figsize=(6, 4))
        plt.plot(lat, [100 * (i + 1) / len(lat) for i in range(len(lat))])
        plt.xlabel("commit → request received at h2o (ms)")
        plt.ylabel("percentile")
        plt.title("B1: 200 updates/s, latency CDF")
        plt.grid(True, alpha=0.3)
        path = os.path.join(directory, "b1-latency-cdf.png")
        plt.savefig(path, dpi=120, bbox_inches="tight")
        made.append(path)
    timeline = results.get("B2", {}).get("timeline", [])
    if timeline:
        plt.figure(figsize=(6, 4))
        plt.plot(timeline, range(1, len(timeline) + 1))
        plt.xlabel("seconds after commit")
        plt.ylabel("pushes received")
        plt.title(f"B2: one UPDATE over {len(timeline)} activities")
        plt.grid(True, alpha=0.3)
        path = os.path.join(directory, "b2-timeline.png")
        plt.savefig(path, dpi=120, bbox_inches="tight")
        made.append(path)
    return made


def print_statement_profile(stack):
    """The statements that took PostgreSQL's time in this run, with their calls (BENCH_PGSS=1)."""
    stack.sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    rows = stack.sql("""
        SELECT round(total_exec_time::numeric, 1), calls, round((total_exec_time / calls)::numeric, 4),
               round(total_plan_time::numeric, 1), toplevel, regexp_replace(left(query, 90), '\\s+', ' ', 'g')
        FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 60""")
    print("statement profile: total ms, calls, ms per call, plan ms, top level, query")
    for row in rows:
        print("  ", *row)


def run_peer(stack, args, only):
    peer = Peer(stack, as_postgres)
    counts = [int(n) for n in args.peer_processes.split(",")]
    out = {}
    try:
        if "B1" in only or "B5" in only:
            runs = []
            for processes in counts:
                peer.start(processes)
                run = peer_b1(stack, peer, args.b1_rate, args.b1_seconds, BENCH_SECRET_HASH, cpu_seconds)
                peer.stop()
                run["processes"] = processes
                runs.append(run)
                peer.sql("DELETE FROM activity_registration WHERE session_id LIKE 'p1-%%'")
            best = min(runs, key=lambda r: pct(r["latencies_ms"], 50))
            out["B1"] = dict(best, runs=[{"processes": r["processes"], "p50": pct(r["latencies_ms"], 50),
                                          "p99": pct(r["latencies_ms"], 99)} for r in runs])
            # B5's rows (and B1's tokens) for the writers below.
            peer.register("p1-", args.b1_rate * args.b1_seconds, BENCH_SECRET_HASH)
        if "B2" in only:
            out["B2"] = peer_b2(stack, peer, args.b2_activities, counts, BENCH_SECRET_HASH, cpu_seconds)
        if "B5" in only:
            peer.start(max(counts))
            out["B5"] = peer_b5(stack, peer, pgbench, 16, args.b5_seconds, args.b1_rate * args.b1_seconds,
                                BENCH_SECRET_HASH)
    finally:
        peer.stop()
    return out


def peer_summary(results, summary, slim):
    """Each B1/B2/B5 figure beside the peer's of the same run, with LiveRelay / peer ratios."""
    peer = results.get("peer", {})
    if "B1" in peer and "B1" in results:
        ours, theirs = results["B1"], peer["B1"]
        lat, plat = ours["latencies_ms"], theirs["latencies_ms"]
        ps = (50, 90, 99)
        summary["B1 peer"] = (
            f"{theirs['received']}/{theirs['writes']} received ({theirs['processes']} process(es)); commit → request "
            + ", ".join(f"p{p} {pct(plat, p):.3f} ms" for p in ps) + f", max {max(plat):.3f} ms; LiveRelay / peer: "
            + ", ".join(f"p{p} {pct(lat, p) / pct(plat, p):.2f}×" for p in ps) + "; peer CPU per write: "
            + ", ".join(f"{k} {v:.0f} µs" for k, v in theirs["cpu_microseconds_per_write"].items()))
        w, wp, wb = ours["write_ms"], theirs["write_ms"], ours["write_ms_triggers_disabled"]
        summary["B1 write"] = (
            f"UPDATE + COMMIT p50 / p99: LiveRelay {pct(w, 50):.3f} / {pct(w, 99):.3f} ms, peer {pct(wp, 50):.3f} / "
            f"{pct(wp, 99):.3f} ms, LiveRelay's table with its triggers disabled {pct(wb, 50):.3f} / {pct(wb, 99):.3f} "
            f"ms; LiveRelay / disabled p50 {pct(w, 50) / pct(wb, 50):.2f}×, LiveRelay / peer p50 "
            f"{pct(w, 50) / pct(wp, 50):.2f}×")
        slim["peer"]["B1"]["latencies_ms"] = {p: pct(plat, p) for p in (50, 90, 99, 99.9)}
        slim["peer"]["B1"]["write_ms"] = {p: pct(wp, p) for p in (50, 90, 99)}
    if "B2" in peer and "B2" in results:
        ours, theirs = results["B2"], peer["B2"]
        summary["B2 peer"] = (
            f"{theirs['received']}/{theirs['activities']} in {theirs['seconds_after_commit']:.2f} s: "
            f"{theirs['pushes_per_second']:,.0f} pushes/s ({theirs['processes']} process(es)), UPDATE statement "
            f"{theirs['statement_seconds']:.2f} s, peer CPU per push "
            f"{theirs['relay_cpu_microseconds_per_push']:.0f} µs;"
            f" LiveRelay / peer: {ours['pushes_per_second'] / theirs['pushes_per_second']:.2f}× the pushes/s, "
            f"{ours['statement_seconds'] / theirs['statement_seconds']:.2f}× the statement's time")
    if "B5" in peer and "B5" in results:
        ours, theirs = results["B5"], peer["B5"]
        summary["B5 peer"] = (f"16 durable writers: {theirs['tps_with_triggers_and_relay']:,.0f} tps with the peer vs "
                              f"{theirs['tps_bare']:,.0f} bare = {theirs['ratio']:.2f}; LiveRelay / peer: "
                              f"{ours['ratio'] / theirs['ratio']:.2f}×")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build-release/release/liverelay"))
    parser.add_argument("--b1-rate", type=int, default=200)
    parser.add_argument("--b1-seconds", type=int, default=20)
    parser.add_argument("--b2-activities", type=int, default=100_000)
    parser.add_argument("--b5-seconds", type=int, default=20)
    parser.add_argument("--b3-clients", type=int, default=10_000)
    parser.add_argument("--out", default=os.path.join(ROOT, "Benchmarks", "results"))
    parser.add_argument("--b8-events", type=int, default=10_000)
    parser.add_argument("--b9-bulk", type=int, default=1000, help="B9: channels one statement updates")
    parser.add_argument("--webhooks", action="store_true",
                        help="register the webhook endpoint before B1/B2/B5 (what lifecycle webhooks cost them); "
                             "by default it is registered just before B8, so B1/B2/B5 compare like with the peer")
    parser.add_argument("--only", default="B1,B1F,B2,B2M,B3,B5,B6,B8,B9,B10",
                        help="comma-separated scenarios to run (e.g. B2)")
    parser.add_argument("--no-peer", action="store_true", help="skip the naive peer (Benchmarks/naive_peer.py)")
    parser.add_argument("--peer-processes", default="1,2", help="the peer's process counts; the best one is reported")
    args = parser.parse_args()
    only = set(args.only.upper().split(","))
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="liverelay-bench-", dir="/tmp")
    os.chmod(work, 0o755)
    stack = Stack(work, args.binary)
    results = {"machine": {"cpus": os.cpu_count(), "uname": " ".join(os.uname())}}
    hooks = None
    try:
        stack.start_postgres()
        stack.start_h2o()
        ceiling, _ = h2load_ceiling(stack, 200_000)
        results["ceiling_requests_per_second"] = ceiling
        stack.migrate()
        if "B8" in only or args.webhooks:
            hooks = HookReceiver(work, free_port())
        if args.webhooks:
            # Every lifecycle event of B1/B2/B5 (and B8's) goes to a local receiver.
            register_endpoint(stack, hooks.url)
        # The harness's order: B2's activities seeded before the relay starts, a warm-up, B1, then B2's two rounds.
        if "B2" in only:
            seed_b2(stack, args.b2_activities)
        ready = stack.start_relay()
        time.sleep(2)
        results["B6"] = {"start_to_ready_seconds": ready, "idle_rss_mb": rss_kb(stack.relay.pid, "VmRSS") / 1024}
        if "B2" in only:
            warm_up(stack)
        if "B1" in only or "B5" in only:
            perf = start_perf(stack, args.out, "B1")
            capture = os.path.join(stack.work, "b1.pcap")
            wire = b1_path.start_capture(capture, [stack.pg_port, stack.h2o_port]) if os.environ.get("BENCH_PATH") \
                else None
            results["B1"] = bench_b1(stack, args.b1_rate, args.b1_seconds)
            stop_perf(perf)
            if wire:
                b1_path.stop_capture(wire)
                results["B1"]["path"] = b1_path.segments(capture, stack.pg_port, stack.h2o_port)
        if "B1F" in only:
            results["B1f"] = bench_writer_floor(stack, register, BENCH_SECRET_HASH, rate=args.b1_rate)
        if "B2" in only:
            # B2 is profiled whatever BENCH_PERF names (BENCH_PERF=1 … --only B2).
            perf = start_perf(stack, args.out, "B2", frequency=499, any_name=True)
            results["B2"] = bench_b2(stack, args.b2_activities)
            stop_perf(perf)
        if "B2M" in only:
            results["B2m"] = bench_b2m(stack, args.b2_activities)
        if "B5" in only:
            results["B5"] = bench_b5(stack, 16, args.b5_seconds, args.b1_rate * args.b1_seconds)
        if "B8" in only:
            if stack.relay is None:  # B5 ends with the relay stopped
                stack.start_relay()
            if not args.webhooks:
                register_endpoint(stack, hooks.url)
            results["B8"] = bench_b8(stack, hooks, args.b8_events, cpu_seconds)
        if "B9" in only:
            if stack.relay is None:
                stack.start_relay()
            results["B9"] = bench_b9(stack, args.b1_rate, args.b1_seconds, args.b9_bulk)
        if "B10" in only:
            if stack.relay is None:
                stack.start_relay()
            results["B10"] = bench_b10(stack, ADMIN_TOKEN, register, rate=args.b1_rate,
                                       seconds=max(2, args.b1_seconds // 2))
        if "B3" in only:
            stack.stop_relay()
            stack.start_relay()
            results["B3"] = bench_b3(stack, args.b3_clients, args.out)
        if not args.no_peer and only & {"B1", "B2", "B5"}:
            # The naive peer on the same cluster and endpoint, LiveRelay stopped meanwhile.
            stack.stop_relay()
            results["peer"] = run_peer(stack, args, only)
    finally:
        if os.environ.get("BENCH_PGSS") and hasattr(stack, "data"):
            print_statement_profile(stack)
        stack.stop_relay()
        if hooks:
            hooks.stop()
        if stack.h2o:
            stack.h2o.terminate()
        if hasattr(stack, "data"):
            stack.stop_postgres()
    ceiling_latency_ms = 1000 / ceiling
    summary = {"ceiling": f"h2load: {ceiling:,.0f} requests/s (one connection, 500 streams) = {ceiling_latency_ms:.4f} ms per request"}
    slim = json.loads(json.dumps({k: v for k, v in results.items()}))
    if "B1" in results:
        lat = results["B1"]["latencies_ms"]
        summary["B1"] = (f"{results['B1']['received']}/{results['B1']['writes']} received; commit → request p50 {pct(lat, 50):.3f} ms, "
                         f"p90 {pct(lat, 90):.3f} ms, p99 {pct(lat, 99):.3f} ms, max {max(lat) if lat else float('nan'):.3f} ms "
                         f"(p50 = {pct(lat, 50) / ceiling_latency_ms:.0f}× the ceiling's time per request); "
                         "CPU per write: " + ", ".join(
                             f"{k} {v:.0f} µs" for k, v in results["B1"]["cpu_microseconds_per_write"].items()))
        slim["B1"]["latencies_ms"] = {p: pct(lat, p) for p in (50, 90, 99, 99.9)}
        if "path" in results["B1"]:
            summary["B1 path"] = b1_path.summary(results["B1"]["path"])
            slim["B1"]["path"] = {k: {p: pct(v, p) for p in (50, 90, 99)} for k, v in results["B1"]["path"].items()}
        for key in ("write_ms", "write_ms_triggers_disabled"):
            slim["B1"][key] = {p: pct(results["B1"][key], p) for p in (50, 90, 99)}
    if "B1f" in results:
        summary["B1f"] = summarize_floor(results["B1f"])
    if "B2" in results:
        b2 = results["B2"]
        first = b2["first_round"]
        summary["B2"] = (f"{b2['received']}/{b2['activities']} received in {b2['seconds_after_commit']:.2f} s after commit: "
                         f"{b2['pushes_per_second']:,.0f} pushes/s = {b2['pushes_per_second'] / ceiling:.2f} of the ceiling; "
                         f"first push {b2['first_push_ms']:.0f} ms after commit; UPDATE statement "
                         f"{b2['statement_seconds']:.2f} s ({b2['statement_seconds_triggers_disabled']:.2f} s with "
                         "the triggers disabled: "
                         f"{b2['statement_seconds'] / b2['statement_seconds_triggers_disabled']:.2f}×); "
                         f"relay peak RSS {b2['peak_rss_mb']:.0f} MB; "
                         "CPU per push from the statement on: "
                         + ", ".join(f"{k} {v:.0f} µs" for k, v in b2["cpu_microseconds_per_push"].items())
                         + f" (first round: {first['pushes_per_second']:,.0f} pushes/s, postgres "
                         f"{first['cpu_microseconds_per_push']['postgres']:.0f} µs, {first['peak_rss_mb']:.0f} MB)")
        slim["B2"].pop("timeline", None)
    if "B2m" in results:
        mixed, android = results["B2m"], results["B2m"]["android_only"]
        rates = ", ".join(f"{name} {v['received']:,} at {v['pushes_per_second']:,.0f}/s"
                          for name, v in mixed["by_transport"].items())
        ratio = (f" = {mixed['pushes_per_second'] / results['B2']['pushes_per_second']:.2f} of B2's all-iOS rate"
                 if "B2" in results else "")
        ios_cpu = results["B2"]["cpu_microseconds_per_push"]["relay"] if "B2" in results else float("nan")
        summary["B2m"] = (f"{mixed['received']}/{mixed['activities']} (half Android) in "
                          f"{mixed['seconds_after_commit']:.2f} s: "
                          f"{mixed['pushes_per_second']:,.0f} pushes/s{ratio} ({rates}); first push "
                          f"{mixed['first_push_ms']:.0f} ms; relay peak RSS {mixed['peak_rss_mb']:.0f} MB; "
                          "CPU per push: "
                          + ", ".join(f"{k} {v:.0f} µs" for k, v in mixed["cpu_microseconds_per_push"].items())
                          + f"; relay per push by transport: APNs {ios_cpu:.0f} µs (B2), FCM "
                          f"{android['cpu_microseconds_per_push']['relay']:.0f} µs (Android half alone, "
                          f"{android['pushes_per_second']:,.0f} messages/s)")
        slim["B2m"].pop("timeline", None)
    if "B3" in results:
        b3, l = results["B3"], results["B3"]["latencies_ms"]
        summary["B3"] = (f"{b3['received']}/{b3['clients']} SSE clients received the event ({b3['connected']} connected); "
                         f"commit → event p50 {pct(l, 50):.1f} ms, p99 {pct(l, 99):.1f} ms, max {max(l) if l else float('nan'):.1f} ms; "
                         f"relay RSS {b3['relay_rss_connected_mb']:.0f} MB connected, peak {b3['relay_peak_rss_mb']:.0f} MB")
        slim["B3"]["latencies_ms"] = {p: pct(l, p) for p in (50, 90, 99)}
    if "B5" in results:
        b5 = results["B5"]
        summary["B5"] = (f"16 durable writers: {b5['tps_with_triggers_and_relay']:,.0f} tps with triggers + relay vs "
                         f"{b5['tps_bare']:,.0f} tps bare = {b5['ratio']:.2f} (triggers with the relay stopped: "
                         f"{b5['tps_triggers_relay_stopped']:,.0f} tps = {b5['ratio_triggers_only']:.2f})")
    if "B8" in results:
        b8 = results["B8"]
        summary["B8"] = (f"{b8['received']}/{b8['events']} lifecycle events at the receiver in "
                         f"{b8['seconds_after_commit']:.2f} s after commit: {b8['events_per_second']:,.0f} events/s, "
                         f"{b8['lost']} lost, {b8['requests'] - b8['received']} repeated requests; first "
                         f"{b8['first_event_ms']:.0f} ms after commit; CPU per event from the INSERT on: "
                         + ", ".join(f"{name} {seconds / max(b8['received'], 1) * 1e6:.0f} µs"
                                     for name, seconds in b8["cpu_seconds"].items()))
    if "B9" in results:
        summarize_b9(results, summary, slim)
    if "B10" in results:
        summarize_b10(results, summary, slim)
    peer_summary(results, summary, slim)
    summary["webhooks"] = ("B1/B2/B5 ran with a webhook endpoint registered (--webhooks)" if args.webhooks else
                           "B1/B2/B5 ran without a webhook endpoint (registered just before B8; --webhooks for both)")
    summary["B6"] = (f"start → ready {results['B6']['start_to_ready_seconds'] * 1000:.0f} ms; "
                     f"idle RSS {results['B6']['idle_rss_mb']:.1f} MB")
    results["summary"] = slim["summary"] = summary
    for key, line in summary.items():
        print(f"{key:8} {line}")
    made = plots(results, args.out)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(slim, f, indent=2)
    for path in made:
        print("plot", os.path.relpath(path, ROOT))
    if not os.environ.get("BENCH_KEEP"):
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("kept", work)


if __name__ == "__main__":
    sys.exit(main())
