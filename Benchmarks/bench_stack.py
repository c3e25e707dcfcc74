"""The benchmarks' stack: a PostgreSQL cluster of its own (default durable commits), h2o as the independent HTTP/2 +
TLS endpoint (it logs the microsecond each request arrives) and the release `liverelay serve`; with the helpers every
scenario uses (percentiles, CPU and memory of a process, activities registered in bulk). The load tools (h2load,
pgbench, perf) are in bench_tools.py."""
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

import psycopg

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
        if os.environ.get("BENCH_DB_TLS"):
            # The relay's connections over TLS (BENCH_DB_TLS=1: a self-signed certificate, sslmode=require, as with a
            # managed service); the harness's own connections stay in clear, so that the writers' figures do not move.
            cert, key = os.path.join(data, "server.crt"), os.path.join(data, "server.key")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                            "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", key, "-out", cert],
                           check=True, capture_output=True)
            os.chmod(key, 0o600)
            if os.geteuid() == 0:
                shutil.chown(cert, "postgres", "postgres")
                shutil.chown(key, "postgres", "postgres")
            settings += "ssl = on\n"
        with open(os.path.join(data, "postgresql.conf"), "a") as f:
            f.write("\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\nmax_connections = 200\n"
                    + settings)
        as_postgres([f"{self.bindir}/pg_ctl", "-D", data, "-o", f"-p {self.pg_port}", "-l", f"{data}/log", "-w",
                     "start"])
        as_postgres([f"{self.bindir}/createdb", "-h", "127.0.0.1", "-p", str(self.pg_port), "-U", "postgres", "bench"])
        self.data = data
        self.url = f"postgres://postgres@127.0.0.1:{self.pg_port}/bench?sslmode=disable"
        self.relay_url = self.url.replace("sslmode=disable", "sslmode=require") if os.environ.get("BENCH_DB_TLS") \
            else self.url

    def postmaster_pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def cpu_seconds(self):
        """(the relay's, PostgreSQL's with all its backends) CPU seconds so far: two readings make `cpu_per_write`."""
        return cpu_seconds(self.relay.pid), cpu_seconds(self.postmaster_pid(), True)

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
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-days", "2", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", self.key, "-out", self.cert],
                       check=True, capture_output=True)
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
        self.h2o = start_h2o(conf, self.h2o_port, "h2o")

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
            subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                            "-out", key], check=True, capture_output=True)
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
            "DATABASE_URL": self.relay_url, "APNS_TEAM_ID": "BENCHTEAM1", "APNS_KEY_ID": "BENCHKEY01",
            "APNS_PRIVATE_KEY_FILE": key,
            "APNS_PRODUCTION_URL": f"https://127.0.0.1:{self.h2o_port}",
            "APNS_SANDBOX_URL": f"https://127.0.0.1:{self.h2o_port}",
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
    rows = stack.sql("SELECT session_id, activity_token FROM activity_registration WHERE session_id LIKE %s",
                     (prefix + "%",))
    return dict(rows)


def start_h2o(conf, port, what):
    """h2o with the configuration file `conf`, once it accepts connections on `port` (5 s at most)."""
    process = subprocess.Popen(["h2o", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit(f"{what} did not start")
