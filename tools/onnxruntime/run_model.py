#!/usr/bin/env python3
"""Runs an ONNX model in onnxruntime on raw float32 inputs, for tests that compare it with Glimpse.

    run_model.py MODEL.onnx INPUTS.f32 OUTPUTS.f32 --shape 4,3,32,32 [--threads 1]

INPUTS.f32 holds the model's single input as little-endian float32 in the given shape (batch
first). The first output is written as float32 to OUTPUTS.f32, and its shape printed as JSON.
Graph optimizations run at onnxruntime's default level, so QDQ models run on its int8 kernels.
"""
import argparse
import json
import sys

import numpy as np
import onnxruntime as ort


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("inputs")
    p.add_argument("outputs")
    p.add_argument("--shape", required=True)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    shape = [int(d) for d in a.shape.split(",")]
    x = np.fromfile(a.inputs, dtype="<f4").reshape(shape)
    options = ort.SessionOptions()
    options.intra_op_num_threads = a.threads
    session = ort.InferenceSession(a.model, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    y = session.run(None, {name: x})[0].astype("<f4")
    y.tofile(a.outputs)
    print(json.dumps({"shape": list(y.shape), "onnxruntime": ort.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
