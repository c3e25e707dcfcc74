"""The simulators' command lines as the README writes them: every fault option it documents is accepted and shows in
the simulator's `GET /sim/faults`."""
import json
import os
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request

import pytest

from devstack import binary, free_port


def run_simulator(command, options):
    """Starts `liverelay <command>` on a free port with `options`; returns its process, base URL and TLS context."""
    folder = tempfile.mkdtemp(prefix="liverelay-sim-")
    port = free_port()
    ca = os.path.join(folder, "ca.pem")
    key = os.path.join(folder, "key.p8" if command == "apns-sim" else "key.pem")
    extra = ["--service-account-out", os.path.join(folder, "sa.json")] if command == "fcm-sim" else []
    process = subprocess.Popen([binary(), command, "--port", str(port), "--ca-out", ca, "--key-file", key, "--quiet"]
                               + extra + options, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        if process.poll() is not None:
            pytest.fail(f"liverelay {command} exited: {process.stdout.read()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    else:
        process.kill()
        pytest.fail(f"liverelay {command} did not listen on {port}")
    return process, f"https://127.0.0.1:{port}", ssl.create_default_context(cafile=ca)


def faults_of(command, options):
    process, base, tls = run_simulator(command, options)
    try:
        with urllib.request.urlopen(base + "/sim/faults", context=tls, timeout=10) as answer:
            return json.load(answer)
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_apns_simulator_takes_the_fault_options_the_readme_documents():
    faults = faults_of("apns-sim", ["--fail-token", "dead01=Unregistered", "--sandbox-token", "sandbox01",
                                    "--rate-503", "0.2", "--rate-429", "0.05", "--retry-after", "1",
                                    "--reset-rate", "0.01", "--goaway-rate", "0.01"])
    assert faults["tokenErrors"] == {"dead01": "Unregistered"}
    assert faults["sandboxTokens"] == ["sandbox01"]
    assert (faults["rate503"], faults["rate429"], faults["retryAfterSeconds"]) == (0.2, 0.05, 1)
    assert (faults["resetRate"], faults["goAwayRate"]) == (0.01, 0.01)


def test_fcm_simulator_takes_the_fault_options_the_readme_documents():
    faults = faults_of("fcm-sim", ["--fail-token", "dead02=UNREGISTERED", "--rate-503", "0.2", "--rate-429", "0.05",
                                   "--retry-after", "2", "--reset-rate", "0.01", "--access-token-lifetime", "600"])
    assert faults["tokenErrors"] == {"dead02": "UNREGISTERED"}
    assert (faults["rate503"], faults["rate429"], faults["retryAfterSeconds"]) == (0.2, 0.05, 2)
    assert (faults["resetRate"], faults["accessTokenLifetimeSeconds"]) == (0.01, 600)


def test_the_spelling_without_a_dash_still_works():
    faults = faults_of("apns-sim", ["--rate503", "0.3", "--rate429", "0.1"])
    assert (faults["rate503"], faults["rate429"]) == (0.3, 0.1)
