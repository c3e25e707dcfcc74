"""The simulators' command lines as the README writes them: every fault option it documents is accepted and shows in
the simulator's `GET /sim/faults`, and a setting out of range is refused, from a flag or from `POST /sim/faults`."""
import json
import os
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from devstack import binary, free_port


def run_simulator(command, options, folder):
    """Starts `liverelay <command>` on a free port with `options`, its files in `folder`; returns its process, base URL
    and TLS context."""
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


def faults_of(command, options, folder):
    process, base, tls = run_simulator(command, options, folder)
    try:
        with urllib.request.urlopen(base + "/sim/faults", context=tls, timeout=10) as answer:
            return json.load(answer)
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_apns_simulator_takes_the_fault_options_the_readme_documents(tmp_path):
    faults = faults_of("apns-sim", ["--fail-token", "dead01=Unregistered", "--sandbox-token", "sandbox01",
                                    "--rate-503", "0.2", "--rate-429", "0.05", "--retry-after", "1",
                                    "--reset-rate", "0.01", "--goaway-rate", "0.01"], tmp_path)
    assert faults["tokenErrors"] == {"dead01": "Unregistered"}
    assert faults["sandboxTokens"] == ["sandbox01"]
    assert (faults["rate503"], faults["rate429"], faults["retryAfterSeconds"]) == (0.2, 0.05, 1)
    assert (faults["resetRate"], faults["goAwayRate"]) == (0.01, 0.01)


def test_fcm_simulator_takes_the_fault_options_the_readme_documents(tmp_path):
    faults = faults_of("fcm-sim", ["--fail-token", "dead02=UNREGISTERED", "--rate-503", "0.2", "--rate-429", "0.05",
                                   "--retry-after", "2", "--reset-rate", "0.01", "--access-token-lifetime", "600"],
                       tmp_path)
    assert faults["tokenErrors"] == {"dead02": "UNREGISTERED"}
    assert (faults["rate503"], faults["rate429"], faults["retryAfterSeconds"]) == (0.2, 0.05, 2)
    assert (faults["resetRate"], faults["accessTokenLifetimeSeconds"]) == (0.01, 600)


def test_the_spelling_without_a_dash_still_works(tmp_path):
    faults = faults_of("apns-sim", ["--rate503", "0.3", "--rate429", "0.1"], tmp_path)
    assert (faults["rate503"], faults["rate429"]) == (0.3, 0.1)


def test_fault_options_out_of_range_are_refused_together_with_the_simulators_usage():
    refused = subprocess.run([binary(), "fcm-sim", "--fail-token", "x", "--rate-503", "20", "--rate-429=-1",
                              "--access-token-lifetime", "0", "--port", "70000"],
                             capture_output=True, text=True, timeout=30)
    assert refused.returncode == 64, refused.stderr
    for sentence in ("--fail-token takes TOKEN=VALUE, got x",
                     "--rate-503 is a share of requests from 0 to 1 (0.2 is 20%), not 20.0",
                     "--rate-429 is a share of requests from 0 to 1 (0.2 is 20%), not -1.0",
                     "--access-token-lifetime must be 1 or more, not 0",
                     "--port must be from 0 (any free port) to 65535, not 70000",
                     "Usage: liverelay fcm-sim"):
        assert sentence in refused.stderr, refused.stderr
    both = subprocess.run([binary(), "apns-sim", "--rate-503", "0.7", "--rate-429", "0.5"],
                          capture_output=True, text=True, timeout=30)
    assert both.returncode == 64
    assert "--rate-503 and --rate-429 together are more than every request (1.2)" in both.stderr, both.stderr


@pytest.mark.parametrize("command", ["apns-sim", "fcm-sim"])
def test_sim_faults_refuses_a_share_out_of_range_and_keeps_the_faults_in_force(command, tmp_path):
    process, base, tls = run_simulator(command, ["--rate-503", "0.1"], tmp_path)
    try:
        body = b'{"rate503": 20, "delayMilliseconds": -5}'
        request = urllib.request.Request(base + "/sim/faults", method="POST", data=body,
                                         headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, context=tls, timeout=10)
        assert refused.value.code == 400
        message = json.load(refused.value)["error"]["message"]
        assert message == ("rate503 is a share of requests from 0 to 1 (0.2 is 20%), not 20.0; "
                           "delayMilliseconds must be 0 or more, not -5")
        with urllib.request.urlopen(base + "/sim/faults", context=tls, timeout=10) as answer:
            assert json.load(answer)["rate503"] == 0.1
    finally:
        process.terminate()
        process.wait(timeout=10)
