"""The load and measuring tools the scenarios drive beside the stack: h2load for the endpoint's ceiling, pgbench for
concurrent writers, perf on the relay, and a sampler of PostgreSQL's upkeep."""
import os
import signal
import subprocess
import threading
import time


def h2load_ceiling(stack, requests):
    payload = os.path.join(stack.work, "payload.json")
    with open(payload, "w") as f:
        f.write('{"aps":{"content-state":{"n":1},"event":"update","timestamp":1795246286}}')
    out = subprocess.run(["h2load", "-n", str(requests), "-c", "1", "-m", "500", "-t", "1", "-d", payload,
                          "-H", "apns-push-type: liveactivity", f"https://127.0.0.1:{stack.h2o_port}/3/device/ceiling"],
                         capture_output=True, text=True).stdout
    rps = float(out.split("finished in")[1].split(",")[1].split("req/s")[0])
    return rps, out


def pgbench(stack, clients, seconds, script, database="bench"):
    path = os.path.join(stack.work, "b5.sql")
    with open(path, "w") as f:
        f.write(script)
    out = subprocess.run([f"{stack.bindir}/pgbench", "-n", "-c", str(clients), "-j", "2", "-T", str(seconds),
                          "-f", path, "-h", "127.0.0.1", "-p", str(stack.pg_port), "-U", "postgres", database],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("tps ="):
            return float(line.split()[2])
    raise SystemExit("pgbench failed:\n" + out)


def start_perf(stack, out, scenario, frequency=int(os.environ.get("BENCH_PERF_HZ", "999")), any_name=False):
    """`perf record` on the relay while a scenario runs, when BENCH_PERF names it (or, `any_name`, is set at all)."""
    wanted = os.environ.get("BENCH_PERF")
    if not wanted or (wanted != scenario and not any_name):
        return None
    perf = subprocess.Popen(["perf", "record", "-F", str(frequency), "-g", "-p", str(stack.relay.pid), "-o",
                             os.path.join(out, f"{scenario.lower()}-perf.data")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # perf takes a few hundred milliseconds to attach: B3's whole event is over in less.
    time.sleep(1)
    return perf


def stop_perf(perf):
    if perf:
        perf.send_signal(signal.SIGINT)
        perf.wait()


class Housekeeping:
    """Samples, every 100 ms on its own connection, what PostgreSQL runs besides the relay and the writer:
    autovacuum's workers (by table) and any VACUUM statement (the relay's QueueVacuum). A scenario's figure read
    beside it says whether it paid for PostgreSQL's upkeep of the scenarios before it."""

    def __init__(self, stack):
        self.stack, self.samples, self.seen = stack, 0, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        import psycopg
        with psycopg.connect(self.stack.url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
            while not self._stop.is_set():
                rows = conn.execute(
                    "SELECT backend_type, query FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND "
                    "(backend_type = 'autovacuum worker' OR query ILIKE 'vacuum%%' OR query ILIKE 'analyze%%') "
                    "AND state IS DISTINCT FROM 'idle'").fetchall()
                self.samples += 1
                for kind, query in rows:
                    # An autovacuum worker's query says so itself ("autovacuum: VACUUM public.t").
                    key = query.strip()[:60] if kind == "autovacuum worker" else f"statement: {query.strip()[:60]}"
                    self.seen[key] = self.seen.get(key, 0) + 1
                self._stop.wait(0.1)

    def stop(self):
        """{what ran: share of the samples it was seen in}."""
        self._stop.set()
        self._thread.join()
        return {key: round(count / max(1, self.samples), 3) for key, count in sorted(self.seen.items())}
