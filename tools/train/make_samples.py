#!/usr/bin/env python3
"""Writes models/samples/: a few test-split images per family, named by their true label
(digit-7.png, cifar10-cat.jpg). For each chosen class it takes the first test image (in file order)
that every exported variant of the family classifies correctly through Glimpse's preprocessing, so the
samples double as a smoke test. Digits are written as 8-bit grayscale PNG from the IDX bytes; CIFAR-10
samples are the original JPEG bytes from test.tar (no re-encoding)."""

from __future__ import annotations

import argparse
import json
import tarfile
from pathlib import Path

import numpy as np

import common
import eval_onnx

DIGITS = [0, 2, 4, 7, 9]
CIFAR = ["airplane", "automobile", "cat", "horse", "ship"]


def variants(models: Path, family: str) -> list[tuple[Path, dict]]:
    manifest = json.loads((models / "models.json").read_text())["models"]
    out = [(models / Path(e["file"]).name, eval_onnx.resolve_spec(e["preprocessing"]))
           for _, e in sorted(manifest.items()) if e.get("family") == family]
    if not out:
        common.fail(f"no {family} models in {models / 'models.json'}: train them first")
    return out


def all_correct(raw: bytes, label: int, family_models) -> bool:
    for path, spec in family_models:
        x = common.glimpse_preprocess_bytes(raw, spec)
        if int(common.onnx_predict(path, x).argmax()) != label:
            return False
    return True


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--models", default=str(common.DEFAULT_MODELS))
    p.add_argument("--data", default=str(common.DEFAULT_DATA))
    args = p.parse_args()
    models = Path(args.models)
    out = models / "samples"
    out.mkdir(parents=True, exist_ok=True)

    from PIL import Image
    import io
    digit_models = variants(models, "digits")
    _, _, x, y = common.load_mnist(args.data)
    for d in DIGITS:
        for i in np.flatnonzero(y == d):
            buf = io.BytesIO()
            Image.fromarray(x[i]).save(buf, format="PNG", optimize=True)
            if all_correct(buf.getvalue(), d, digit_models):
                (out / f"digit-{d}.png").write_bytes(buf.getvalue())
                common.log(f"digit-{d}.png: MNIST test image {i}")
                break

    cifar_models = variants(models, "cifar10")
    folder = common.dataset_dir(args.data, "cifar10-jpeg", ["test.tar"])
    with tarfile.open(folder / "test.tar") as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile() and m.name.endswith(".jpg")), key=lambda m: m.name)
        for cls in CIFAR:
            label = common.CIFAR10_CLASSES.index(cls)
            for m in (m for m in members if m.name.split("/")[-2] == cls):
                raw = tar.extractfile(m).read()
                if all_correct(raw, label, cifar_models):
                    (out / f"cifar10-{cls}.jpg").write_bytes(raw)
                    common.log(f"cifar10-{cls}.jpg: {m.name}")
                    break


if __name__ == "__main__":
    main()
