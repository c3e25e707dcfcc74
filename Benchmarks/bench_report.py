"""What a run prints and keeps: a line per scenario with the peer's figures beside LiveRelay's, results.json without
the raw samples, the plots, and (BENCH_PGSS=1) the statement profile."""
import json
import os

import b1_path
from bench_channels import summarize as summarize_b9
from bench_foreground import summarize as summarize_b10
from bench_stack import pct
from bench_writer_floor import summarize as summarize_floor


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


def upkeep_text(housekeeping):
    """What `Housekeeping` saw beside a scenario, for its line ("" when it was not sampled)."""
    if housekeeping is None:
        return ""
    return "; upkeep meanwhile (share of 100 ms samples): " + (
        ", ".join(f"{what} {share:.0%}" for what, share in housekeeping.items()) or "none")


def connect_text(b3):
    """B3's and B3c's connecting: how long the streams took and the CPU meanwhile ("" in results from before)."""
    if "connect_seconds" not in b3:
        return ""
    cpu = b3["connect_cpu_seconds"]
    return (f" in {b3['connect_seconds']:.1f} s, CPU relay {cpu['relay']:.2f} s / postgres {cpu['postgres']:.2f} s")


def wire_lines(name, results, summary, slim):
    """A scenario's split on the wire (BENCH_PATH=1), when it was taken."""
    path = results[name].get("path")
    if path:
        summary[f"{name} path"] = b1_path.summary(path)
        slim[name]["path"] = {k: {p: pct(v, p) for p in (50, 90, 99)} for k, v in path.items()}


def summarize(results, ceiling, webhooks):
    """One line per scenario (the figures printed at the end of a run), and the results without their raw samples
    (percentiles instead), as results.json keeps them."""
    ceiling_latency_ms = 1000 / ceiling
    summary = {"ceiling": f"h2load: {ceiling:,.0f} requests/s (one connection, 500 streams) = "
                          f"{ceiling_latency_ms:.4f} ms per request"}
    slim = json.loads(json.dumps({k: v for k, v in results.items()}))
    if "B1" in results:
        lat = results["B1"]["latencies_ms"]
        w, wb = results["B1"]["write_ms"], results["B1"]["write_ms_triggers_disabled"]
        summary["B1"] = (f"{results['B1']['received']}/{results['B1']['writes']} received; "
                         f"commit → request p50 {pct(lat, 50):.3f} ms, p90 {pct(lat, 90):.3f} ms, "
                         f"p99 {pct(lat, 99):.3f} ms, max {max(lat) if lat else float('nan'):.3f} ms "
                         f"(p50 = {pct(lat, 50) / ceiling_latency_ms:.0f}× the ceiling's time per request); "
                         "CPU per write: " + ", ".join(
                             f"{k} {v:.0f} µs" for k, v in results["B1"]["cpu_microseconds_per_write"].items())
                         + f"; writer p50 {pct(w, 50):.3f} ms, {pct(w, 50) / pct(wb, 50):.2f}× the "
                         f"{pct(wb, 50):.3f} ms with the triggers disabled")
        slim["B1"]["latencies_ms"] = {p: pct(lat, p) for p in (50, 90, 99, 99.9)}
        wire_lines("B1", results, summary, slim)
        for key in ("write_ms", "write_ms_triggers_disabled"):
            slim["B1"][key] = {p: pct(results["B1"][key], p) for p in (50, 90, 99)}
    if "B1f" in results:
        summary["B1f"] = summarize_floor(results["B1f"])
    if "B2" in results:
        b2 = results["B2"]
        first = b2["first_round"]
        summary["B2"] = (f"{b2['received']}/{b2['activities']} received in "
                         f"{b2['seconds_after_commit']:.2f} s after commit: {b2['pushes_per_second']:,.0f} pushes/s = "
                         f"{b2['pushes_per_second'] / ceiling:.2f} of the ceiling; "
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
    for key in ("B3", "B3c"):
        if key not in results:
            continue
        b3, l = results[key], results[key]["latencies_ms"]
        what = "one channel's event" if key == "B3c" else "the event"
        summary[key] = (f"{b3['received']}/{b3['clients']} SSE clients received {what} "
                        f"({b3['connected']} connected{connect_text(b3)}); commit → event first {pct(l, 0):.1f} ms, "
                        f"p50 {pct(l, 50):.1f} ms, p99 {pct(l, 99):.1f} ms, "
                        f"max {max(l) if l else float('nan'):.1f} ms; "
                        f"relay RSS {b3['relay_rss_connected_mb']:.0f} MB connected, "
                        f"peak {b3['relay_peak_rss_mb']:.0f} MB"
                        + upkeep_text(b3.get("housekeeping")))
        slim[key]["latencies_ms"] = {p: pct(l, p) for p in (0, 50, 90, 99)}
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
                                     for name, seconds in b8["cpu_seconds"].items())
                         + upkeep_text(b8.get("housekeeping")))
    if "B9" in results:
        summarize_b9(results, summary, slim)
        wire_lines("B9", results, summary, slim)
    if "B10" in results:
        summarize_b10(results, summary, slim)
    peer_summary(results, summary, slim)
    summary["webhooks"] = ("B1/B2/B5 ran with a webhook endpoint registered (--webhooks)" if webhooks else
                           "B1/B2/B5 ran without a webhook endpoint (registered just before B8; --webhooks for both)")
    summary["B6"] = (f"start → ready {results['B6']['start_to_ready_seconds'] * 1000:.0f} ms; "
                     f"idle RSS {results['B6']['idle_rss_mb']:.1f} MB")
    return summary, slim
