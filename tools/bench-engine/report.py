#!/usr/bin/env python3
"""Merges the JSON lines of both engines (median over rounds) into a Markdown table."""
import json
import statistics
import sys
from collections import defaultdict


def load(path):
    runs = defaultdict(list)
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if "error" in r:
            print("error:", r, file=sys.stderr)
            continue
        runs[(r["model"], r["batch"], r["threads"])].append(r)
    return runs


glimpse, ort = load(sys.argv[1]), load(sys.argv[2])
print("| model | batch | threads | batch ran | Glimpse ms | img/s | GFLOP/s | % of peak | onnxruntime ms | Glimpse/ORT |")
print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
for key in sorted(glimpse):
    g = glimpse[key]
    gm = statistics.median(r["median_ms"] for r in g)
    gf = statistics.median(r["gflops"] for r in g)
    pct = statistics.median(r["pct_peak"] for r in g)
    # Models that run the int8 kernels report against the int8 peak ("peak": "int8").
    peak = " int8" if g[0].get("peak") == "int8" else ""
    # How the engine ran batches of several items, per round ("split" into single items or "whole").
    ran = "/".join(r.get("split", "-") for r in g) if key[1] > 1 else "-"
    om = statistics.median(r["median_ms"] for r in ort[key]) if key in ort else float("nan")
    print(f"| {key[0]} | {key[1]} | {key[2]} | {ran} | {gm:.2f} | {key[1] / gm * 1000:.1f} | {gf:.1f} | {pct:.1f}{peak} | {om:.2f} | {gm / om:.2f} |")
