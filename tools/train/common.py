"""Shared helpers for the Glimpse training scripts: paths, seeds, datasets, Glimpse's
preprocessing in NumPy, ONNX export and the models/models.json manifest."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import random
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "datasets"
DEFAULT_MODELS = REPO_ROOT / "models"
DEFAULT_CACHE = Path(os.environ.get("GLIMPSE_TRAIN_CACHE", Path.home() / ".cache" / "glimpse-train"))

CIFAR10_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
DIGIT_CLASSES = [str(d) for d in range(10)]

# Preprocessing objects as Glimpse reads them (Sources/GlimpseServing/Registry/ModelDirectory.swift).
# Value written per channel = ((raw 0-255) * scale - mean[c]) / std[c].
DIGITS_PREPROCESSING = {
    "width": 28, "height": 28, "crop": "fill", "channel_order": "gray", "layout": "nchw",
    "scale": 1.0 / 255.0, "mean": [0.1307], "std": [0.3081], "invert": False,
}
CIFAR10_PREPROCESSING = {
    "width": 32, "height": 32, "crop": "center", "channel_order": "rgb", "layout": "nchw",
    "scale": 1.0 / 255.0, "mean": [0.4914, 0.4822, 0.4465], "std": [0.2470, 0.2435, 0.2616], "invert": False,
}


def log(*args) -> None:
    print(time.strftime("%H:%M:%S"), *args, flush=True)


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def seed_everything(seed: int, threads: int) -> None:
    import torch
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)


def dataset_dir(data: str | os.PathLike, name: str, required: list[str]) -> Path:
    root = Path(data)
    folder = root / name
    missing = [f for f in required if not (folder / f).is_file()]
    if missing:
        fail(f"dataset {name!r} not found: {folder} lacks {', '.join(missing)}. "
             f"Pass --data DIR, the folder that holds {name}/ (default: ../shared/datasets beside the repo).")
    return folder


# ---------------------------------------------------------------------------------------------------
# MNIST (IDX files, gzip)

def _read_idx(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    if magic >> 8 != 0x08:
        fail(f"{path}: not an unsigned-byte IDX file (magic {magic:#x})")
    ndim = magic & 0xFF
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


MNIST_FILES = ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
               "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]


def load_mnist(data: str | os.PathLike):
    """(train_x uint8 [60000,28,28], train_y, test_x uint8 [10000,28,28], test_y)."""
    folder = dataset_dir(data, "mnist", MNIST_FILES)
    return tuple(_read_idx(folder / f) for f in MNIST_FILES)


# ---------------------------------------------------------------------------------------------------
# CIFAR-10 as JPEG in tar files: train/<class>/NNNN.jpg, test/<class>/NNNN.jpg

def decode_cifar_tar(path: Path) -> tuple[np.ndarray, np.ndarray]:
    images, labels = [], []
    with tarfile.open(path) as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile() and m.name.lower().endswith(".jpg")),
                         key=lambda m: m.name)
        for m in members:
            parts = m.name.split("/")
            cls = parts[-2]
            if cls not in CIFAR10_CLASSES:
                fail(f"{path}: unexpected class folder {cls!r} in {m.name}")
            raw = tar.extractfile(m).read()
            images.append(glimpse_decode_rgb(raw))
            labels.append(CIFAR10_CLASSES.index(cls))
    return np.stack(images), np.asarray(labels, dtype=np.int64)


def load_cifar10(data: str | os.PathLike, cache: str | os.PathLike):
    """(train_x uint8 [50000,32,32,3], train_y, test_x uint8 [10000,32,32,3], test_y), decoded once
    into an .npz cache keyed by the tar files' size and mtime."""
    folder = dataset_dir(data, "cifar10-jpeg", ["train.tar", "test.tar"])
    cache = Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    out = []
    for split in ("train", "test"):
        tar = folder / f"{split}.tar"
        st = tar.stat()
        key = hashlib.sha1(f"{tar.resolve()}:{st.st_size}:{int(st.st_mtime)}".encode()).hexdigest()[:12]
        npz = cache / f"cifar10-{split}-{key}.npz"
        if npz.is_file():
            with np.load(npz) as z:
                x, y = z["x"], z["y"]
        else:
            log(f"decoding {tar} into {npz} (once)")
            x, y = decode_cifar_tar(tar)
            np.savez(npz, x=x, y=y)
        out += [x, y]
    return tuple(out)


# ---------------------------------------------------------------------------------------------------
# Glimpse's preprocessing, in NumPy/Pillow (Sources/GlimpseImage). Training and eval_onnx.py use
# exactly this, so what the model sees at training time is what Glimpse feeds it.

def _jpeg_scaled(size: int, factor: int) -> int:
    return -(-size // factor)   # TurboJPEG's TJSCALED: ceil(size / factor)


def glimpse_geometry(sw: int, sh: int, spec: dict) -> tuple[int, int, int, int]:
    """Glimpse's CropGeometry (Sources/GlimpseImage/Geometry.swift): the size the upright source is
    resized to and the offset of the output window in it (negative: padding)."""
    w, h = spec["width"], spec["height"]
    mode = spec.get("crop", "center")
    rw, rh = w, h
    if mode == "fit":
        s = min(w / sw, h / sh)
        rw = min(w, max(1, math.floor(sw * s + 0.5)))
        rh = min(h, max(1, math.floor(sh * s + 0.5)))
    elif mode == "center":
        short = spec.get("resize_short_side") or (w if w == h else None)
        if short is not None:
            if sw <= sh:
                rw, rh = short, max(1, int(short * sh / sw))
            else:
                rw, rh = max(1, int(short * sw / sh)), short
        else:
            s = max(w / sw, h / sh)
            rw, rh = max(w, math.floor(sw * s + 0.5)), max(h, math.floor(sh * s + 0.5))
    elif mode != "fill":
        raise ValueError(f"unknown crop mode {mode}")

    def offset(resized: int, out: int) -> int:
        return round((resized - out) / 2) if resized >= out else -((out - resized) // 2)   # round: half-even
    return rw, rh, offset(rw, w), offset(rh, h)


def glimpse_decode_rgb(raw: bytes, spec: dict | None = None) -> np.ndarray:
    """Decode like Glimpse: EXIF orientation applied, alpha composited on white, 8-bit RGB. With `spec`,
    a JPEG is decoded at the DCT scale Glimpse picks (the smallest of 1/2, 1/4, 1/8 still covering
    the resized size), through Pillow's draft()."""
    from PIL import Image, ImageOps
    im = Image.open(io.BytesIO(raw))
    if spec is not None and im.format == "JPEG":
        orientation = im.getexif().get(0x0112, 1)
        w, h = im.size
        if orientation >= 5:
            w, h = h, w
        rw, rh, _, _ = glimpse_geometry(w, h, spec)
        need_w, need_h = min(w, rw), min(h, rh)
        if orientation >= 5:
            need_w, need_h, w, h = need_h, need_w, h, w
        factor = 1
        for f in (2, 4, 8):
            if _jpeg_scaled(w, f) >= need_w and _jpeg_scaled(h, f) >= need_h:
                factor = f
        if factor > 1:
            im.draft(im.mode, (max(1, w // factor), max(1, h // factor)))
    im = ImageOps.exif_transpose(im)
    if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
        im = im.convert("RGBA")
        white = Image.new("RGBA", im.size, (255, 255, 255, 255))
        im = Image.alpha_composite(white, im)
    return np.asarray(im.convert("RGB"))


def glimpse_fit(rgb: np.ndarray, spec: dict) -> tuple[np.ndarray, np.ndarray | None]:
    """Gray conversion (Pillow "L"), then Glimpse's crop geometry with Pillow's BILINEAR resize.
    Returns uint8 [H,W] (gray) or [H,W,3], and where part of the output is padding (fit, or a crop
    larger than the image) a [H,W] mask of the pixels that are image (padding is 0 after
    normalization), else None."""
    from PIL import Image
    w, h = spec["width"], spec["height"]
    im = Image.fromarray(rgb)
    if spec["channel_order"] == "gray":
        im = im.convert("L")
    rw, rh, ox, oy = glimpse_geometry(im.size[0], im.size[1], spec)
    if (rw, rh) != im.size:
        im = im.resize((rw, rh), Image.BILINEAR)
    a = np.asarray(im)
    if ox >= 0 and oy >= 0 and ox + w <= rw and oy + h <= rh:
        return np.ascontiguousarray(a[oy:oy + h, ox:ox + w]), None
    out = np.zeros((h, w) + a.shape[2:], dtype=np.uint8)
    mask = np.zeros((h, w), dtype=bool)
    x0, x1 = max(0, -ox), min(w, rw - ox)
    y0, y1 = max(0, -oy), min(h, rh - oy)
    out[y0:y1, x0:x1] = a[y0 + oy:y1 + oy, x0 + ox:x1 + ox]
    mask[y0:y1, x0:x1] = True
    return out, mask


def glimpse_normalize(pixels: np.ndarray, spec: dict, valid: np.ndarray | None = None) -> np.ndarray:
    """uint8 [N,H,W] or [N,H,W,3] -> float32 NCHW with Glimpse's table:
    ((invert ? 255 - v : v) * scale - mean[c]) / std[c]. Where `valid` ([N,H,W]) is False, 0."""
    v = np.asarray(pixels, dtype=np.float32)
    if spec.get("invert"):
        v = 255.0 - v
    if v.ndim == 3:
        v = v[:, None]
    else:
        if spec["channel_order"] == "bgr":
            v = v[..., ::-1]
        v = v.transpose(0, 3, 1, 2)
    mean = np.asarray(spec["mean"], dtype=np.float32).reshape(1, -1, 1, 1)
    std = np.asarray(spec["std"], dtype=np.float32).reshape(1, -1, 1, 1)
    out = (v * np.float32(spec["scale"]) - mean) / std
    if valid is not None:
        out = np.where(valid[:, None], out, np.float32(0))
    return np.ascontiguousarray(out, dtype=np.float32)


def glimpse_preprocess_bytes(raw: bytes, spec: dict) -> np.ndarray:
    """One encoded image -> float32 [1,C,H,W], as Glimpse would feed the model."""
    pixels, valid = glimpse_fit(glimpse_decode_rgb(raw, spec), spec)
    return glimpse_normalize(pixels[None], spec, None if valid is None else valid[None])


# ---------------------------------------------------------------------------------------------------
# Export and manifest

GLIMPSE_OPS = {
    "Conv", "Gemm", "MatMul", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Relu", "Clip",
    "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Exp", "Neg", "Abs", "Sqrt", "Reciprocal", "LeakyRelu",
    "Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "Sum", "Concat", "Reshape", "Flatten", "Squeeze",
    "Unsqueeze", "Identity", "Dropout", "Softmax", "LogSoftmax", "BatchNormalization", "Shape",
    "ConstantOfShape", "Gather", "Transpose", "Split", "LRN", "Constant",
}


def export_onnx(model, sample_shape: tuple[int, ...], path: Path) -> list[str]:
    """Exports `model` (eval mode; BatchNorm is folded into Conv by constant folding) to ONNX opset 13,
    input "input" and output "logits" with a dynamic batch dimension "batch". Returns the op list."""
    import onnx
    import torch
    model = model.eval().to(memory_format=torch.contiguous_format).float()
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(model, (torch.zeros(*sample_shape),), str(path), dynamo=False, opset_version=13,
                          input_names=["input"], output_names=["logits"], do_constant_folding=True,
                          dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    m = onnx.load(str(path))
    onnx.checker.check_model(m)
    ops = [n.op_type for n in m.graph.node]
    unsupported = sorted(set(ops) - GLIMPSE_OPS)
    if unsupported:
        fail(f"{path}: ops not supported by Glimpse's importer: {unsupported}")
    if "BatchNormalization" in ops:
        fail(f"{path}: BatchNormalization was not folded")
    # Record where the file came from (no timestamps, so a re-run gives the same bytes).
    m.producer_name = "glimpse tools/train"
    onnx.save(m, str(path))
    return ops


def onnx_predict(path: Path, x: np.ndarray, batch: int = 500, threads: int = 2) -> np.ndarray:
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    outs = [sess.run(["logits"], {"input": x[i:i + batch]})[0] for i in range(0, len(x), batch)]
    return np.concatenate(outs)


def update_manifest(models_dir: Path, name: str, entry: dict) -> None:
    """Adds or replaces models.json["models"][name], keeping the other entries."""
    path = models_dir / "models.json"
    root = json.loads(path.read_text()) if path.is_file() else {}
    root.setdefault("models", {})[name] = entry
    root["models"] = dict(sorted(root["models"].items()))
    path.write_text(json.dumps(root, indent=2) + "\n")


def write_labels(models_dir: Path, filename: str, labels: list[str]) -> None:
    (models_dir / filename).write_text("\n".join(labels) + "\n")


def count_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def add_flip_tta(path: Path) -> list[str]:
    """Rewrites the exported model at `path` so that it returns the mean of its logits on the image and
    on its left-right mirror (test-time flip augmentation inside the graph, twice the compute):
    input -> Gather(axis=3, reversed column indices) -> a second copy of every node (same initializers)
    -> Add -> Mul 0.5 -> logits. Only Glimpse-supported ops are added (Gather, Add, Mul)."""
    import onnx
    from onnx import helper, numpy_helper
    m = onnx.load(str(path))
    g = m.graph
    width = g.input[0].type.tensor_type.shape.dim[3].dim_value
    inits = {t.name for t in g.initializer}
    rename = {"input": "input_mirrored"}
    mirrored = []
    for n in g.node:
        c = onnx.NodeProto()
        c.CopyFrom(n)
        c.name = n.name + "_mirrored" if n.name else ""
        c.ClearField("input")
        c.input.extend(x if x in inits or x == "" else rename.get(x, x + "_mirrored") for x in n.input)
        c.ClearField("output")
        for o in n.output:
            rename[o] = o + "_mirrored"
            c.output.append(rename[o])
        mirrored.append(c)
    for n in g.node:                                   # the plain pass now ends in logits_plain
        for i, o in enumerate(n.output):
            if o == "logits":
                n.output[i] = "logits_plain"
    g.initializer.append(numpy_helper.from_array(np.arange(width - 1, -1, -1, dtype=np.int64), "mirror_columns"))
    g.initializer.append(numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"))
    g.node.insert(0, helper.make_node("Gather", ["input", "mirror_columns"], ["input_mirrored"], name="mirror", axis=3))
    g.node.extend(mirrored)
    g.node.extend([helper.make_node("Add", ["logits_plain", "logits_mirrored"], ["logits_sum"], name="tta_add"),
                   helper.make_node("Mul", ["logits_sum", "half"], ["logits"], name="tta_mean")])
    onnx.checker.check_model(m)
    ops = [n.op_type for n in g.node]
    unsupported = sorted(set(ops) - GLIMPSE_OPS)
    if unsupported:
        fail(f"{path}: ops not supported by Glimpse's importer: {unsupported}")
    onnx.save(m, str(path))
    return ops
