#!/usr/bin/env python3
"""Per-operator time of onnxruntime on one model, to set beside Glimpse's GLIMPSE_PROFILE=1 output.

    ort_profile.py MODEL.onnx [--batch 1] [--threads 1] [--runs 200]

Runs the model with SessionOptions.enable_profiling, then sums the "Node" events of the trace by
operator type and by (type, input shape), as milliseconds per run, largest first."""
import argparse
import collections
import json
import os
import tempfile

import numpy as np
import onnxruntime as ort

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("--batch", type=int, default=1)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--runs", type=int, default=200)
args = ap.parse_args()

so = ort.SessionOptions()
so.intra_op_num_threads = args.threads
so.inter_op_num_threads = 1
so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
warm = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
inp = warm.get_inputs()[0]
shape = [args.batch] + [int(d) for d in inp.shape[1:]]
x = np.random.default_rng(0).uniform(-1, 1, size=shape).astype(np.float32)
for _ in range(10):
    warm.run(None, {inp.name: x})

so.enable_profiling = True
so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
# Skip the warm-up runs: keep the node events of the last `runs` model_run events' time span.
sess2 = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
for _ in range(10):
    sess2.run(None, {inp.name: x})
by_type = collections.Counter()
by_shape = collections.Counter()
for _ in range(args.runs):
    sess2.run(None, {inp.name: x})
trace = sess2.end_profiling()
with open(trace) as f:
    events = json.load(f)
runs = [e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"]
runs = runs[-args.runs:]
t0 = runs[0]["ts"] if runs else 0
total_run = sum(e["dur"] for e in runs) / 1000 / max(len(runs), 1)
for e in events:
    if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time") or e["ts"] < t0:
        continue
    a = e.get("args", {})
    op = a.get("op_name", "?")
    shapes = a.get("input_type_shape", [])
    first = list(shapes[0].values())[0] if shapes else []
    wshape = list(shapes[3].values())[0] if op == "QLinearConv" and len(shapes) > 3 else []
    by_type[op] += e["dur"]
    by_shape[(op, str(first), str(wshape))] += e["dur"]
n = max(len(runs), 1)
total = sum(by_type.values()) / 1000 / n
print(f"onnxruntime {ort.__version__}: {os.path.basename(args.model)} batch {args.batch} threads {args.threads}: "
      f"{total_run:.3f} ms per run, {total:.3f} ms in nodes")
for op, us in by_type.most_common():
    print(f"{us / 1000 / n:9.3f} ms {100 * us / 1000 / n / max(total, 1e-9):6.2f}%  {op}")
print("-- by shape --")
for (op, s, w), us in by_shape.most_common():
    print(f"{us / 1000 / n:9.3f} ms  {op} in{s} w{w}")
