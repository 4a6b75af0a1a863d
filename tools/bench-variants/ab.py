#!/usr/bin/env python3
"""Two glimpse servers side by side under the same glimpse-load runs, in alternating rounds: server CPU
and voluntary context switches per request, and (with a deadline) the share within it and the
effective accuracy on the labelled CIFAR-10 test images.

    python3 tools/bench-variants/ab.py A_BINARY B_BINARY [--model cifar10] [--rate 2229 | --closed]
        [--deadline-ms 25] [--seconds 20] [--rounds 4] [--variants cifar10-large,cifar10-small]
        [--a-flags "..."] [--b-flags "..."] [--labels-tar ../shared/datasets/cifar10-jpeg/test.tar]

Both servers serve the chosen variants of models/ (loopback, their own ports) at once; each round runs
glimpse-load (2 connections; open loop at --rate, or 64 in flight with --closed) against each server,
the order alternating from round to round. CPU is user + system from /proc/PID/stat, switches the sum
of voluntary_ctxt_switches over the server's threads, both around the run. Prints each round, then the
median per server and the median and range of the per-round ratio B/A of CPU per request. --a-flags
and --b-flags add `glimpse serve` options to one server (e.g. "--split-margin 0.02"); the same binary
twice with different flags compares settings. Every run is bounded by --seconds and a timeout.
"""
import argparse, json, os, re, shutil, statistics, subprocess, sys, tarfile, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("GLIMPSE_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
LOAD = os.path.join(ROOT, ".build", "release", "glimpse-load")
sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
from model_folder import link_variants  # noqa: E402
from procstat import cpu_seconds, switches  # noqa: E402
from servers import start_server, stop_servers  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--model", default="cifar10")
    p.add_argument("--rate", type=int, default=2229)
    p.add_argument("--closed", action="store_true", help="64 calls in flight instead of --rate")
    p.add_argument("--deadline-ms", type=int, default=25)
    p.add_argument("--seconds", type=int, default=20)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--variants", default="cifar10-large,cifar10-small")
    p.add_argument("--a-flags", default="")
    p.add_argument("--b-flags", default="")
    p.add_argument("--labels-tar", default=os.path.join(SHARED, "datasets", "cifar10-jpeg", "test.tar"))
    a = p.parse_args()
    if not os.path.exists(LOAD):
        sys.exit(f"{LOAD} not found: build with swift build -c release")
    work = tempfile.mkdtemp(prefix="glimpse-ab-variants-")
    servers = []
    try:
        models = os.path.join(work, "models")
        link_variants(models, a.variants.split(","))
        with tarfile.open(a.labels_tar) as tar:
            tar.extractall(work, filter="data")
        labels = os.path.join(work, "test")

        for i, (binary, flags) in enumerate(((a.a, a.a_flags), (a.b, a.b_flags))):
            port = 18960 + i
            # One server at a time, so each calibrates its models (timings that choose batch sizes
            # and threads) on a machine the other is not loading.
            proc = start_server(binary, models, port, flags.split(), os.path.join(work, f"server-{i}.log"))
            servers.append((f"{'AB'[i]} {binary} {flags}".strip(), port, proc))
            # What calibration chose for a lone batch (all engine threads or one), per model.
            for line in open(os.path.join(work, f"server-{i}.log")):
                lone, model = re.search(r"a lone batch [^)]*\)", line), re.search(r"model=(\S+)", line)
                if lone and model:
                    print(f"{'AB'[i]} {model.group(1)}: {lone.group(0)}", flush=True)

        results = {name: [] for name, _, _ in servers}
        for r in range(a.rounds):
            for name, port, proc in (servers if r % 2 == 0 else servers[::-1]):
                out = os.path.join(work, "run.json")
                load = [LOAD, "--port", str(port), "--labels", labels, "--quiet", "--timeout", "10", "--model", a.model,
                        "-c", "2", "--duration", str(a.seconds), "--warmup", "0", "--json", out]
                load += ["--concurrency", "64"] if a.closed else ["--rate", str(a.rate), "--deadline-ms", str(a.deadline_ms)]
                cpu0, sw0 = cpu_seconds(proc.pid), switches(proc.pid)
                subprocess.run(load, capture_output=True, timeout=a.seconds + 60)
                cpu1, sw1 = cpu_seconds(proc.pid), switches(proc.pid)
                run = json.load(open(out))["runs"][0]
                n = max(1, run["calls"])
                row = ((cpu1 - cpu0) / n * 1e6, (sw1 - sw0) / n, run["achievedRate"], run.get("sloAttainment"), run.get("effectiveAccuracy"))
                results[name].append(row)
                within = f"within {100 * row[3]:.2f}%" if row[3] is not None else ""
                effective = f"effective {100 * row[4]:.2f}%" if row[4] is not None else ""
                print(f"round {r} {name}: {row[0]:.1f} µs CPU and {row[1]:.2f} switches per request, {row[2]:.0f} req/s {within} {effective}", flush=True)

        base = results[servers[0][0]]
        for name, _, _ in servers:
            rows = results[name]
            effective = [f"{100 * x[4]:.2f}" for x in rows if x[4] is not None]
            print(f"{name}: CPU µs/request median {statistics.median(x[0] for x in rows):.1f}, switches/request "
                  f"{statistics.median(x[1] for x in rows):.2f}, effective accuracy by round {', '.join(effective) or '-'}")
        ratios = [x[0] / b[0] for x, b in zip(results[servers[1][0]], base)]
        print(f"CPU per request B/A, per round: median {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}), {a.rounds} rounds")
    finally:
        stop_servers([proc for _, _, proc in servers])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
