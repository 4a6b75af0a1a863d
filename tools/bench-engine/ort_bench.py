#!/usr/bin/env python3
"""onnxruntime side of the engine benchmark: same models, batches, threads and timing rule as the
Swift runner (3 warm-up runs, then runs for >= SECONDS and >= 5 runs, median). JSON lines out.

With --serve it reads requests "THREADS BATCH SECONDS MODEL.onnx" from stdin instead, one JSON line
back each ("{}" where the model does not take that batch); a repeated request runs once untimed
first, as the other engine may have run in between (tools/bench-engine/paired.py)."""
import json
import sys
import time

import numpy as np
import onnxruntime as ort

sessions = {}
warmed = set()


def session(path, threads):
    key = (path, threads)
    if key not in sessions:
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        sessions[key] = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    return sessions[key]


def measure(path, threads, batch, seconds):
    """One measurement as a dict, or None where the model's batch is fixed to another size."""
    sess = session(path, threads)
    inp = sess.get_inputs()[0]
    if isinstance(inp.shape[0], int) and batch != inp.shape[0]:
        return None
    shape = [batch] + [int(d) for d in inp.shape[1:]]
    dtype = np.float16 if "float16" in inp.type else np.float32
    x = np.random.default_rng(0).uniform(-1, 1, size=shape).astype(dtype)
    key = (path, threads, batch)
    for _ in range(1 if key in warmed else 3):
        sess.run(None, {inp.name: x})
    warmed.add(key)
    times = []
    start = time.perf_counter()
    while (time.perf_counter() - start < seconds or len(times) < 5) and len(times) < 2000:
        t0 = time.perf_counter()
        sess.run(None, {inp.name: x})
        times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    return {"model": path.split("/")[-1], "batch": batch, "threads": threads,
            "median_ms": round(med * 1000, 3), "img_s": round(batch / med, 1), "runs": len(times)}


def main():
    args = sys.argv[1:]
    batches, threads, seconds, models, serve = [1, 8, 32], [1, 2], 2.0, [], False
    while args:
        a = args.pop(0)
        if a == "--batches":
            batches = [int(x) for x in args.pop(0).split(",")]
        elif a == "--threads":
            threads = [int(x) for x in args.pop(0).split(",")]
        elif a == "--seconds":
            seconds = float(args.pop(0))
        elif a == "--serve":
            serve = True
        else:
            models.append(a)
    if serve:
        for line in sys.stdin:
            parts = line.strip().split(" ", 3)
            try:
                r = measure(parts[3], int(parts[0]), int(parts[1]), float(parts[2]))
            except (IndexError, ValueError) as e:
                r = {"error": f"bad request: {e}"}
            print(json.dumps(r if r is not None else {}), flush=True)
        return
    for path in models:
        for t in threads:
            for b in batches:
                r = measure(path, t, b, seconds)
                if r is not None:
                    print(json.dumps(r), flush=True)
            sessions.pop((path, t), None)


if __name__ == "__main__":
    main()
