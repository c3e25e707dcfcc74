"""The channels scenario of the fault suite (issue 22): broadcast channels written while Apple's Channel Management
API is down and broadcasts are sometimes refused with 503, and the relay is SIGKILLed once. Every channel must be
created once the API is back, and every channel's last state must reach Apple (0 lost), each channel's states in the
order they were written (0 order violations); and the same of the FCM topic message each update also sends."""
import random
import threading
import time

from fault_suite import Relay


def scenario_channels(suite, quick):
    channels, rate, seconds = (20, 50, 8) if quick else (100, 200, 30)
    database = "channels"
    suite.create_database(database, 0)
    suite.set_faults(channelManagementRate503=1.0, rate503=0.1, retryAfterSeconds=0)
    relay = Relay(suite, database)
    suite.query(database, "INSERT INTO broadcast_channel (name, bundle_id, content_state) "
                          "SELECT 'c' || i, 'dev.liverelay.faults', '{\"n\": 0}' FROM generate_series(1, %s) i",
                (channels,))
    written = {f"c{i}": 0 for i in range(1, channels + 1)}
    errors = [0]
    stop = threading.Event()

    def write():
        started, i = time.time(), 0
        while not stop.is_set() and time.time() - started < seconds:
            i += 1
            name = random.choice(list(written))
            n = written[name] + 1
            try:
                suite.query(database, "UPDATE broadcast_channel SET content_state = jsonb_build_object('n', %s) "
                                      "WHERE name = %s", (n, name))
                written[name] = n
            except Exception:
                errors[0] += 1
            time.sleep(max(0, started + i / rate - time.time()))

    writer = threading.Thread(target=write)
    writer.start()
    time.sleep(seconds / 3)
    suite.set_faults(rate503=0.1, retryAfterSeconds=0)  # the management API is back
    time.sleep(seconds / 3)
    relay.kill()
    relay = Relay(suite, database, name="relay-after-kill")
    writer.join()
    drained = suite.wait_drained(database, 120)
    suite.set_faults()
    ids = dict(suite.query(database, "SELECT apns_channel_id, name FROM broadcast_channel "
                                     "WHERE apns_channel_id IS NOT NULL"))
    received = {name: [] for name in written}
    for broadcast in suite.sim_call("GET", "/sim/broadcasts")["broadcasts"]:
        name = ids.get(broadcast["channelID"])
        if name:
            received[name].append(broadcast["payload"]["aps"]["content-state"].get("n"))
    # Each update is also an FCM topic message on the channel's topic, sent on a chain of its own.
    topic_names = dict(suite.query(database, "SELECT fcm_topic, name FROM broadcast_channel"))
    topics = {name: [] for name in written}
    for _, token, n, _ in suite.new_pushes():
        name = topic_names.get(token.removeprefix("/topics/"))
        if name in topics:
            topics[name].append(n)
    relay.terminate()
    created = len(ids)
    lost = [name for name, n in written.items() if not received[name] or received[name][-1] != n]
    lost_topics = [name for name, n in written.items() if not topics[name] or topics[name][-1] != n]
    violations = sum(1 for states in received.values() for a, b in zip(states, states[1:]) if b < a)
    topic_violations = sum(1 for states in topics.values() for a, b in zip(states, states[1:]) if b < a)
    duplicates = sum(len(states) - len(set(states)) for states in received.values())
    result = {"channels": channels, "created": created, "writes": sum(written.values()), "write_errors": errors[0],
              "final_states_lost": len(lost), "order_violations": violations, "duplicate_broadcasts": duplicates,
              "broadcasts": sum(len(states) for states in received.values()), "drained_after_s": drained,
              "topic_messages": sum(len(states) for states in topics.values()),
              "topic_final_states_lost": len(lost_topics), "topic_order_violations": topic_violations}
    result["pass"] = (drained is not None and created == channels and not lost and violations == 0
                      and not lost_topics and topic_violations == 0)
    result["summary"] = (f"{channels} channels, {result['writes']} updates at {rate}/s; channel API down for the "
                         f"first third, 10% broadcasts refused 503, one SIGKILL: {created}/{channels} created, "
                         f"{len(lost)} final states lost, {violations} order violations, "
                         f"{result['broadcasts']} broadcasts ({duplicates} repeats); FCM topics: "
                         f"{len(lost_topics)} final states lost, {topic_violations} order violations of "
                         f"{result['topic_messages']} messages")
    return result
