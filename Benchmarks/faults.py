#!/usr/bin/env python3
"""LiveRelay fault suite (issue 4): a real relay, a real PostgreSQL and the APNs and FCM simulators with fault
injection. The SIGKILL and two-relay scenarios write to a 50/50 mix of iOS and Android activities; `android` puts FCM
under the endpoint faults.

Each scenario writes to its own database while something goes wrong, then waits for the relay to drain and checks
what arrived at the simulator against what the database holds: the final state of every activity must have arrived
as the last push for its token, per-activity order must hold, and each scenario's own figure must be within its
bound. Prints a line per scenario and a table; exits 1 when any scenario fails. Run it through Benchmarks/faults.

    Benchmarks/faults [--quick] [--only kill,pg-restart,...] [--binary PATH]
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback

from bench_stack import ROOT
from fault_channels import scenario_channels
from fault_delivery import (scenario_android, scenario_endpoint, scenario_kill, scenario_pg_restart,
                            scenario_terminate, scenario_two_relays)
from fault_foreground import scenario_foreground
from fault_shutdown import scenario_idle_transaction, scenario_sigterm
from fault_suite import Suite
from fault_webhooks import scenario_webhook_down

SCENARIOS = {
    "kill": scenario_kill,
    "pg-restart": scenario_pg_restart,
    "terminate": scenario_terminate,
    "endpoint": scenario_endpoint,
    "android": scenario_android,
    "two-relays": scenario_two_relays,
    "sigterm": scenario_sigterm,
    "idle-transaction": scenario_idle_transaction,
    "webhook-down": scenario_webhook_down,
    "channels": scenario_channels,
    "foreground": scenario_foreground,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build-release/release/liverelay"))
    parser.add_argument("--quick", action="store_true", help="short runs of every scenario (the ./scripts/test subset)")
    parser.add_argument("--only", default=",".join(SCENARIOS),
                        help="comma-separated scenarios: " + ", ".join(SCENARIOS))
    parser.add_argument("--out", default=os.path.join(ROOT, "Benchmarks", "results"))
    args = parser.parse_args()
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(SCENARIOS)}")
    if not os.access(args.binary, os.X_OK):
        parser.error(f"{args.binary} is not an executable; build it first (Benchmarks/faults does)")
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="liverelay-faults-", dir="/tmp")
    os.chmod(work, 0o755)
    suite = Suite(work, args.binary)
    results = {"mode": "quick" if args.quick else "full",
               "machine": {"cpus": os.cpu_count(), "uname": " ".join(os.uname())}}
    failed = []
    try:
        suite.start_postgres()
        suite.start_simulator()
        suite.start_fcm_simulator()
        for name in chosen:
            started = time.time()
            # Each scenario judges only what it caused: what the simulators accepted before it (the channels
            # scenario's FCM topic messages, which it does not read) is marked seen.
            suite.new_pushes()
            try:
                result = SCENARIOS[name](suite, args.quick)
            except Exception as error:  # a scenario that could not run is a failure, with the reason
                where = " < ".join(f"{frame.name}:{frame.lineno}"
                                   for frame in reversed(traceback.extract_tb(error.__traceback__)))
                result = {"pass": False, "summary": f"could not run: {error!r} at {where}"}
            result["seconds"] = time.time() - started
            results[name] = result
            mark = "pass" if result["pass"] else "FAIL"
            print(f"{mark}  {name:17} {result['summary']}  [{result['seconds']:.0f} s]", flush=True)
            if not result["pass"]:
                failed.append(name)
    finally:
        for simulator in (suite.sim, suite.fcm):
            if simulator:
                simulator.terminate()
        if hasattr(suite, "data"):
            suite.stop_postgres()
    name = "faults-quick.json" if args.quick else "faults.json"
    with open(os.path.join(args.out, name), "w") as f:
        json.dump(results, f, indent=2, default=str)
    if failed:
        print(f"failed: {', '.join(failed)} (logs kept in {work})")
        return 1
    if not os.environ.get("FAULTS_KEEP"):
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
