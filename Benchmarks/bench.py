#!/usr/bin/env python3
"""LiveRelay benchmarks (issue 4): one run, one machine, h2o as an independent HTTP/2 + TLS endpoint.

Starts its own PostgreSQL cluster (default durable commits), h2o (answers APNs' 200, FCM's 200 body and an OAuth
token, and logs the microsecond each request arrives), and the release `liverelay serve`; measures B1, B1f, B2, B2m
(half Android), B3, B3c, B5, B6, B8, B9 and B10, and B1, B2 and B5 of the naive peer on the same cluster and endpoint;
prints percentiles and ratios (to the h2load ceiling and to the peer) of the same run, and writes results.json and PNG
plots. Run it through Benchmarks/run.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import b1_path
from bench_channels import bench_b9, create_channels
from bench_delivery import bench_b1, bench_b2, bench_b2m, bench_b5, seed_b2, warm_up
from bench_foreground import bench_b10
from bench_peer import Peer, peer_b1, peer_b2, peer_b5
from bench_report import plots, print_statement_profile, summarize
from bench_stack import ROOT, Stack, free_port, pct, rss_kb
from bench_tools import h2load_ceiling, start_perf, stop_perf
from bench_streams import bench_b3
from bench_webhooks import HookReceiver, bench_b8, register_endpoint
from bench_writer_floor import bench_writer_floor


def run_peer(stack, args, only):
    peer = Peer(stack)
    counts = [int(n) for n in args.peer_processes.split(",")]
    out = {}
    try:
        if "B1" in only or "B5" in only:
            runs = []
            for processes in counts:
                peer.start(processes)
                run = peer_b1(stack, peer, args.b1_rate, args.b1_seconds)
                peer.stop()
                run["processes"] = processes
                runs.append(run)
                peer.sql("DELETE FROM activity_registration WHERE session_id LIKE 'p1-%%'")
            best = min(runs, key=lambda r: pct(r["latencies_ms"], 50))
            out["B1"] = dict(best, runs=[{"processes": r["processes"], "p50": pct(r["latencies_ms"], 50),
                                          "p99": pct(r["latencies_ms"], 99)} for r in runs])
            # B5's rows (and B1's tokens) for the writers below.
            peer.register("p1-", args.b1_rate * args.b1_seconds)
        if "B2" in only:
            out["B2"] = peer_b2(stack, peer, args.b2_activities, counts)
        if "B5" in only:
            peer.start(max(counts))
            out["B5"] = peer_b5(stack, peer, 16, args.b5_seconds, args.b1_rate * args.b1_seconds)
    finally:
        peer.stop()
    return out


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
    parser.add_argument("--only", default="B1,B1F,B2,B2M,B3,B3C,B5,B6,B8,B9,B10",
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
            results["B1"] = b1_path.on_the_wire(stack, "B1", lambda: bench_b1(stack, args.b1_rate, args.b1_seconds))
            stop_perf(perf)
        if "B1F" in only:
            results["B1f"] = bench_writer_floor(stack, rate=args.b1_rate)
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
            perf = start_perf(stack, args.out, "B8", 1999)
            results["B8"] = bench_b8(stack, hooks, args.b8_events)
            stop_perf(perf)
        if "B9" in only:
            if stack.relay is None:
                stack.start_relay()
            results["B9"] = b1_path.on_the_wire(
                stack, "B9", lambda: bench_b9(stack, args.b1_rate, args.b1_seconds, args.b9_bulk))
        if "B10" in only:
            if stack.relay is None:
                stack.start_relay()
            results["B10"] = bench_b10(stack, rate=args.b1_rate,
                                       seconds=max(2, args.b1_seconds // 2))
        if "B3" in only:
            stack.stop_relay()
            stack.start_relay()
            results["B3"] = bench_b3(stack, args.b3_clients, args.out)
        if "B3C" in only:
            # The same streams all following one broadcast channel: one event that every one of them is sent.
            stack.stop_relay()
            stack.start_relay()
            create_channels(stack, "b3c-", 1)
            results["B3c"] = bench_b3(stack, args.b3_clients, args.out, channel="b3c-1")
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
    summary, slim = summarize(results, ceiling, args.webhooks)
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
