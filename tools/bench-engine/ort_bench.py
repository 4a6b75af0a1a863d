#!/usr/bin/env python3
"""onnxruntime side of the engine benchmark: same models, batches, threads and timing rule as the
Swift runner (3 warm-up runs, then runs for >= SECONDS and >= 5 runs, median). JSON lines out."""
import json
import sys
import time

import numpy as np
import onnxruntime as ort


def main():
    args = sys.argv[1:]
    batches, threads, seconds, models = [1, 8, 32], [1, 2], 2.0, []
    while args:
        a = args.pop(0)
        if a == "--batches":
            batches = [int(x) for x in args.pop(0).split(",")]
        elif a == "--threads":
            threads = [int(x) for x in args.pop(0).split(",")]
        elif a == "--seconds":
            seconds = float(args.pop(0))
        else:
            models.append(a)
    for path in models:
        for t in threads:
            so = ort.SessionOptions()
            so.intra_op_num_threads = t
            so.inter_op_num_threads = 1
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            inp = sess.get_inputs()[0]
            fixed = isinstance(inp.shape[0], int)
            for b in batches:
                if fixed and b != inp.shape[0]:
                    continue
                shape = [b] + [int(d) for d in inp.shape[1:]]
                dtype = np.float16 if "float16" in inp.type else np.float32
                x = np.random.default_rng(0).uniform(-1, 1, size=shape).astype(dtype)
                for _ in range(3):
                    sess.run(None, {inp.name: x})
                times = []
                start = time.perf_counter()
                while (time.perf_counter() - start < seconds or len(times) < 5) and len(times) < 2000:
                    t0 = time.perf_counter()
                    sess.run(None, {inp.name: x})
                    times.append(time.perf_counter() - t0)
                times.sort()
                med = times[len(times) // 2]
                print(json.dumps({"model": path.split("/")[-1], "batch": b, "threads": t,
                                  "median_ms": round(med * 1000, 3), "img_s": round(b / med, 1),
                                  "runs": len(times)}), flush=True)


if __name__ == "__main__":
    main()
