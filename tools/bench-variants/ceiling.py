#!/usr/bin/env python3
"""How much of an overload the most accurate variant can carry on this machine, found by trying: the
load split at its default safety margin against the same split pushed past its own capacity
estimates (negative margins), one server per margin, in alternating rounds.

    python3 tools/bench-variants/ceiling.py [--binary .build/release/glimpse] (--factor 1.5 | --rate 1600)
        [--margins 0.02,-0.05,-0.1,-0.15] [--fixed 0.45,0.5] [--deadline-ms 25] [--seconds 15] [--rounds 3]
        [--variants cifar10-large,cifar10-small] [--labels-tar ../shared/datasets/cifar10-jpeg/test.tar]

Each server (loopback, its own port, started one at a time so each calibrates on a quiet machine)
serves the two variants with `--split-margin M`; a margin of −0.1 plans the cores as if arrivals were
λ/1.1, so the split gives the large variant more than its estimates say the cores carry, while every
request is still checked against its deadline. --fixed adds settings that fix the large variant's share
with the family's A/B weights (`models.traffic`) on a server at the default margin (the split decides
only for requests that variant is predicted to miss). First each variant's capacity alone, end to end,
as run.sh measures it (closed loop, 64 in flight, 10 s); --factor sets the rate to that multiple of the
large variant's. Each round then runs glimpse-load at the rate (open loop, 2 connections, the labelled
CIFAR-10 test images) once per setting, the order alternating from round to round. Prints each run's
share of answers from the large variant, share within the deadline and effective accuracy (correct
within the deadline over offered), then per setting the medians, the best setting that kept ≥ 99%
within the deadline in every round, and the closed-form ideal f = (1/λ − 1/μ_S) / (1/μ_L − 1/μ_S) of
the issue with the capacities measured. Every run is bounded by --seconds and a timeout.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tarfile, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.environ.get("GLIMPSE_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
LOAD = os.path.join(ROOT, ".build", "release", "glimpse-load")
sys.path.insert(0, os.path.join(ROOT, "tools", "lib"))
from model_folder import link_variants  # noqa: E402
from servers import start_server, stop_servers  # noqa: E402


def rpc(port, method, params):
    body = json.dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": 1})
    out = subprocess.run(["curl", "-s", "--max-time", "5", "--http2-prior-knowledge", "-H", "content-type: application/json",
                          "-d", body, f"http://127.0.0.1:{port}/rpc"], capture_output=True, text=True).stdout
    reply = json.loads(out)
    if "error" in reply:
        sys.exit(f"{method}: {reply['error']}")
    return reply["result"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "glimpse"))
    p.add_argument("--rate", type=int)
    p.add_argument("--factor", type=float, help="the rate as a multiple of the large variant's capacity")
    p.add_argument("--margins", default="0.02,-0.05,-0.1,-0.15")
    p.add_argument("--fixed", default="", help="large-variant shares fixed by A/B weights, e.g. 0.45,0.5")
    p.add_argument("--deadline-ms", type=int, default=25)
    p.add_argument("--seconds", type=int, default=15)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--variants", default="cifar10-large,cifar10-small")
    p.add_argument("--family", default="cifar10")
    p.add_argument("--labels-tar", default=os.path.join(SHARED, "datasets", "cifar10-jpeg", "test.tar"))
    a = p.parse_args()
    if (a.rate is None) == (a.factor is None):
        sys.exit("give one of --rate and --factor")
    large, small = a.variants.split(",")
    margins = [float(m) for m in a.margins.split(",") if m]
    fixed = [float(s) for s in a.fixed.split(",") if s]
    work = tempfile.mkdtemp(prefix="glimpse-ceiling-")
    procs = []
    try:
        models = os.path.join(work, "models")
        link_variants(models, [large, small])
        with tarfile.open(a.labels_tar) as tar:
            tar.extractall(work, filter="data")
        # Settings: (label, port, A/B share or None).
        settings = []
        for i, m in enumerate(margins):
            port = 18970 + i
            procs.append(start_server(a.binary, models, port, [f"--split-margin={m}", "--admin-without-auth"], os.path.join(work, f"server-{i}.log")))
            settings.append((f"split, margin {m:g}", port, None))
        if fixed:
            port = 18970 + len(margins)
            procs.append(start_server(a.binary, models, port, ["--admin-without-auth"], os.path.join(work, "server-fixed.log")))
            settings += [(f"fixed {s:.2f} (A/B weights)", port, s) for s in fixed]

        def load(port, seconds, out, model=None):
            cmd = [LOAD, "--port", str(port), "--labels", os.path.join(work, "test"), "--quiet", "--timeout", "10",
                   "--model", model or a.family, "-c", "2", "--duration", str(seconds), "--json", out]
            cmd += ["--concurrency", "64", "--warmup", "2"] if model else ["--warmup", "0", "--rate", str(a.rate), "--deadline-ms", str(a.deadline_ms)]
            subprocess.run(cmd, capture_output=True, timeout=seconds + 60)
            return json.load(open(out))["runs"][0]

        first = settings[0][1]
        mu_l, mu_s = (load(first, 10, os.path.join(work, "capacity.json"), v)["achievedRate"] for v in (large, small))
        print(f"capacity, each alone end to end (closed loop, 64 in flight): {large} {mu_l:.1f} img/s, {small} {mu_s:.1f} img/s")
        if a.factor:
            a.rate = round(a.factor * mu_l)
        for port in sorted({s[1] for s in settings}):
            load(port, 3, os.path.join(work, "warm.json"))
        results = {s[0]: [] for s in settings}
        for r in range(a.rounds):
            for label, port, share in (settings if r % 2 == 0 else settings[::-1]):
                if share is not None:
                    rpc(port, "models.traffic", {"family": a.family, "weights": {large: round(share * 1000), small: 1000 - round(share * 1000)}})
                run = load(port, a.seconds, os.path.join(work, "run.json"))
                served = run.get("variants", {})
                row = (served.get("large", 0) / max(1, sum(served.values())), run["sloAttainment"], run["effectiveAccuracy"], run["achievedRate"])
                results[label].append(row)
                print(f"round {r} {label}: large {100 * row[0]:.1f}% of answers, within deadline {100 * row[1]:.2f}%, "
                      f"effective accuracy {100 * row[2]:.2f}%, {row[3]:.0f} req/s", flush=True)

        print(f"\n{a.rate} req/s, deadline {a.deadline_ms} ms, {a.rounds} rounds of {a.seconds} s (medians; worst round within the deadline)")
        print("| setting | large share of answers | within deadline | worst round | effective accuracy |")
        print("|---|---:|---:|---:|---:|")
        best = None
        for label, _, _ in settings:
            rows = results[label]
            med = [statistics.median(x[i] for x in rows) for i in range(3)]
            worst = min(x[1] for x in rows)
            print(f"| {label} | {100 * med[0]:.1f}% | {100 * med[1]:.2f}% | {100 * worst:.2f}% | {100 * med[2]:.2f}% |")
            if worst >= 0.99 and (best is None or med[2] > best[1]):
                best = (label, med[2])
        print(f"best setting with ≥ 99% within the deadline in every round: {best[0]}, {100 * best[1]:.2f}%" if best
              else "no setting kept 99% within the deadline in every round")
        f = min(1, max(0, (1 / a.rate - 1 / mu_s) / (1 / mu_l - 1 / mu_s)))
        print(f"closed form with the capacities above: f = {f:.3f} of the requests on {large}")
    finally:
        stop_servers(procs)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
