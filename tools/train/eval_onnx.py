#!/usr/bin/env python3
"""Test-set accuracy of an exported model with onnxruntime, using Glimpse's preprocessing exactly as the
model's models.json entry describes it (decode, EXIF, alpha on white, gray "L", crop mode with Pillow
BILINEAR, ((v * scale) - mean) / std). A cross-check of the engine-independent part; `glimpse` has its
own engine.

  python eval_onnx.py --model cifar10-large            # test split of the model's family
  python eval_onnx.py --model digits-small --image ../../models/samples/digit-7.png
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
from pathlib import Path

import numpy as np

import common

PRESETS = {
    "mnist": {"width": 28, "height": 28, "crop": "fill", "channel_order": "gray", "scale": 1.0,
              "mean": [0.0], "std": [1.0]},
    "imagenet": {"width": 224, "height": 224, "resize_short_side": 256, "crop": "center", "channel_order": "rgb",
                 "scale": 1 / 255, "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]},
}
PRESETS["torch"] = PRESETS["imagenet"]


def resolve_spec(pre) -> dict:
    if isinstance(pre, str):
        return dict(PRESETS[pre])
    spec = dict(PRESETS[pre["preset"]]) if "preset" in pre else {
        "width": 224, "height": 224, "crop": "center", "channel_order": "rgb", "scale": 1 / 255,
        "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0]}
    spec.update(pre)
    return spec


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def test_split(family: str, data: str, spec: dict, limit: int | None):
    """Preprocessed test images and labels of a family's dataset, through Glimpse's pipeline."""
    if family == "digits":
        _, _, x, y = common.load_mnist(data)
        if limit:
            x, y = x[:limit], y[:limit]
        # The IDX bytes are the decoded gray image (what a lossless PNG of it decodes to).
        fitted = np.stack([common.glimpse_fit(img, spec)[0] for img in x])
        return common.glimpse_normalize(fitted, spec), y.astype(np.int64)
    if family == "cifar10":
        folder = common.dataset_dir(data, "cifar10-jpeg", ["test.tar"])
        xs, ys = [], []
        with tarfile.open(folder / "test.tar") as tar:
            members = sorted((m for m in tar.getmembers() if m.isfile() and m.name.endswith(".jpg")),
                             key=lambda m: m.name)
            for m in members[:limit] if limit else members:
                xs.append(common.glimpse_preprocess_bytes(tar.extractfile(m).read(), spec)[0])
                ys.append(common.CIFAR10_CLASSES.index(m.name.split("/")[-2]))
        return np.stack(xs), np.asarray(ys, dtype=np.int64)
    common.fail(f"no test split known for family {family!r} (known: digits, cifar10)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="entry name in models.json, e.g. cifar10-large")
    p.add_argument("--models", default=str(common.DEFAULT_MODELS), help="model folder (default: %(default)s)")
    p.add_argument("--data", default=str(common.DEFAULT_DATA), help="datasets folder (default: %(default)s)")
    p.add_argument("--image", action="append", help="print the top-5 of these image files instead")
    p.add_argument("--limit", type=int, help="only the first N test images")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()

    models = Path(args.models)
    manifest = json.loads((models / "models.json").read_text())["models"]
    if args.model not in manifest:
        common.fail(f"{args.model} is not in {models / 'models.json'} (has: {', '.join(sorted(manifest))})")
    entry = manifest[args.model]
    spec = resolve_spec(entry["preprocessing"])
    onnx_path = models / Path(entry["file"]).name
    labels_file = models / entry.get("labels", Path(entry["file"]).stem + ".labels.txt")
    labels = labels_file.read_text().split("\n") if labels_file.is_file() else []

    if args.image:
        for image in args.image:
            x = common.glimpse_preprocess_bytes(Path(image).read_bytes(), spec)
            prob = softmax(common.onnx_predict(onnx_path, x, threads=args.threads))[0]
            top = np.argsort(-prob, kind="stable")[:5]
            print(image + ": " + ", ".join(f"{labels[i] if i < len(labels) else i} ({i}) {prob[i]:.6f}" for i in top))
        return

    family = entry.get("family", args.model)
    x, y = test_split(family, args.data, spec, args.limit)
    logits = common.onnx_predict(onnx_path, x, threads=args.threads)
    acc = float((logits.argmax(1) == y).mean())
    print(f"{args.model}: onnxruntime accuracy {acc:.4f} on {len(y)} {family} test images "
          f"({int((logits.argmax(1) == y).sum())} correct)")
    recorded = entry.get("accuracy")
    if recorded is not None and args.limit is None and abs(recorded - acc) > 5e-4:
        print(f"warning: models.json records accuracy {recorded}", file=sys.stderr)


if __name__ == "__main__":
    main()
