"""`liverelay dev` ended as a user ends it: Ctrl-C stops the relay, both simulators and the PostgreSQL cluster, and
nothing in its output says something went wrong."""
import os
import re
import signal
import time

from devstack import DevStack


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


def running(pid):
    """Whether the process is alive: it exists and is not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
