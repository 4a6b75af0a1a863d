"""CPU time per request and throughput of glimpse-load and h2load for the same JSON-RPC `health`
calls at the same concurrency (2 connections, 64 streams in flight), same run.

Runs each client in turn (A B A B ...) against a running Glimpse server and reads the client's own
user+system CPU time from getrusage(RUSAGE_CHILDREN). Usage:
    python3 cpu_per_request.py PORT GLIMPSE_LOAD_BINARY [requests] [rounds]
"""
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile

port, load_bin = sys.argv[1], sys.argv[2]
requests = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
body = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
json.dump({"jsonrpc": "2.0", "id": 1, "method": "health"}, body)
body.close()
url = f"http://127.0.0.1:{port}/rpc"


def cpu_of(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed: {out.stderr[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out.stdout


h2load = ["h2load", "-n", str(requests), "-c", "2", "-m", "32", "-H", "content-type: application/json", "-d", body.name, url]
report = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
report.close()
ours = [load_bin, "--port", port, "--body", body.name, "-c", "2", "--concurrency", "64", "--duration", "120",
        "--warmup", "0", "--max-requests", str(requests), "--quiet", "--json", report.name]
per = {"h2load": [], "glimpse-load": []}
rate = {"h2load": [], "glimpse-load": []}
for _ in range(rounds):
    for name, cmd in (("glimpse-load", ours), ("h2load", h2load)):
        cpu, out = cpu_of(cmd)
        if name == "h2load":
            if f"{requests} succeeded" not in out:
                raise SystemExit("h2load did not complete every request:\n" + out[-800:])
            m = re.search(r"finished in [0-9.]+m?s, ([0-9.]+) req/s", out)
            if not m:
                raise SystemExit("cannot read h2load's rate:\n" + out[-800:])
            rate[name].append(float(m.group(1)))
        else:
            with open(report.name) as f:
                run = json.load(f)["runs"][0]
            if run["errors"] != 0 or run["succeeded"] != requests:
                raise SystemExit(f"glimpse-load: {run['succeeded']} succeeded, {run['errors']} errors")
            rate[name].append(float(run["achievedRate"]))
        per[name].append(cpu / requests * 1e6)
for name, values in per.items():
    print(f"{name:13s} CPU per request: median {statistics.median(values):6.2f} us  (runs: {', '.join(f'{v:.2f}' for v in values)})")
for name, values in rate.items():
    print(f"{name:13s} throughput:      median {statistics.median(values):8.0f} req/s (runs: {', '.join(f'{v:.0f}' for v in values)})")
ratio = statistics.median(per["glimpse-load"]) / statistics.median(per["h2load"])
print(f"CPU per request, glimpse-load / h2load: {ratio:.2f}")
print(f"throughput, glimpse-load / h2load: {statistics.median(rate['glimpse-load']) / statistics.median(rate['h2load']):.2f}")
os.unlink(body.name)
os.unlink(report.name)
