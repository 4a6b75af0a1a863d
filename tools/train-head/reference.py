"""Reference for `glimpse train`: scikit-learn's LogisticRegression on features that onnxruntime
extracts with the same base model, from Pillow 224x224 resizes.

    reference.py MODEL.onnx TRAIN.tar TEST.tar [--per-class 500] [--c 0.01]

MODEL.onnx is a file `glimpse train` wrote: its graph computes the base's pooled feature vector as
the tensor `glimpse_features`, which this script makes the output (the head's Gemm and Softmax
removed), so
both sides read the same features of the same base. Prints the test accuracy and the time taken,
as one JSON line."""
import argparse, io, json, sys, tarfile, tempfile, time

import numpy as np
import onnx
import onnxruntime as ort
from PIL import Image
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(3, 1, 1)


def images(path, per_class=None):
    """(label, HWC uint8 array) of every JPEG of a tar of <split>/<label>/<file> members, in order."""
    counts = {}
    with tarfile.open(path) as tar:
        for member in tar:
            if not member.isfile() or not member.name.lower().endswith((".jpg", ".jpeg", ".png")):
                continue
            label = member.name.split("/")[-2]
            if per_class is not None and counts.get(label, 0) >= per_class:
                continue
            counts[label] = counts.get(label, 0) + 1
            data = tar.extractfile(member).read()
            yield label, Image.open(io.BytesIO(data)).convert("RGB")


def features(session, samples, batch=64):
    labels, rows, chunk = [], [], []
    def flush():
        if chunk:
            rows.append(session.run(["glimpse_features"], {session.get_inputs()[0].name: np.stack(chunk)})[0])
            chunk.clear()
    for label, image in samples:
        x = np.asarray(image.resize((224, 224), Image.BILINEAR), dtype=np.float32).transpose(2, 0, 1) / 255.0
        chunk.append((x - MEAN) / STD)
        labels.append(label)
        if len(chunk) == batch:
            flush()
    flush()
    return np.concatenate(rows).reshape(len(labels), -1), labels


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("train")
    p.add_argument("test")
    p.add_argument("--per-class", type=int, default=500)
    p.add_argument("--c", type=float, default=0.01)
    a = p.parse_args()
    start = time.time()
    with tempfile.NamedTemporaryFile(suffix=".onnx") as cut:
        model = onnx.load(a.model)
        head = [n for n in model.graph.node if n.name in ("glimpse_head_gemm", "glimpse_head_softmax")]
        width = [i.dims[1] for i in model.graph.initializer if i.name == "glimpse_head_weight"][0]
        for n in head:
            model.graph.node.remove(n)
        for t in [t for t in model.graph.initializer if t.name.startswith("glimpse_head_")]:
            model.graph.initializer.remove(t)
        del model.graph.output[:]
        model.graph.output.append(onnx.helper.make_tensor_value_info("glimpse_features", onnx.TensorProto.FLOAT, ["N", width]))
        onnx.save(model, cut.name)
        options = ort.SessionOptions()
        session = ort.InferenceSession(cut.name, options, providers=["CPUExecutionProvider"])
        x_train, y_train = features(session, images(a.train, a.per_class))
        extracted = time.time() - start
        x_test, y_test = features(session, images(a.test))
    scaler = StandardScaler().fit(x_train)
    fit_start = time.time()
    classifier = LogisticRegression(C=a.c, max_iter=2000).fit(scaler.transform(x_train), y_train)
    fitted = time.time() - fit_start
    accuracy = float((classifier.predict(scaler.transform(x_test)) == np.array(y_test)).mean())
    print(json.dumps({"reference": "scikit-learn LogisticRegression, standardized features, onnxruntime extraction",
                      "C": a.c, "train_images": len(y_train), "test_images": len(y_test), "features": x_train.shape[1],
                      "test_accuracy": round(accuracy, 4), "extract_train_seconds": round(extracted, 1),
                      "fit_seconds": round(fitted, 1)}))


if __name__ == "__main__":
    sys.exit(main())
