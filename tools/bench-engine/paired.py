#!/usr/bin/env python3
"""Glimpse and onnxruntime measured in turn, configuration by configuration: for each model, thread
count and batch, ROUNDS pairs of short measurements (who goes first alternates), each engine a
long-lived process (`bench-engine --serve`, `ort_bench.py --serve`). On a host whose speed drifts
over seconds to minutes, the ratio of two measurements taken a second apart varies much less than
that of medians taken minutes apart, so the table reports the median of the per-pair ratios (and
their range) beside the ratio of the engines' medians.

usage: paired.py RUNNER PYTHON [--rounds R] [--seconds S] [--batches 1,8] [--threads 1,2] MODEL...
"""
import json
import os
import statistics
import subprocess
import sys


def main():
    runner, python = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    rounds, seconds, batches, threads, models = 7, 0.5, [1, 8, 32], [1, 2], []
    while args:
        a = args.pop(0)
        if a == "--rounds":
            rounds = int(args.pop(0))
        elif a == "--seconds":
            seconds = float(args.pop(0))
        elif a == "--batches":
            batches = [int(x) for x in args.pop(0).split(",")]
        elif a == "--threads":
            threads = [int(x) for x in args.pop(0).split(",")]
        else:
            models.append(a)
    here = os.path.dirname(os.path.abspath(__file__))
    engines = {
        "glimpse": subprocess.Popen([runner, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True),
        "ort": subprocess.Popen([python, os.path.join(here, "ort_bench.py"), "--serve"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True),
    }

    def ask(name, t, b, path):
        p = engines[name]
        p.stdin.write(f"{t} {b} {seconds} {path}\n")
        p.stdin.flush()
        line = p.stdout.readline()
        if not line:
            sys.exit(f"{name} runner exited")
        return json.loads(line)

    print("| model | isa | batch | threads | batch ran | Glimpse ms | img/s | GFLOP/s | % of peak | onnxruntime ms "
          "| Glimpse/ORT | paired Glimpse/ORT (range) |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for path in models:
        for t in threads:
            for b in batches:
                g, o = [], []
                for r in range(rounds):
                    order = ["ort", "glimpse"] if r % 2 == 0 else ["glimpse", "ort"]
                    got = {name: ask(name, t, b, path) for name in order}
                    if not got["glimpse"] or not got["ort"]:
                        break
                    for name, res in got.items():
                        if "error" in res:
                            sys.exit(f"{name}: {res}")
                    g.append(got["glimpse"])
                    o.append(got["ort"])
                if not g:
                    continue
                gm = statistics.median(x["median_ms"] for x in g)
                om = statistics.median(x["median_ms"] for x in o)
                ratios = sorted(x["median_ms"] / y["median_ms"] for x, y in zip(g, o))
                ran = "/".join(sorted(set(x["split"] for x in g))) if b > 1 else "-"
                print(f"| {g[0]['model']} | {g[0].get('isa', '?')} | {b} | {t} | {ran} | {gm:.2f} | {b / gm * 1000:.1f} "
                      f"| {statistics.median(x['gflops'] for x in g):.1f} | {statistics.median(x['pct_peak'] for x in g):.1f}"
                      f"{' int8' if g[0].get('peak') == 'int8' else ''} "
                      f"| {om:.2f} | {gm / om:.2f} | **{statistics.median(ratios):.2f}** ({ratios[0]:.2f}–{ratios[-1]:.2f}) |",
                      flush=True)
    for p in engines.values():
        p.stdin.close()
        p.wait()


if __name__ == "__main__":
    main()
