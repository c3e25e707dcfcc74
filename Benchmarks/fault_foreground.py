"""The foreground scenario of the fault suite (issue 23): one relay holds the apps' streams (device tokens), a
second relay shares the database. While the streams are open every update reaches APNs at priority 5, whichever
relay sends it. The stream-holding relay is SIGKILLed: within 30 s the other relay's pushes are back at priority 10
(its presence expired), and every activity's last state still reaches APNs."""
import time

from bench_foreground import open_streams
from fault_suite import Relay


def scenario_foreground(suite, quick):
    activities = 20 if quick else 100
    database = "foreground"
    suite.create_database(database, activities)
    suite.query(database, "UPDATE activity_registration SET device_uuid = md5(session_id)::uuid")
    devices = dict(suite.query(database, "SELECT activity_token, device_uuid::text FROM activity_registration"))
    holder = Relay(suite, database, name="relay-holding-streams")
    sender = Relay(suite, database, name="relay-sending")
    streams = open_streams(holder.port, list(devices.values()))
    # Only pushes from here on (the simulator keeps every scenario's; asking for all of them is a large answer).
    suite.new_pushes()
    seen = [suite.sim_seen]
    n = [0]

    def round_of_updates(timeout=30):
        """One update of every activity; returns the priorities APNs received them at."""
        n[0] += 1
        suite.query(database, "UPDATE activity_registration SET content_state = jsonb_build_object('n', %s)",
                    (n[0],))
        priorities, deadline = {}, time.time() + timeout
        while len(priorities) < activities and time.time() < deadline:
            for push in suite.sim_call("GET", f"/sim/pushes?since={seen[0]}")["pushes"]:
                seen[0] = max(seen[0], push["sequence"])
                if push["payload"].get("aps", {}).get("content-state", {}).get("n") == n[0]:
                    priorities[push["token"]] = push.get("priority")
            time.sleep(0.05)
        return priorities

    before = [round_of_updates() for _ in range(3)]
    lowered = sum(1 for r in before for p in r.values() if p == "5")
    holder.kill()
    killed = time.time()
    back_after, after = None, []
    while time.time() - killed < 45:
        priorities = round_of_updates()
        after.append(priorities)
        if len(priorities) == activities and all(p == "10" for p in priorities.values()):
            back_after = time.time() - killed
            break
        time.sleep(1)
    for stream in streams:
        stream.close()
    final = round_of_updates()
    sender.terminate()
    result = {"activities": activities, "pushes_before_kill": sum(len(r) for r in before),
              "priority5_before_kill": lowered, "back_to_10_after_s": back_after,
              "rounds_after_kill": len(after), "last_round_received": len(final)}
    result["pass"] = (lowered == activities * 3 and back_after is not None and back_after <= 30
                      and len(final) == activities)
    result["summary"] = (f"{activities} apps open on one of two relays: {lowered}/{activities * 3} updates at "
                         f"priority 5; that relay SIGKILLed, the other's pushes back at 10 after "
                         f"{'%.1f s' % back_after if back_after is not None else 'never (45 s)'}; "
                         f"last round {len(final)}/{activities} delivered")
    return result
