#!/usr/bin/env python3
"""Runs an ONNX model in onnxruntime on raw float32 inputs, for tests that compare it with Glimpse.

    run_model.py MODEL.onnx INPUTS.f32 OUTPUTS.f32 --shape 4,3,32,32 [--threads 1] [--native-int8]

INPUTS.f32 holds the model's single input as little-endian float32 in the given shape (batch
first). The first output is written as float32 to OUTPUTS.f32, and its shape printed as JSON.
Graph optimizations run at onnxruntime's default level, so QDQ models run on its int8 kernels.

Exact int8 on every CPU. Without VNNI, onnxruntime multiplies uint8 activations by int8 weights with
`vpmaddubsw`, which saturates when a pair of products leaves the int16 range: on an AVX2-only AMD Zen 3
its logits for the zoo's mobilenetv2-12-int8 differ from its own VNNI results by up to 4.16. Its
uint8 x uint8 kernels widen to 16 bits (`vpmaddwd`) and are exact everywhere. So by default every
int8 weight tensor (with its int8 zero point) of QLinearConv, QLinearMatMul, QGemm and
DequantizeLinear is rewritten as uint8 with 128 added to both: the same real values
((w + 128) - (z + 128)) * scale, computed exactly. With the rewrite, onnxruntime's output for that
model on an AVX2-only CPU equals the stored reference computed on a VNNI machine (max |diff| 0.0).
--native-int8 runs the file as it is.
"""
import argparse
import json
import sys

import numpy as np
import onnxruntime as ort


def int8_weights_as_uint8(path):
    """The model's bytes with its int8 weights and zero points rewritten as uint8 (see above),
    and how many tensors were rewritten."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(path)
    inits = {i.name: i for i in model.graph.initializer}
    pairs = []
    for node in model.graph.node:
        if node.op_type in ("QLinearConv", "QLinearMatMul", "QGemm") and len(node.input) > 5:
            pairs.append((node.input[3], node.input[5]))
        elif node.op_type == "DequantizeLinear" and len(node.input) > 2:
            pairs.append((node.input[0], node.input[2]))
    done = set()
    for value, zero_point in pairs:
        tensors = [inits.get(value), inits.get(zero_point)]
        if any(t is None or t.data_type != onnx.TensorProto.INT8 for t in tensors):
            continue
        for t in tensors:
            if t.name in done:
                continue
            shifted = numpy_helper.to_array(t).astype(np.int16) + 128
            t.CopyFrom(numpy_helper.from_array(shifted.astype(np.uint8), t.name))
            done.add(t.name)
    return model.SerializeToString(), len(done)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("inputs")
    p.add_argument("outputs")
    p.add_argument("--shape", required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--native-int8", action="store_true", help="run int8 weights as they are (saturates on AVX2)")
    a = p.parse_args()
    shape = [int(d) for d in a.shape.split(",")]
    x = np.fromfile(a.inputs, dtype="<f4").reshape(shape)
    options = ort.SessionOptions()
    options.intra_op_num_threads = a.threads
    model, rewritten = (a.model, 0) if a.native_int8 else int8_weights_as_uint8(a.model)
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    y = session.run(None, {name: x})[0].astype("<f4")
    y.tofile(a.outputs)
    print(json.dumps({"shape": list(y.shape), "onnxruntime": ort.__version__, "int8_tensors_as_uint8": rewritten}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
