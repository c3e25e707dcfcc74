"""The load and measuring tools the scenarios drive beside the stack: h2load for the endpoint's ceiling, pgbench for
concurrent writers, perf on the relay."""
import os
import signal
import subprocess


def h2load_ceiling(stack, requests):
    payload = os.path.join(stack.work, "payload.json")
    with open(payload, "w") as f:
        f.write('{"aps":{"content-state":{"n":1},"event":"update","timestamp":1795246286}}')
    out = subprocess.run(["h2load", "-n", str(requests), "-c", "1", "-m", "500", "-t", "1", "-d", payload,
                          "-H", "apns-push-type: liveactivity", f"https://127.0.0.1:{stack.h2o_port}/3/device/ceiling"],
                         capture_output=True, text=True).stdout
    rps = float(out.split("finished in")[1].split(",")[1].split("req/s")[0])
    return rps, out


def pgbench(stack, clients, seconds, script, database="bench"):
    path = os.path.join(stack.work, "b5.sql")
    with open(path, "w") as f:
        f.write(script)
    out = subprocess.run([f"{stack.bindir}/pgbench", "-n", "-c", str(clients), "-j", "2", "-T", str(seconds),
                          "-f", path, "-h", "127.0.0.1", "-p", str(stack.pg_port), "-U", "postgres", database],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("tps ="):
            return float(line.split()[2])
    raise SystemExit("pgbench failed:\n" + out)


def start_perf(stack, out, scenario, frequency=int(os.environ.get("BENCH_PERF_HZ", "999")), any_name=False):
    """`perf record` on the relay while a scenario runs, when BENCH_PERF names it (or, `any_name`, is set at all)."""
    wanted = os.environ.get("BENCH_PERF")
    if not wanted or (wanted != scenario and not any_name):
        return None
    return subprocess.Popen(["perf", "record", "-F", str(frequency), "-g", "-p", str(stack.relay.pid), "-o",
                             os.path.join(out, f"{scenario.lower()}-perf.data")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_perf(perf):
    if perf:
        perf.send_signal(signal.SIGINT)
        perf.wait()
