#!/usr/bin/env python3
"""Two glimpse builds side by side: server CPU per classify request, in alternating rounds.

    python3 tools/bench-serving/ab.py A_BINARY B_BINARY [--rounds 8] [--requests 20000] [--image PATH]
                                      [--model mnist-8] [--preprocessing mnist]

Both servers run at once (loopback, their own ports) with only MODEL loaded from the shared models;
each round sends REQUESTS JSON-RPC classify calls of IMAGE to each server with h2load (-c 2 -m 32),
the order alternating from round to round, and reads the server's CPU (user + system, /proc/PID/stat)
around them, and the engine's CPU per image from the server's metrics (as bench.py does). Prints each
build's median req/s, CPU µs per request, CPU outside the engine per request and voluntary context
switches per request (all the server's threads, /proc/PID/task/*/status), and the median and
range of the per-round ratios B/A: paired figures that a noisy shared host moves less than either
alone.
Every step is bounded by its request count and a timeout.
"""
import argparse, base64, json, os, re, subprocess, sys, tempfile, time

from bench import cpu_seconds, engine_cpu, metrics, start_server, stop_all

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
from procstat import switches  # noqa: E402
SHARED = os.environ.get("GLIMPSE_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--requests", type=int, default=20000)
    p.add_argument("--image", default=os.path.join(SHARED, "images", "digits", "torchserve_0.png"))
    p.add_argument("--model", default="mnist-8")
    p.add_argument("--preprocessing", default="mnist")
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="glimpse-ab-")
    procs = []
    try:
        models = os.path.join(work, "models")
        os.makedirs(models)
        os.symlink(os.path.join(SHARED, "models", a.model + ".onnx"), os.path.join(models, a.model + ".onnx"))
        json.dump({"preprocessing": a.preprocessing}, open(os.path.join(models, a.model + ".json"), "w"))
        body = os.path.join(work, "body.json")
        json.dump({"jsonrpc": "2.0", "id": 1, "method": "classify",
                   "params": {"image": base64.b64encode(open(a.image, "rb").read()).decode(), "model": a.model, "top_k": 1}},
                  open(body, "w"))
        ports = [start_server(binary, models, work, procs)[1] for binary in (a.a, a.b)]

        def load(port, n):
            out = subprocess.run(["h2load", "-n", str(n), "-c", "2", "-m", "32", "-d", body, "-H", "content-type: application/json",
                                  f"http://127.0.0.1:{port}/rpc"], capture_output=True, text=True, timeout=300).stdout
            found = re.search(r"(\d+) succeeded", out)
            if not found:
                raise RuntimeError("h2load gave no summary:\n" + out)
            return int(found.group(1))

        for port in ports:
            load(port, a.requests // 4)  # warm-up: plans, calibration of the sizes the load uses
        results = ([], [])
        for r in range(a.rounds):
            for i in ((0, 1) if r % 2 == 0 else (1, 0)):
                engine_before = engine_cpu(metrics(ports[i]), a.model)
                before, start, waits = cpu_seconds(procs[i].pid), time.monotonic(), switches(procs[i].pid)
                ok = load(ports[i], a.requests)
                elapsed, cpu = time.monotonic() - start, cpu_seconds(procs[i].pid) - before
                waits = switches(procs[i].pid) - waits
                engine_after = engine_cpu(metrics(ports[i]), a.model)
                engine = (engine_after[0] - engine_before[0]) / max(engine_after[1] - engine_before[1], 1)
                per = cpu / max(ok, 1)
                results[i].append((ok / elapsed, per * 1e6, (per - engine) * 1e6, waits / max(ok, 1)))

        def median(v):
            v = sorted(v)
            return v[len(v) // 2]

        for name, rows in zip((a.a, a.b), results):
            rates, cpus, outside, waits = ([x[k] for x in rows] for k in range(4))
            print(f"{name}: req/s median {median(rates):,.0f} ({min(rates):,.0f}-{max(rates):,.0f}), "
                  f"CPU µs/request median {median(cpus):.1f} ({min(cpus):.1f}-{max(cpus):.1f}), "
                  f"outside the engine median {median(outside):.1f} ({min(outside):.1f}-{max(outside):.1f}), "
                  f"voluntary context switches/request median {median(waits):.2f}")
        for label, k in (("CPU per request", 1), ("CPU outside the engine per request", 2)):
            ratios = [b[k] / a_[k] for a_, b in zip(*results)]
            print(f"{label} B/A, per round: median {median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}), {a.rounds} rounds")
    finally:
        stop_all(procs, work)

if __name__ == "__main__":
    sys.exit(main())
