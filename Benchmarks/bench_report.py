"""What a run prints beside its results: plots, the statement profile and the peer's figures."""
import os

from bench_stack import pct


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
