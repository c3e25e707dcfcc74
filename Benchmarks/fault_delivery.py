"""The delivery scenarios of the fault suite: the relay SIGKILLed, PostgreSQL restarted, the relay's sessions
terminated, the push services failing (APNs, then FCM), and two relays sharing one database."""
import time

from bench_stack import as_postgres, pct
from fault_checks import collect, nothing_lost, pickup_latencies
from fault_suite import BATCH_SIZE, Relay, Writer


def scenario_kill(suite, quick):
    """SIGKILL the relay every 10 s for 60 s during 500 updates/s (a supervisor restarts it at once)."""
    rate, seconds, every = (200, 12, 4) if quick else (500, 60, 10)
    tokens = suite.create_database("kill", 2000, android_share=0.5)
    relay = Relay(suite, "kill")
    writer = Writer(suite, "kill", list(tokens), rate, seconds)
    writer.start()
    kills = 0
    started = time.time()
    while time.time() - started < seconds - 0.5:
        time.sleep(min(every, max(0, seconds - (time.time() - started))))
        if not writer.is_alive():
            break
        relay.kill()
        kills += 1
        relay = Relay(suite, "kill", name=f"relay-{kills}")
    writer.join()
    drained, pushes, result = collect(suite, "kill", 120)
    relay.terminate()
    result.update(kills=kills, writes=len(writer.committed), drained_after_s=drained,
                  duplicates_per_kill=result["duplicate_pushes"] / max(kills, 1))
    result["pass"] = (nothing_lost(result, drained)
                      and result["duplicate_pushes"] <= kills * BATCH_SIZE)
    result["summary"] = (f"{kills} SIGKILLs during {len(writer.committed)} updates at {rate}/s: "
                         f"{result['final_states_lost']} final states lost, "
                         f"{result['duplicate_pushes']} duplicate pushes "
                         f"({result['duplicates_per_kill']:.1f} per kill; bound {BATCH_SIZE}), "
                         f"{result['order_violations']} order violations")
    return result


def scenario_pg_restart(suite, quick):
    """pg_ctl restart -m immediate under load: the same relay process recovers within 10 s; nothing lost."""
    rate, seconds, at = (100, 8, 3) if quick else (200, 20, 6)
    tokens = suite.create_database("pgrestart", 1000)
    relay = Relay(suite, "pgrestart")
    writer = Writer(suite, "pgrestart", list(tokens), rate, None)
    writer.start()
    time.sleep(at)
    as_postgres([f"{suite.bindir}/pg_ctl", "-D", suite.data, "-m", "immediate", "-w", "restart",
                 "-o", f"-p {suite.pg_port}", "-l", f"{suite.data}/log"])
    back = time.time()
    # Writes go on after the restart however long it took (on a loaded machine, longer than the whole quick run).
    time.sleep(max(seconds - at, 5))
    writer.stop_now = True
    writer.join()
    drained, pushes, result = collect(suite, "pgrestart", 60)
    same_process = relay.process.poll() is None
    # Recovery: from PostgreSQL accepting connections again to the first push of a write committed after that.
    after = sorted(received for _, _, n, received in pushes if n in writer.committed and writer.committed[n] >= back)
    recovery = (after[0] - back) if after else None
    first_commit_after = min((t for t in writer.committed.values() if t >= back), default=None)
    relay.terminate()
    result.update(writes=len(writer.committed), write_errors=writer.errors, relay_kept_running=same_process,
                  recovery_s=recovery,
                  first_write_after_restart_s=(first_commit_after - back) if first_commit_after else None,
                  drained_after_s=drained)
    result["pass"] = nothing_lost(result, drained) and same_process and recovery is not None and recovery <= 10
    result["summary"] = (f"restart at {at} s; the same relay delivered a post-restart write "
                         f"{recovery if recovery is not None else float('nan'):.2f} s after PostgreSQL was back "
                         "(bound 10 s); "
                         f"{result['final_states_lost']} final states lost of {result['activities_written']}; "
                         f"{writer.errors} writes refused while it was down")
    return result


def scenario_terminate(suite, quick):
    """pg_terminate_backend of every relay connection every second for 30 s: nothing lost, pickup p99 ≤ 2 s."""
    # Quick runs (debug build, maybe a loaded machine) write 40/s: each termination rolls back the batch in flight,
    # and at 100/s the debug simulator could not finish a batch between two terminations under load, so every batch
    # was sent again and again (measured: pickup p99 2-8 s with two busy loops; 0 lost).
    rate, seconds = (40, 6) if quick else (200, 30)
    tokens = suite.create_database("terminate", 1000)
    relay = Relay(suite, "terminate")
    writer = Writer(suite, "terminate", list(tokens), rate, seconds)
    writer.start()
    terminated = 0
    while writer.is_alive():
        time.sleep(1)
        rows = suite.query("terminate", "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) "
                                        "FROM pg_stat_activity "
                                        "WHERE application_name LIKE 'liverelay%%' AND pid <> pg_backend_pid()")
        terminated += rows[0][0]
    writer.join()
    drained, pushes, result = collect(suite, "terminate", 60)
    relay.terminate()
    latencies = pickup_latencies([writer], pushes)
    result.update(writes=len(writer.committed), connections_terminated=terminated, drained_after_s=drained,
                  pickup_ms={p: pct(latencies, p) for p in (50, 90, 99)},
                  relay_kept_running=relay.process.returncode == 0)
    result["pass"] = nothing_lost(result, drained) and pct(latencies, 99) <= 2000
    result["summary"] = (f"{terminated} relay connections terminated over {seconds} s "
                         f"({len(writer.committed)} updates): "
                         f"pickup p50 {pct(latencies, 50):.0f} ms, p99 {pct(latencies, 99):.0f} ms (bound 2000 ms); "
                         f"{result['final_states_lost']} final states lost")
    return result


def retry_gaps(suite, database):
    """Every retry's wait against the retry policy's lower bound (half the exponential ceiling, or retry-after)."""
    rows = suite.query(database, """
        SELECT outbox_id, attempt, extract(epoch FROM created_at)::float8, provider_status
        FROM delivery_log WHERE outbox_id IS NOT NULL AND transport IS NOT NULL ORDER BY outbox_id, id""")
    violations, checked, gaps, ratios = 0, 0, [], []
    for (oid, attempt, at, status), (oid2, attempt2, at2, _) in zip(rows, rows[1:]):
        if oid != oid2 or attempt2 != attempt + 1:
            continue
        ceiling = min(60.0, 0.25 * 2 ** max(0, attempt - 1))
        bound = ceiling / 2
        if status in (429, 503):
            bound = max(bound, 1.0)  # the simulators send retry-after: 1
        gap = at2 - at
        checked += 1
        gaps.append(gap)
        ratios.append(gap / bound)
        if gap < bound - 0.05:
            violations += 1
    return checked, violations, gaps, ratios


def endpoint_faults(suite, quick, database, android, faults):
    """Writes to one relay while a simulator answers with `faults`; returns the result with the retries checked
    against the backoff policy and the simulator's answers (the APNs simulator's, or with `android` the FCM one's)."""
    rate, seconds = (100, 5) if quick else (200, 20)
    tokens = suite.create_database(database, 1000, android_share=1.0 if android else 0.0)
    relay = Relay(suite, database)
    set_faults = suite.set_fcm_faults if android else suite.set_faults
    before = suite.responses(fcm=android)
    set_faults(**faults)
    writer = Writer(suite, database, list(tokens), rate, seconds)
    writer.start()
    writer.join()
    drained, pushes, result = collect(suite, database, 120)
    set_faults()
    relay.terminate()
    after = suite.responses(fcm=android)
    answered = {k: after.get(k, 0) - before.get(k, 0) for k in after if not k.startswith("token-")}
    requests = sum(answered.values())
    checked, violations, gaps, ratios = retry_gaps(suite, database)
    result.update(writes=len(writer.committed), responses=answered, requests=requests,
                  requests_per_accepted_push=requests / max(len(pushes), 1),
                  retries_checked=checked, retries_sooner_than_policy=violations, drained_after_s=drained,
                  retry_gap_s={"min": min(gaps, default=0), "p50": pct(gaps, 50), "max": max(gaps, default=0)},
                  min_gap_over_bound=min(ratios, default=0))
    result["pass"] = (nothing_lost(result, drained)
                      and violations == 0 and checked > 0 and result["requests_per_accepted_push"] < 2)
    what, one, many = ("FCM requests", "message", "messages") if android else ("requests", "push", "pushes")
    kinds = [("503", "503"), ("429", "429"), ("reset", "resets")] + ([] if android else [("goaway", "GOAWAY")])
    counts = ", ".join(f"{label} {answered.get(kind, 0)}" for kind, label in kinds)
    result["summary"] = (f"{requests} {what} for {result['pushes']} accepted {many} "
                         f"({result['requests_per_accepted_push']:.2f} per {one}; {counts}); "
                         f"{checked} retries all within backoff bounds: {violations == 0} (shortest wait "
                         f"{min(ratios, default=0):.2f}× its lower bound); {result['final_states_lost']} final "
                         f"states lost, {result['order_violations']} order violations")
    return result


def scenario_endpoint(suite, quick):
    """APNs answers 20% 503 + 5% 429 (retry-after), resets connections and sends GOAWAY."""
    return endpoint_faults(suite, quick, "endpoint", False,
                           dict(rate503=0.2, rate429=0.05, retryAfterSeconds=1, resetRate=0.01, goAwayRate=0.01))


def scenario_android(suite, quick):
    """Android activities while FCM answers 20% 503 + 5% 429 (Retry-After) and resets connections."""
    return endpoint_faults(suite, quick, "android", True,
                           dict(rate503=0.2, rate429=0.05, retryAfterSeconds=1, resetRate=0.01))


def scenario_two_relays(suite, quick):
    """Two relays on one database, 50,000 updates: no duplicates, per-activity order, work shared."""
    total = 5000 if quick else 50000
    tokens = suite.create_database("tworelays", 5000, android_share=0.5)
    relays = [Relay(suite, "tworelays", name="relay-a"), Relay(suite, "tworelays", name="relay-b")]
    writers = [Writer(suite, "tworelays", list(tokens), None, None) for _ in range(3)]
    for w in writers:
        w.start()
    while sum(len(w.committed) for w in writers) < total:
        time.sleep(0.05)
    for w in writers:
        w.stop_now = True
        w.join()
    drained, pushes, result = collect(suite, "tworelays", 180)
    shares = [r.sent_total() for r in relays]
    for r in relays:
        r.terminate()
    writes = sum(len(w.committed) for w in writers)
    result.update(writes=writes, sent_by_relay=shares, drained_after_s=drained)
    smaller = min(shares) / max(sum(shares), 1)
    result["pass"] = (nothing_lost(result, drained)
                      and result["duplicate_pushes"] == 0 and smaller >= 0.1)
    causes = "; ".join(f"{count} {cause}" for cause, count in result["duplicate_causes"].items())
    result["summary"] = (f"{writes} updates: {result['pushes']} pushes, {result['duplicate_pushes']} duplicates"
                         f"{f' ({causes})' if causes else ''}, "
                         f"{result['order_violations']} order violations, "
                         f"{result['final_states_lost']} final states lost; "
                         f"sent by relay A/B: {shares[0]:.0f}/{shares[1]:.0f}")
    return result
