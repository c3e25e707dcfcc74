"""`liverelay dev` ended as a user ends it: Ctrl-C stops the relay, both simulators and the PostgreSQL cluster, and
nothing in its output says something went wrong. Started a second time, it says why it cannot run and leaves the
first one (and the machine) as they were."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from devstack import ROOT, DevStack, binary, free_port


def test_ctrl_c_stops_the_relay_the_simulators_and_the_cluster_cleanly():
    stack = DevStack()
    with open(os.path.join(stack.state, "pg", "postmaster.pid")) as pid_file:
        postmaster = int(pid_file.readline())
    started = time.time()
    stack.process.send_signal(signal.SIGINT)
    code = stack.process.wait(timeout=30)
    took = time.time() - started
    stack.stop()
    assert code == 0, "\n".join(stack.lines[-20:])
    assert took < 10, f"it took {took:.1f} s to stop"
    alarming = [line for line in stack.lines if re.search(r"\b(error|critical|crashed)\b", line, re.I)]
    assert alarming == [], "\n".join(alarming)
    # `pg_ctl stop -w` returns once the server has removed its pid file, a moment before the process is gone.
    deadline = time.time() + 5
    while running(postmaster) and time.time() < deadline:
        time.sleep(0.05)
    assert not running(postmaster), f"PostgreSQL (pid {postmaster}) still runs after liverelay dev stopped"


def test_a_postgresql_killed_under_dev_is_started_again_and_later_writes_are_delivered():
    # It used to leave the relay reconnecting to nothing, forever, with no word of why.
    stack = DevStack()
    try:
        with open(os.path.join(stack.state, "pg", "postmaster.pid")) as pid_file:
            postmaster = int(pid_file.readline())
        os.kill(postmaster, signal.SIGKILL)
        assert stack.wait_for_line(r"liverelay dev: PostgreSQL is back", timeout=60), "\n".join(stack.lines[-20:])
        assert any("liverelay dev: PostgreSQL stopped underneath it" in line for line in stack.lines)
        stack.sql("UPDATE activity_registration SET content_state = content_state || '{\"lastMessage\": \"back\"}'"
                  " WHERE session_id = 'demo-session' AND platform = 'ios'")
        stack.wait_for_push(
            lambda push: push["payload"]["aps"].get("content-state", {}).get("lastMessage") == "back", timeout=30)
    finally:
        stack.stop()
    assert stack.process.returncode == 0, "\n".join(stack.lines[-20:])


def test_a_second_run_on_the_same_folder_broadcasts_on_the_demo_channel_the_first_one_created():
    # The APNs simulator kept its channels in memory: the second run's simulator did not know the channel id the
    # database held, and the printed channel UPDATE failed the channel for good (ChannelNotRegistered). Both run in a
    # folder the `postgres` user cannot enter, as a project under /root is: the second run used to stop there, its
    # check for the database misreading psql's "could not change directory" warning.
    home = tempfile.mkdtemp(prefix="liverelay-home-")
    first = DevStack(cwd=home)
    try:
        (channel_id,) = first.wait_for_row(
            "SELECT apns_channel_id FROM broadcast_channel WHERE name = 'demo-match'", lambda row: row[0],
            message="the demo channel was not created at the APNs simulator")
    finally:
        first.stop(keep_state=True)
    assert first.process.returncode == 0, "\n".join(first.lines[-20:])
    second = DevStack(state=first.state, cwd=home)
    try:
        second.sql("UPDATE broadcast_channel SET content_state = '{\"home\": 1, \"away\": 0, \"minute\": 23}'"
                   " WHERE name = 'demo-match'")
        broadcast = second.wait_for_broadcast(
            lambda b: b["payload"]["aps"].get("content-state", {}).get("minute") == 23)
        assert broadcast["channelID"] == channel_id
        assert second.sql("SELECT status, apns_channel_id FROM broadcast_channel WHERE name = 'demo-match'") == [
            ("active", channel_id)]
    finally:
        second.stop()
        shutil.rmtree(home, ignore_errors=True)
    assert second.process.returncode == 0, "\n".join(second.lines[-20:])


def test_a_demo_channel_that_failed_is_made_anew_by_the_next_run():
    # Folders of releases whose simulator forgot its channels hold a failed demo channel: the printed UPDATE must work.
    first = DevStack()
    try:
        first.sql("UPDATE broadcast_channel SET status = 'failed', error = 'ChannelNotRegistered'"
                  " WHERE name = 'demo-match'")
    finally:
        first.stop(keep_state=True)
    second = DevStack(state=first.state)
    try:
        row = second.wait_for_row(
            "SELECT status, apns_channel_id FROM broadcast_channel WHERE name = 'demo-match'",
            lambda row: row[1] is not None, message="the demo channel was not made anew")
        assert row[0] == "active"
    finally:
        second.stop()


def running(pid):
    """Whether the process is alive: it exists and is not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def second_dev(stack, state, port, **extra):
    env = dict(os.environ, PORT=str(port), LIVERELAY_SQL_DIR=os.path.dirname(stack.binary), LOG_LEVEL="warning")
    for name in ("DATABASE_URL", "LIVERELAY_ADMIN_TOKEN", "APNS_KEY_ID", "FCM_SERVICE_ACCOUNT_FILE"):
        env.pop(name, None)
    env.update(extra)
    return subprocess.run([stack.binary, "dev", "--state-directory", state], env=env, capture_output=True, text=True,
                          timeout=120)


def test_a_second_dev_on_the_same_folder_refuses_and_the_first_keeps_its_database(stack):
    # It used to start, share the first one's PostgreSQL, fail on the port, and stop that PostgreSQL as it exited.
    second = second_dev(stack, stack.state, port=free_port())
    assert second.returncode == 1, second.stdout + second.stderr
    assert f"liverelay dev is already running with {stack.state} (process {stack.process.pid})" in second.stderr, \
        second.stderr
    assert stack.sql("SELECT 1") == [(1,)]
    stack.sql("UPDATE activity_registration SET content_state = content_state || '{\"lastMessage\": \"still here\"}'"
              " WHERE session_id = 'demo-session' AND platform = 'ios'")
    stack.wait_for_push(lambda push: push["payload"]["aps"].get("content-state", {}).get("lastMessage") == "still here")


def test_a_dev_whose_port_is_taken_or_whose_setting_is_wrong_says_so_and_leaves_no_cluster_running(stack):
    # Both are found before the cluster is created: `liverelay dev` used to find a bad setting only once its cluster
    # and simulators ran (and, before that, exited without stopping the cluster).
    cases = [
        (dict(port=stack.port), f"liverelay: cannot listen on 127.0.0.1:{stack.port}: Address already in use"),
        (dict(port=free_port(), LIVERELAY_ADMIN_TOKEN="short"),
         "liverelay: configuration error: LIVERELAY_ADMIN_TOKEN is shorter than 16 characters"),
        (dict(port=free_port(), LIVERELAY_ACTIVITY_MAX_AGE="eight hours"),
         "liverelay: configuration error: LIVERELAY_ACTIVITY_MAX_AGE"),
        # Several bad settings are named together, so that one restart can fix them all.
        (dict(port=free_port(), LIVERELAY_ADMIN_TOKEN="short", LIVERELAY_FOREGROUND_PUSH="sometimes"),
         "liverelay: 2 configuration errors:\n  LIVERELAY_ADMIN_TOKEN is shorter than 16 characters"),
    ]
    for arguments, expected in cases:
        state = tempfile.mkdtemp(prefix="liverelay-e2e-refused-")
        os.chmod(state, 0o755)
        try:
            second = second_dev(stack, state, **arguments)
            assert second.returncode == 1, second.stdout + second.stderr
            assert expected in second.stderr, second.stderr
            assert "bind(descriptor" not in second.stdout + second.stderr
            # No cluster, here or where dev keeps one the postgres user could not reach here (`pg-location` says where).
            assert not {"pg", "pg-location"} & set(os.listdir(state)), os.listdir(state)
        finally:
            shutil.rmtree(state, ignore_errors=True)


def test_the_printed_channel_start_starts_a_live_activity_on_the_demo_iphone(stack):
    start = next(line.strip() for line in stack.lines if line.strip().startswith("SELECT liverelay_start_channel"))
    stack.wait_for_broadcast(lambda broadcast: True, timeout=20)  # the channel exists at Apple
    assert stack.sql(start) == [(1,)]
    push = stack.wait_for_push(lambda push: push["payload"]["aps"].get("event") == "start")
    aps = push["payload"]["aps"]
    channel_id = stack.sql("SELECT apns_channel_id FROM broadcast_channel WHERE name = 'demo-match'")[0][0]
    assert aps["input-push-channel"] == channel_id and aps["attributes-type"] == "MatchAttributes", aps
    assert aps["attributes"] == {"home": "Lions", "away": "Tigers"} and aps["alert"]["title"] == "Kick-off", aps


def test_the_version_is_the_one_the_api_document_describes():
    # An operator checks which release each relay of a rolling upgrade runs: the command says it, as /health does.
    with open(os.path.join(ROOT, "openapi.json")) as document:
        described = json.load(document)["info"]["version"]
    shown = subprocess.run([binary(), "--version"], capture_output=True, text=True, timeout=30)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == described
