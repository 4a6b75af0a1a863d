#!/usr/bin/env python3
"""Reads the glimpse-load JSON files of tools/bench-variants/run.sh and prints the markdown tables.

    report.py WORKDIR MANIFEST FAMILY LARGE SMALL DEADLINE_MS FACTORS SETUPS RECOVERY_AT_S

WORKDIR holds unloaded.json, capacity.json, capacity-small.json (and capacity-after-FACTOR.json,
capacity-small-after-FACTOR.json when run.sh measured them again after each factor), SETUP-FACTOR.json for each setup
(large, small, switch, split) and factor, stats-split-FACTOR.json (server.stats mid-run), recovery.json
and loadavg.txt; MANIFEST is the models.json of the models served; LARGE and SMALL are the model names
of the static setups. Served accuracy is the manifest accuracy of each variant weighted by the answers
it gave; effective accuracy is glimpse-load's (correct top-1 answers within the deadline of all offered
requests; labelled images only). Recovery is judged on the most accurate variant.
"""
import json
import sys
from pathlib import Path


def run(path):
    return json.loads(Path(path).read_text())["runs"][0]


def accuracies(manifest, family):
    models = json.loads(Path(manifest).read_text())["models"]
    # Responses name the variant (the manifest's "variant" field), e.g. "large".
    return {m["variant"]: m["accuracy"] for m in models.values() if m.get("family") == family and m.get("accuracy") is not None}


def served_accuracy(variants, acc):
    known = {v: n for v, n in variants.items() if v in acc}
    total = sum(known.values())
    if total == 0:
        return None
    return sum(n * acc[v] for v, n in known.items()) / total


def errors(r, prefix):
    return sum(n for k, n in r.get("byRPCError", {}).items() if k.startswith(prefix))


def pct(x):
    return "-" if x is None else f"{100 * x:.2f}%"


# The server's safety margin (VariantSplit.Policy.margin): the split plans the cores at 98% of their time.
MARGIN = 0.02


def ideal_share(rate, mu_large, mu_small, margin=0.0):
    """The large variant's share that keeps the shared cores just saturated, clamped to [0, 1]; with a
    safety margin m, the share that keeps them at (1 − m) of their time (arrivals planned as λ/(1 − m))."""
    if rate <= 0 or mu_large <= 0 or mu_small <= mu_large:
        return 1.0
    f = ((1 - margin) / rate - 1 / mu_small) / (1 / mu_large - 1 / mu_small)
    return min(1.0, max(0.0, f))


def main():
    work, manifest, family, large, small, deadline, factors, setups, recovery_at = sys.argv[1:10]
    work = Path(work)
    deadline = float(deadline)
    factors = factors.split(",")
    setups = setups.split(",")
    recovery_at = int(float(recovery_at))
    acc = accuracies(manifest, family)
    best = max(acc, key=acc.get)
    worst = min(acc, key=acc.get)

    unloaded = run(work / "unloaded.json")
    cap = run(work / "capacity.json")
    cap_small_path = work / "capacity-small.json"
    cap_small = run(cap_small_path) if cap_small_path.exists() else None
    mu_l = cap["achievedRate"]
    mu_s = cap_small["achievedRate"] if cap_small else 0
    print(f"unloaded latency of {large} (closed loop, 1 in flight): p50 {unloaded['latency']['p50']:.2f} ms, "
          f"p99 {unloaded['latency']['p99']:.2f} ms")
    print(f"capacity, each alone end to end (closed loop, {int(cap['target'])} in flight): {large} {mu_l:.1f} img/s"
          + (f", {small} {mu_s:.1f} img/s" if cap_small else "") + f"; deadline_ms {deadline:g}")

    # Each variant's accuracy on the images sent, from the static runs (answers of one variant only).
    measured = {}
    for setup in ("large", "small"):
        for factor in factors:
            path = work / f"{setup}-{factor}.json"
            if path.exists():
                va = run(path).get("variantAccuracy") or {}
                for v, a in va.items():
                    measured.setdefault(v, a)
    if measured:
        print("accuracy of each variant's answers on the images sent (static runs): "
              + ", ".join(f"{v} {100 * a:.2f}%" for v, a in sorted(measured.items(), key=lambda kv: -kv[1]))
              + "; manifest: " + ", ".join(f"{v} {100 * a:.2f}%" for v, a in sorted(acc.items(), key=lambda kv: -kv[1])))

    labels = {"large": "static largest", "small": "static smallest", "switch": "all-or-nothing switching", "split": "split"}
    before = (mu_l, mu_s)
    for factor in factors:
        # Capacities measured again after this factor's runs (run.sh): with the ones just before them
        # (the start, or the previous factor's), the mean is the machine's speed while they ran.
        after_paths = (work / f"capacity-after-{factor}.json", work / f"capacity-small-after-{factor}.json")
        adjacent = None
        if cap_small and all(p.exists() for p in after_paths):
            after = tuple(run(p)["achievedRate"] for p in after_paths)
            adjacent = ((before[0] + after[0]) / 2, (before[1] + after[1]) / 2, before, after)
            before = after
        rows = [(s, work / f"{s}-{factor}.json") for s in setups if (work / f"{s}-{factor}.json").exists()]
        gaps = []
        if not rows:
            continue
        rate = float(factor) * mu_l
        f = ideal_share(rate, mu_l, mu_s) if cap_small else None
        fm = ideal_share(rate, mu_l, mu_s, MARGIN) if cap_small else None
        ideals = {}
        print()
        print(f"### {factor}x the capacity of {large}: {rate:.0f} req/s offered")
        print()
        if f is not None:
            ideal = f * acc[best] + (1 - f) * acc[worst]
            line = f"split ideal: f = {f:.3f} of the requests on {best} (capacities above); f·{100 * acc[best]:.1f}% + (1 − f)·{100 * acc[worst]:.1f}% = {100 * ideal:.2f}% (manifest accuracies)"
            if best in measured and worst in measured:
                line += f", {100 * (f * measured[best] + (1 - f) * measured[worst]):.2f}% (measured accuracies)"
            print(line)
            ideal_m = fm * acc[best] + (1 - fm) * acc[worst]
            print(f"less the server's {100 * MARGIN:.0f}% safety margin (cores planned at {100 * (1 - MARGIN):.0f}%): f = {fm:.3f}; "
                  f"{100 * ideal_m:.2f}% (manifest accuracies)")
            ideals = {"no margin": ideal, f"{100 * MARGIN:.0f}% margin": ideal_m}
            if adjacent:
                ml, ms, b, a = adjacent
                fa = ideal_share(rate, ml, ms)
                ideal_a = fa * acc[best] + (1 - fa) * acc[worst]
                print(f"with the capacities measured next to these runs ({large} {b[0]:.1f} before, {a[0]:.1f} after; "
                      f"{small} {b[1]:.1f} before, {a[1]:.1f} after; means {ml:.1f} and {ms:.1f}): f = {fa:.3f}; "
                      f"{100 * ideal_a:.2f}% (manifest accuracies)")
                ideals["the capacities next to the runs"] = ideal_a
            print()
        print("| setup | `model` | offered req/s | within deadline | refused (-32000) | expired (-32001) | other errors | late answers "
              "| throughput img/s | p50 / p99 ms (answered) | variants served | mean served accuracy | effective accuracy |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|")
        for setup, path in rows:
            r = run(path)
            offered = r.get("offered") or r["requests"]
            within = r.get("withinSLO") or 0
            refused = errors(r, "-32000")
            expired = errors(r, "-32001")
            transport = sum(r.get("byTransportError", {}).values())
            other = r["errors"] - refused - expired
            late = r["succeeded"] - within
            variants = r.get("variants", {})
            mix = ", ".join(f"{v} {100 * n / max(1, sum(variants.values())):.1f}%" for v, n in sorted(variants.items(), key=lambda kv: -kv[1]))
            model = {"large": large, "small": small}.get(setup, family)
            stats_path = work / f"stats-{setup}-{factor}.json"
            note = ""
            if setup == "split" and stats_path.exists():
                try:
                    split = json.loads(stats_path.read_text())["result"]["split"][family]
                    shares = split["shares"]
                    result = json.loads(stats_path.read_text())["result"]
                    caps = split.get("capacities", {})
                    cap_note = f"; capacities {', '.join(f'{k} {v:.0f}/s' for k, v in sorted(caps.items()))}" if caps else ""
                    cores = result.get("available_cores")
                    cores_note = f", {cores:.2f} cores" if isinstance(cores, (int, float)) else ""
                    own = result.get("request_overhead_by_variant_us") or {}
                    if own:
                        cores_note += "; outside the engine " + ", ".join(f"{k} {v:.0f} µs" for k, v in sorted(own.items()))
                    note = f" (server split mid-run: {', '.join(f'{k} {v:.3f}' for k, v in sorted(shares.items()))} at {split['arrival_rate']:.0f}/s{cap_note}{cores_note})"
                except (KeyError, ValueError, TypeError):
                    pass
            print(f"| {labels.get(setup, setup)} | `{model}` | {offered / r['elapsed']:.0f} | **{pct(within / offered if offered else None)}** ({within}/{offered}) "
                  f"| {refused} | {expired} | {other}{f' ({transport} transport)' if transport else ''} | {late} "
                  f"| {r['achievedRate']:.0f} | {r['latency']['p50']:.1f} / {r['latency']['p99']:.1f} | {mix}{note} "
                  f"| {pct(served_accuracy(variants, acc))} | **{pct(r.get('effectiveAccuracy'))}** |")
            if setup == "split" and ideals and r.get("effectiveAccuracy") is not None:
                gaps.append(", ".join(f"{100 * (r['effectiveAccuracy'] - v):+.2f} points against the ideal with {k}" for k, v in ideals.items()))
        for g in gaps:
            print(f"\nsplit's effective accuracy: {g}")

    path = work / "recovery.json"
    if path.exists():
        r = run(path)
        print()
        print(f"Recovery ({r['mode']}, split): answers per second by variant; the rate drops at second {recovery_at}.")
        print()
        print("| second | answered | " + " | ".join(sorted(acc, key=lambda v: -acc[v])) + f" | share of {best} | p99 ms |")
        print("|---:|---:|" + "---:|" * len(acc) + "---:|---:|")
        points = {p["second"]: p for p in r["timeline"]}
        for second in sorted(points):
            p = points[second]
            v = p.get("variants") or {}
            total = sum(v.values())
            share = v.get(best, 0) / total if total else 0
            if second >= recovery_at - 3:
                print(f"| {second} | {p['count']} | " + " | ".join(str(v.get(name, 0)) for name in sorted(acc, key=lambda n: -acc[n]))
                      + f" | {100 * share:.1f}% | {p['p99']:.1f} |")
        seconds = [s for s in sorted(points) if s >= recovery_at]
        settled = [s for s in seconds if s >= recovery_at + 3]
        answers = sum(sum((points[s].get("variants") or {}).values()) for s in settled)
        from_best = sum((points[s].get("variants") or {}).get(best, 0) for s in settled)
        if answers:
            print(f"\nrecovery: from 3 s after the drop on (seconds {recovery_at + 3}-{settled[-1]}), {best} served "
                  f"{from_best} of {answers} answers ({100 * from_best / answers:.2f}%)")
        after = [points[s] for s in seconds]
        print(f"after the drop: {sum(p['count'] for p in after)} answers, p99 per second at most {max((p['p99'] for p in after), default=0):.1f} ms; "
              f"whole run within deadline {pct(r.get('sloAttainment'))}, effective accuracy {pct(r.get('effectiveAccuracy'))}")

    loads = (work / "loadavg.txt").read_text().split() if (work / "loadavg.txt").exists() else []
    if loads:
        values = [float(x) for x in loads]
        print(f"\nload average (1 min) during the runs: {min(values):.2f}-{max(values):.2f}")


if __name__ == "__main__":
    main()
