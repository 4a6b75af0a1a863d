#!/usr/bin/env python3
"""Reads the glimpse-load JSON files of tools/bench-variants/run.sh and prints the markdown tables.

    report.py WORKDIR MANIFEST FAMILY LARGE SMALL DEADLINE_MS OFFERED_RATE RECOVERY_AT_S

WORKDIR holds unloaded.json, capacity.json, large.json, small.json, dynamic.json, recovery.json and
loadavg.txt; MANIFEST is the models.json of the models served; LARGE and SMALL are the model names of
the static setups. Served accuracy is the manifest accuracy of each variant weighted by the answers it
gave. Recovery is judged on the most accurate variant served (the one dynamic selection aims for).
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


def main():
    work, manifest, family, large, small, deadline, offered_rate, recovery_at = sys.argv[1:9]
    work = Path(work)
    deadline = float(deadline)
    offered_rate = float(offered_rate)
    recovery_at = int(float(recovery_at))
    acc = accuracies(manifest, family)
    best = max(acc, key=acc.get)

    unloaded = run(work / "unloaded.json")
    cap = run(work / "capacity.json")
    print(f"unloaded latency of {large} (closed loop, 1 in flight): p50 {unloaded['latency']['p50']:.2f} ms, "
          f"p99 {unloaded['latency']['p99']:.2f} ms")
    print(f"capacity of {large} (closed loop, {int(cap['target'])} in flight): {cap['achievedRate']:.1f} img/s, "
          f"p50 {cap['latency']['p50']:.1f} ms; offered in the runs below: {offered_rate:.0f} req/s; deadline_ms {deadline:g}")
    print()
    print("| setup | `model` | offered req/s | within deadline | refused (-32000) | expired (-32001) | other errors | late answers "
          "| throughput img/s | p50 / p99 ms (answered) | variants served | mean served accuracy |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|")
    for setup, label in [("large", "static largest"), ("small", "static smallest"), ("dynamic", "dynamic")]:
        path = work / f"{setup}.json"
        if not path.exists():
            continue
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
        model = {"large": large, "small": small, "dynamic": family}[setup]
        print(f"| {label} | `{model}` | {offered / r['elapsed']:.0f} | **{pct(within / offered if offered else None)}** ({within}/{offered}) "
              f"| {refused} | {expired} | {other}{f' ({transport} transport)' if transport else ''} | {late} "
              f"| {r['achievedRate']:.0f} | {r['latency']['p50']:.1f} / {r['latency']['p99']:.1f} | {mix} | {pct(served_accuracy(variants, acc))} |")

    path = work / "recovery.json"
    if path.exists():
        r = run(path)
        print()
        print(f"Recovery ({r['mode']}): answers per second by variant; the rate drops at second {recovery_at}.")
        print()
        print("| second | answered | " + " | ".join(sorted(acc, key=lambda v: -acc[v])) + f" | share of {best} | p99 ms |")
        print("|---:|---:|" + "---:|" * len(acc) + "---:|---:|")
        back = None
        points = {p["second"]: p for p in r["timeline"]}
        for second in sorted(points):
            p = points[second]
            v = p.get("variants") or {}
            total = sum(v.values())
            share = v.get(best, 0) / total if total else 0
            if second >= recovery_at - 3:
                print(f"| {second} | {p['count']} | " + " | ".join(str(v.get(name, 0)) for name in sorted(acc, key=lambda n: -acc[n]))
                      + f" | {100 * share:.1f}% | {p['p99']:.1f} |")
        # The first second from the drop on after which every second is served (>= 95%) by the best variant.
        seconds = [s for s in sorted(points) if s >= recovery_at]
        for i, s in enumerate(seconds):
            rest = seconds[i:]
            def share_of(t):
                v = points[t].get("variants") or {}
                return v.get(best, 0) / max(1, sum(v.values()))
            if rest and all(share_of(t) >= 0.95 for t in rest):
                back = s
                break
        if back is None:
            print(f"\nrecovery: the {best} variant did not come back to >= 95% of the answers before the run ended")
        else:
            print(f"\nrecovery: from second {back} on, >= 95% of each second's answers come from {best}: "
                  f"back within {back - recovery_at + 1} s of the drop (1 s resolution)")
        after = [points[s] for s in seconds]
        print(f"after the drop: {sum(p['count'] for p in after)} answers, p99 per second at most {max((p['p99'] for p in after), default=0):.1f} ms; "
              f"whole run within deadline {pct(r.get('sloAttainment'))}")

    loads = (work / "loadavg.txt").read_text().split() if (work / "loadavg.txt").exists() else []
    if loads:
        values = [float(x) for x in loads]
        print(f"\nload average (1 min) during the runs: {min(values):.2f}-{max(values):.2f}")


if __name__ == "__main__":
    main()
