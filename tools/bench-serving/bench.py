#!/usr/bin/env python3
"""The request path's cost: req/s and server CPU per request, in one run (see run.sh for the list).

Run by tools/bench-serving/run.sh, which builds the release executables first.
"""
import argparse
import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
from procstat import cpu_seconds  # noqa: E402

SHARED = os.environ.get("GLIMPSE_SHARED", "../shared")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary, models, work, procs, flags=()):
    """`binary serve` on a free loopback port with the models of `models`, appended to `procs`;
    returns (process, port) once it listens (at most 60 s)."""
    port = free_port()
    log_path = os.path.join(work, f"serve-{port}.log")
    server = subprocess.Popen([binary, "serve", "--host", "127.0.0.1", "--port", str(port), "--models", models] + list(flags),
                              stdout=open(log_path, "w"), stderr=subprocess.STDOUT)
    procs.append(server)
    for _ in range(600):
        if "listening on" in open(log_path).read():
            return server, port
        time.sleep(0.1)
    raise RuntimeError(f"{binary} did not start:\n" + open(log_path).read())


def stop_all(procs, work):
    """SIGTERM to each process still running (killed after 10 s), then the work folder removed."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    shutil.rmtree(work, ignore_errors=True)


def metrics(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        try:
            values[name] = float(value)
        except ValueError:
            pass
    return values


def engine_cpu(values, model):
    """(engine CPU seconds, images) so far for a model, from the inference energy histogram."""
    watts = next((v for k, v in values.items() if k.startswith("glimpse_energy_watts_per_core")), None)
    total = count = 0.0
    for k, v in values.items():
        if k.startswith("glimpse_inference_energy_joules_sum") and f'model="{model}"' in k:
            total += v
        elif k.startswith("glimpse_inference_energy_joules_count") and f'model="{model}"' in k:
            count += v
    return (total / watts if watts else 0.0), count


def h2load(args, seconds):
    out = subprocess.run(["h2load", "-D", str(seconds)] + args, capture_output=True, text=True, timeout=seconds + 60).stdout
    rate = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out)
    done = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed", out)
    status = re.search(r"status codes: (\d+) 2xx", out)
    if not rate or not done:
        raise RuntimeError("h2load gave no summary:\n" + out)
    return float(rate.group(1)), int(done.group(2)), int(done.group(3)), int(status.group(1)) if status else 0


def glimpse_load(port, model, images, seconds):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([".build/release/glimpse-load", "--port", str(port), "--model", model, "--images", images, "-c", "2",
                        "--concurrency", "64", "--duration", str(seconds), "--warmup", "1", "--top-k", "1", "--quiet",
                        "--json", f.name], check=True, capture_output=True, timeout=seconds + 60)
        run = json.load(open(f.name))["runs"][0]
    ok = run.get("ok", run.get("succeeded", 0))
    return run["achievedRate"], ok, run.get("errors", 0)


def measure(pid, step):
    before = cpu_seconds(pid)
    start = time.monotonic()
    result = step()
    return result, cpu_seconds(pid) - before, time.monotonic() - start


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=8)
    p.add_argument("--requests", type=int, default=200000)
    p.add_argument("--server", default=".build/release/glimpse", help="the glimpse executable to measure")
    p.add_argument("--compare-flags", default="", help="also measure a server started with these serve flags")
    a = p.parse_args()
    secs = int(a.seconds)
    work = tempfile.mkdtemp(prefix="glimpse-bench-serving-")
    procs = []

    try:
        # The models: mnist-8 and squeezenet1.1 from the shared test models.
        models = os.path.join(work, "models")
        os.makedirs(models)
        manifest = json.load(open(os.path.join(SHARED, "models", "models.json")))["models"]
        keep = {n: manifest[n] for n in ("mnist-8", "squeezenet1.1")}
        for entry in keep.values():
            for key in ("file", "labels"):
                if entry.get(key):
                    # Paths in the shared manifest are relative to the shared folder or to its models/.
                    source = next((c for c in (os.path.join(SHARED, entry[key]), os.path.join(SHARED, "models", entry[key])) if os.path.exists(c)), None)
                    if source is None:
                        raise RuntimeError(f"{entry[key]} not found under {SHARED}")
                    os.symlink(os.path.abspath(source), os.path.join(models, os.path.basename(entry[key])))
                    entry[key] = os.path.basename(entry[key])
        json.dump({"models": keep}, open(os.path.join(models, "models.json"), "w"))
        digit = os.path.join(SHARED, "images", "digits", "torchserve_0.png")
        kitten = os.path.join(SHARED, "images", "imagenet", "kitten_small.jpg")
        folders = {}
        for name, image in (("digit", digit), ("kitten", kitten)):
            folders[name] = os.path.join(work, name)
            os.makedirs(folders[name])
            shutil.copy(image, folders[name])
        bodies = {}
        for name, model, image in (("digit", "mnist-8", digit), ("kitten", "squeezenet1.1", kitten)):
            body = {"jsonrpc": "2.0", "id": 1, "method": "classify",
                    "params": {"image": base64.b64encode(open(image, "rb").read()).decode(), "model": model, "top_k": 1}}
            bodies[name] = os.path.join(work, f"{name}.json")
            json.dump(body, open(bodies[name], "w"))

        docs = os.path.join(work, "htdocs")
        os.makedirs(docs)
        open(os.path.join(docs, "healthz"), "w").write("0123456789abcdef")
        nport = free_port()
        nghttpd = subprocess.Popen(["nghttpd", "--no-tls", "-d", docs, str(nport)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(nghttpd)
        time.sleep(0.5)

        n = str(a.requests)
        json_header = ["-H", "content-type: application/json"]
        rows = []

        def h2(pid, port, label, args, model=None):
            engine_before = engine_cpu(metrics(port), model) if model else (0, 0)
            (rate, ok, failed, s2xx), cpu, _ = measure(pid, lambda: h2load(args, secs))
            engine_after = engine_cpu(metrics(port), model) if model else (0, 0)
            rows.append((label, rate, ok, failed, cpu, ok, engine_after[0] - engine_before[0], engine_after[1] - engine_before[1]))

        def gl(pid, port, label, model, folder):
            engine_before = engine_cpu(metrics(port), model)
            before = cpu_seconds(pid)
            # glimpse-load's JSON counts only the measured period; CPU is sampled around the whole run
            # (warm-up included), so requests are estimated from the rate over the run's length.
            rate, ok, errors = glimpse_load(port, model, folder, secs)
            cpu = cpu_seconds(pid) - before
            engine_after = engine_cpu(metrics(port), model)
            images = engine_after[1] - engine_before[1]
            rows.append((label, rate, ok, errors, cpu, images, engine_after[0] - engine_before[0], images))

        configurations = [[]] + ([a.compare_flags.split()] if a.compare_flags.strip() else [])
        for flags in configurations:
            server, port = start_server(a.server, models, work, procs, flags)
            tag = f" [{' '.join(flags)}]" if flags else ""
            url = f"http://127.0.0.1:{port}"
            pid = server.pid
            h2(pid, port, f"GET /healthz, Glimpse h2c (h2load -c 2 -m 64){tag}", ["-n", n, "-c", "2", "-m", "64", f"{url}/healthz"])
            h2(pid, port, f"GET /healthz, Glimpse HTTP/1.1 (h2load --h1 -c 16){tag}", ["--h1", "-n", n, "-c", "16", f"{url}/healthz"])
            if not flags:
                h2(nghttpd.pid, 0, "GET /healthz, nghttpd h2c, 16-byte file (h2load -c 2 -m 64)",
                   ["-n", n, "-c", "2", "-m", "64", f"http://127.0.0.1:{nport}/healthz"])
            for name, model, folder in (("digit", "mnist-8", folders["digit"]), ("kitten", "squeezenet1.1", folders["kitten"])):
                gl(pid, port, f"classify {model}, h2c (glimpse-load -c 2 --concurrency 64){tag}", model, folder)
                h2(pid, port, f"classify {model}, h2c (h2load -c 2 -m 32){tag}",
                   ["-n", n, "-c", "2", "-m", "32", "-d", bodies[name]] + json_header + [f"{url}/rpc"], model)
                h2(pid, port, f"classify {model}, HTTP/1.1 (h2load --h1 -c 16){tag}",
                   ["--h1", "-n", n, "-c", "16", "-d", bodies[name]] + json_header + [f"{url}/rpc"], model)
                # As many calls in flight as the h2c rows (64): HTTP/1.1 has one per connection.
                h2(pid, port, f"classify {model}, HTTP/1.1 (h2load --h1 -c 64){tag}",
                   ["--h1", "-n", n, "-c", "64", "-d", bodies[name]] + json_header + [f"{url}/rpc"], model)
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)

        load = open("/proc/loadavg").read().split()[0]
        compare = f' --compare-flags "{a.compare_flags}"' if a.compare_flags.strip() else ""
        print(f"tools/bench-serving/run.sh --seconds {secs} --requests {a.requests}{compare}")
        print(f"{os.cpu_count()} cores; load average (1 min) at the end: {load}; server CPU from /proc/PID/stat around each step\n")
        print("| request | req/s | answered OK | failed | server CPU µs / request | engine CPU µs / image | outside the engine µs / request |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for label, rate, ok, failed, cpu, counted, engine, images in rows:
            per = cpu / counted * 1e6 if counted else float("nan")
            eng = engine / images * 1e6 if images else None
            outside = per - eng if eng is not None else None
            print(f"| {label} | {rate:,.0f} | {ok:,} | {failed:,} | {per:.1f} | {'' if eng is None else f'{eng:.1f}'} | {'' if outside is None else f'{outside:.1f}'} |")
    finally:
        stop_all(procs, work)


if __name__ == "__main__":
    sys.exit(main())
