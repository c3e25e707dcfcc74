#!/usr/bin/env python3
"""LiveRelay benchmarks (issue 4): one run, one machine, h2o as an independent HTTP/2 + TLS endpoint.

Starts its own PostgreSQL cluster (default durable commits), h2o (answers APNs' 200, FCM's 200 body and an OAuth
token, and logs the microsecond each request arrives), and the release `liverelay serve`; measures B1, B2, B2m (half
Android), B3, B5 and B6, prints percentiles and ratios to the h2load ceiling of the same run, and writes results.json
and PNG plots. Run it through Benchmarks/run.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import b1_path
from bench_channels import bench_b9, summarize as summarize_b9
from bench_delivery import bench_b1, bench_b2, bench_b2m, bench_b5, seed_b2, warm_up
from bench_foreground import bench_b10, summarize as summarize_b10
from bench_peer import Peer, peer_b1, peer_b2, peer_b5
from bench_report import peer_summary, plots, print_statement_profile
from bench_stack import ROOT, Stack, free_port, h2load_ceiling, pct, rss_kb, start_perf, stop_perf
from bench_streams import bench_b3
from bench_webhooks import HookReceiver, bench_b8, register_endpoint
from bench_writer_floor import bench_writer_floor, summarize as summarize_floor


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
            results["B8"] = bench_b8(stack, hooks, args.b8_events)
        if "B9" in only:
            if stack.relay is None:
                stack.start_relay()
            results["B9"] = bench_b9(stack, args.b1_rate, args.b1_seconds, args.b9_bulk)
        if "B10" in only:
            if stack.relay is None:
                stack.start_relay()
            results["B10"] = bench_b10(stack, rate=args.b1_rate,
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
