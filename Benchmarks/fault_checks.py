"""What every fault scenario checks of what arrived: final states lost, per-activity order, duplicate pushes and
what caused them, pick-up latencies."""


def check_delivery(suite, database, pushes):
    """Compares what arrived with the database: final states lost, order violations, duplicate copies."""
    final = dict(suite.query(database, "SELECT activity_token, (content_state->>'n')::int FROM activity_registration"))
    by_token = {}
    for sequence, token, n, received in sorted(pushes):
        by_token.setdefault(token, []).append(n)
    lost = [t for t, n in final.items() if n != 0 and (by_token.get(t) or [None])[-1] != n]
    out_of_order = [t for t, states in by_token.items() if states != sorted(states)]
    examples = [{"token": t[-8:], "states": by_token[t]} for t in out_of_order[:3]]
    copies = {}
    for _, token, n, _ in pushes:
        copies[(token, n)] = copies.get((token, n), 0) + 1
    duplicates = sum(c - 1 for c in copies.values() if c > 1)
    duplicated = [key for key, count in copies.items() if count > 1]
    causes = duplicate_causes(suite, database, duplicated) if duplicated else {}
    return {"activities_written": sum(1 for n in final.values() if n != 0), "final_states_lost": len(lost),
            "order_violations": len(out_of_order), "order_violation_examples": examples, "duplicate_pushes": duplicates,
            "duplicate_causes": causes, "pushes": len(pushes)}


def duplicate_causes(suite, database, keys):
    """Says which mechanism sent each duplicated state twice, from the simulator's apns-ids and the delivery log:
    - `retried after no answer`: one outbox row's push was accepted but its answer never reached the relay (deadline
      or dropped connection), so it was retried: the log has a `retrying` row with that apns-id;
    - `batch rolled back after sending`: the same apns-id with no outcome logged before the resend: the batch that
      sent it ended without committing;
    - `sent from two outbox rows`: different apns-ids carried one state: two batches both found it not yet sent."""
    causes = {}
    for key in keys:
        ids = suite.apns_ids.get(key, [])
        if len(set(ids)) > 1:
            cause = "sent from two outbox rows"
        else:
            rows = suite.query(database, "SELECT status, error FROM delivery_log WHERE apns_id = %s::uuid "
                               "AND status = 'retrying' ORDER BY id LIMIT 1", (ids[0],)) if ids else []
            cause = (f"retried after no answer ({rows[0][1].split(';')[0][:80]})" if rows
                     else "batch rolled back after sending")
        causes[cause] = causes.get(cause, 0) + 1
    return causes


def nothing_lost(result, drained):
    """The verdict every scenario shares: the relay drained, every final state arrived, per-activity order held."""
    return drained is not None and result["final_states_lost"] == 0 and result["order_violations"] == 0


def pickup_latencies(writers, pushes):
    """Commit → accepted by the simulator, for every state that arrived (first copy)."""
    committed = {}
    for writer in writers:
        committed.update(writer.committed)
    first = {}
    for _, _, n, received in pushes:
        if n in committed and n not in first:
            first[n] = received
    return [(first[n] - committed[n]) * 1000 for n in first]


def collect(suite, database, timeout):
    """Waits for the relay to drain, then returns how long that took (None on timeout), the pushes that arrived,
    and check_delivery's verdict on them. An outbox row is deleted only after the simulator has accepted (and
    recorded) its push, so once the outbox is empty every push is in the simulator's record."""
    drained = suite.wait_drained(database, timeout)
    pushes = suite.new_pushes()
    return drained, pushes, check_delivery(suite, database, pushes)
