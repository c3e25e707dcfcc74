"""The naive peer's side of ./Benchmarks/run (Benchmarks/naive_peer.py): its own database in the benchmark's cluster,
the same h2o endpoint, the same writers. B1, B2 and B5 are measured for it exactly as for LiveRelay, so that every
figure is printed beside the peer's from the same run."""
import os
import subprocess
import sys
import time

import psycopg

from bench_stack import BENCH_SECRET_HASH, as_postgres, cpu_seconds
from bench_tools import pgbench

HERE = os.path.dirname(os.path.abspath(__file__))


class Peer:
    """The peer's database (`peer`) and its relay processes."""

    def __init__(self, stack):
        self.stack = stack
        as_postgres([f"{stack.bindir}/createdb", "-h", "127.0.0.1", "-p", str(stack.pg_port), "-U", "postgres",
                     "peer"])
        self.url = stack.url.replace("/bench?", "/peer?").replace("postgres://", "postgresql://")
        with open(os.path.join(HERE, "naive_peer.sql")) as f:
            self.sql(f.read())
        self.processes = []

    def sql(self, query, params=None):
        with psycopg.connect(self.url, autocommit=True) as conn:
            cur = conn.execute(query, params)
            return cur.fetchall() if cur.description else None

    def register(self, prefix, count, state="'{\"n\": 0}'"):
        self.sql(f"""
            INSERT INTO activity_registration (secret_hash, session_id, activity_token, bundle_id, content_state)
            SELECT %s, %s || i, 'peer' || md5(%s || i), 'dev.liverelay.bench', {state}
            FROM generate_series(1, %s) AS i
            """, (BENCH_SECRET_HASH, prefix, prefix, count))
        return dict(self.sql("SELECT session_id, activity_token FROM activity_registration WHERE session_id LIKE %s",
                             (prefix + "%",)))

    def start(self, processes):
        """Starts `processes` peer processes and returns once each is listening (it says "ready")."""
        dsn = self.url.split("?")[0]
        for _ in range(processes):
            self.processes.append(subprocess.Popen(
                [sys.executable, os.path.join(HERE, "naive_peer.py"), "--dsn", dsn,
                 "--apns", f"https://127.0.0.1:{self.stack.h2o_port}", "--ca", self.stack.cert],
                stdout=subprocess.PIPE, stderr=open(os.path.join(self.stack.work, "peer.log"), "ab"), text=True))
        for process in self.processes[-processes:]:
            if process.stdout.readline().strip() != "ready":
                raise SystemExit("the naive peer did not start; see peer.log")

    def stop(self):
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        self.processes = []

    def cpu_seconds(self):
        return sum(cpu_seconds(p.pid) for p in self.processes)


def cpu_per_write(before, after, writes):
    """Microseconds of CPU per write of the relay and of PostgreSQL, from two (relay, postgres) CPU-second readings."""
    return {"relay": (after[0] - before[0]) * 1e6 / writes, "postgres": (after[1] - before[1]) * 1e6 / writes}


def paced_writes(url, rate, seconds, statement, params, key):
    """`rate` one-row writes a second (autocommit: the statement + COMMIT), write i with `params(i)`; returns the
    commit time of each write by `key(i)` and each write's own duration in milliseconds."""
    commits, durations = {}, []
    with psycopg.connect(url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
        start = time.time()
        for i in range(1, rate * seconds + 1):
            due = start + (i - 1) / rate
            while time.time() < due:
                time.sleep(min(0.0005, max(0, due - time.time())))
            began = time.perf_counter()
            conn.execute(statement, params(i))
            durations.append((time.perf_counter() - began) * 1000)
            commits[key(i)] = time.time()
    return commits, durations


def timed_writes(url, rate, seconds, sessions, prefix, first=1):
    """B1's writes: `rate` one-row UPDATEs of activities a second, of `prefix``first`… in turn; commit times by
    token."""
    return paced_writes(url, rate, seconds,
                        "UPDATE activity_registration SET content_state = jsonb_build_object('n', %s) "
                        "WHERE secret_hash = %s AND session_id = %s",
                        lambda i: (i, BENCH_SECRET_HASH, f"{prefix}{first - 1 + i}"),
                        lambda i: sessions[f"{prefix}{first - 1 + i}"])


def peer_b1(stack, peer, rate, seconds):
    sessions = peer.register("p1-", rate * seconds)
    time.sleep(1)
    before = len(stack.log_lines())
    cpu_before = (peer.cpu_seconds(), cpu_seconds(stack.postmaster_pid(), True))
    commits, durations = timed_writes(peer.url, rate, seconds, sessions, "p1-")
    lines = stack.wait_for_log(before + len(commits), 30)[before:]
    cpu_after = (peer.cpu_seconds(), cpu_seconds(stack.postmaster_pid(), True))
    latencies = [(received - commits[token]) * 1000 for received, token in lines if token in commits]
    return {"writes": len(commits), "received": len(latencies), "latencies_ms": latencies, "write_ms": durations,
            "cpu_microseconds_per_write": cpu_per_write(cpu_before, cpu_after, len(commits))}


def peer_b2_round(stack, peer, k, count):
    before = len(stack.log_lines())
    cpu_before = peer.cpu_seconds()
    started = time.time()
    peer.sql(f"UPDATE activity_registration SET content_state = jsonb_build_object('status', 'working', 'n', {k}) "
             "WHERE session_id LIKE 'p2-%%'")
    committed = time.time()
    lines = stack.wait_for_log(before + count, 300)[before:]
    times = sorted(received for received, _ in lines)
    last = times[-1] if times else committed
    return {"activities": count, "received": len(times), "statement_seconds": committed - started,
            "seconds_after_commit": last - committed, "pushes_per_second": len(times) / max(last - committed, 1e-9),
            "relay_cpu_microseconds_per_push": (peer.cpu_seconds() - cpu_before) * 1e6 / max(len(times), 1)}


def peer_b2(stack, peer, count, process_counts):
    """Seeded before the peer starts, `VACUUM; CHECKPOINT`; for each number of processes two rounds (the second
    counts); the best is reported, with the others beside it."""
    peer.register("p2-", count, state="NULL")
    peer.sql("VACUUM")
    peer.sql("CHECKPOINT")
    runs, k = [], 0
    for processes in process_counts:
        peer.start(processes)
        peer_b2_round(stack, peer, k + 1, count)
        second = peer_b2_round(stack, peer, k + 2, count)
        peer.stop()
        second["processes"] = processes
        runs.append(second)
        k += 2
    best = dict(max(runs, key=lambda r: r["pushes_per_second"]))
    best["runs"] = runs
    return best


def peer_b5(stack, peer, clients, seconds, rows):
    script = (f"\\set id random(1, {rows})\n"
              "UPDATE activity_registration SET content_state = jsonb_build_object('n', random()) "
              f"WHERE secret_hash = '{BENCH_SECRET_HASH}' AND session_id = 'p1-' || :id;\n")
    with_peer = pgbench(stack, clients, seconds, script, database="peer")
    peer.sql("ALTER TABLE activity_registration DISABLE TRIGGER USER")
    try:
        bare = pgbench(stack, clients, seconds, script, database="peer")
    finally:
        peer.sql("ALTER TABLE activity_registration ENABLE TRIGGER USER")
    return {"tps_with_triggers_and_relay": with_peer, "tps_bare": bare, "ratio": with_peer / bare}
