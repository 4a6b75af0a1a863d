#!/usr/bin/env python3
"""Trains Glimpse's `digits` models on MNIST (../shared/datasets/mnist, IDX files) on the CPU and exports
them to models/digits-<variant>.onnx with their models.json entry.

  large: LeNet-style CNN: conv 5x5 (32) - max pool - conv 5x5 (64) - max pool - fc 128 - fc 10.
  small: the same layout with 8 and 16 channels and a 32-unit hidden layer.

Input: 28x28 grayscale, white digit on black (MNIST's own polarity), value = (v/255 - 0.1307) / 0.3081,
the normalization Glimpse applies from the models.json entry. Recipe: AdamW with a one-cycle learning
rate, label smoothing 0.1, BatchNorm after each conv (folded into the conv at export), random shifts of
up to 2 pixels.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX512_CORE_BF16")  # see README: AMX kernels trap on some VMs

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import common

VARIANTS = {
    "large": dict(c1=32, c2=64, hidden=128, epochs=8, batch=128, lr=3e-3),
    "small": dict(c1=8, c2=16, hidden=32, epochs=6, batch=128, lr=5e-3),
}


class LeNet(nn.Module):
    def __init__(self, c1: int, c2: int, hidden: int, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, c1, 5, padding=2, bias=False), nn.BatchNorm2d(c1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, 5, bias=False), nn.BatchNorm2d(c2), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Flatten())
        self.classifier = nn.Sequential(
            nn.Linear(c2 * 5 * 5, hidden), nn.ReLU(inplace=True), nn.Dropout(0.25), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def to_input(x_uint8: torch.Tensor, spec: dict) -> torch.Tensor:
    """uint8 [N,28,28] -> float [N,1,28,28] with Glimpse's table ((v * scale) - mean) / std."""
    return ((x_uint8.float() * spec["scale"] - spec["mean"][0]) / spec["std"][0]).unsqueeze(1)


def shift(batch: torch.Tensor, gen: torch.Generator, max_shift: int = 2) -> torch.Tensor:
    """Random translation by up to `max_shift` pixels (zero = black background fill), uint8 [N,28,28]."""
    n = batch.shape[0]
    p = max_shift
    padded = F.pad(batch, (p, p, p, p))
    dx = torch.randint(0, 2 * p + 1, (n,), generator=gen)
    dy = torch.randint(0, 2 * p + 1, (n,), generator=gen)
    ar = torch.arange(28)
    rows = (dy[:, None] + ar)[:, :, None]
    cols = (dx[:, None] + ar)[:, None, :]
    return padded[torch.arange(n)[:, None, None], rows, cols]


def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, spec: dict, batch: int = 1000) -> float:
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            correct += (model(to_input(x[i:i + batch], spec)).argmax(1) == y[i:i + batch]).sum().item()
    return correct / len(x)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variant", choices=sorted(VARIANTS), required=True)
    p.add_argument("--data", default=str(common.DEFAULT_DATA), help="folder holding mnist/ (default: %(default)s)")
    p.add_argument("--models", default=str(common.DEFAULT_MODELS), help="output folder (default: %(default)s)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: on a shared 2-vCPU VM one thread was faster than two)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, help="override the variant's epoch count")
    p.add_argument("--no-export", action="store_true")
    args = p.parse_args()

    cfg = dict(VARIANTS[args.variant])
    if args.epochs:
        cfg["epochs"] = args.epochs
    common.seed_everything(args.seed, args.threads)
    spec = common.DIGITS_PREPROCESSING

    tx, ty, vx, vy = (torch.from_numpy(a.astype(np.int64) if a.ndim == 1 else a.copy()) for a in common.load_mnist(args.data))
    model = LeNet(cfg["c1"], cfg["c2"], cfg["hidden"])
    params = common.count_params(model)
    common.log(f"digits-{args.variant}: {cfg}, {params} parameters, threads={args.threads}")

    batch, epochs = cfg["batch"], cfg["epochs"]
    steps_per_epoch = len(tx) // batch
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg["lr"], total_steps=epochs * steps_per_epoch,
                                                pct_start=0.2, anneal_strategy="linear", div_factor=20,
                                                final_div_factor=200)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    gen = torch.Generator().manual_seed(args.seed)

    start = time.time()
    for epoch in range(epochs):
        model.train()
        t0 = time.time()
        perm = torch.randperm(len(tx), generator=gen)
        loss_sum = 0.0
        for b in range(steps_per_epoch):
            idx = perm[b * batch:(b + 1) * batch]
            loss = criterion(model(to_input(shift(tx[idx], gen), spec)), ty[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.item()
        acc = evaluate(model, vx, vy, spec)
        common.log(f"epoch {epoch + 1}/{epochs} loss {loss_sum / steps_per_epoch:.4f} test {acc:.4f} ({time.time() - t0:.0f} s)")
    train_seconds = time.time() - start
    acc = evaluate(model, vx, vy, spec)
    common.log(f"PyTorch test accuracy: {acc:.4f}; training {train_seconds:.0f} s")
    if args.no_export:
        return

    models = Path(args.models)
    name = f"digits-{args.variant}"
    path = models / f"{name}.onnx"
    ops = common.export_onnx(model, (1, 1, 28, 28), path)
    x_test = common.glimpse_normalize(vx.numpy(), spec)
    logits = common.onnx_predict(path, x_test, threads=args.threads)
    ort_acc = float((logits.argmax(1) == vy.numpy()).mean())
    with torch.no_grad():
        ref = model.eval()(torch.from_numpy(x_test[:256])).numpy()
    diff = float(np.abs(ref - logits[:256]).max())
    common.log(f"onnxruntime test accuracy: {ort_acc:.4f}; max |torch - ort| logits on 256 images: {diff:.2e}; ops {sorted(set(ops))}")

    common.write_labels(models, "digits.labels.txt", common.DIGIT_CLASSES)
    common.update_manifest(models, name, {
        "file": f"{name}.onnx",
        "family": "digits",
        "variant": args.variant,
        "version": "1",
        "labels": "digits.labels.txt",
        "preprocessing": spec,
        "accuracy": round(ort_acc, 4),
        "accuracy_dataset": "MNIST test split, 10,000 images (../shared/datasets/mnist)",
        "parameters": params,
        "size_bytes": path.stat().st_size,
        "latency_ms": None,
        "architecture": f"LeNet-style: conv5x5({cfg['c1']}) pool conv5x5({cfg['c2']}) pool fc({cfg['hidden']}) fc(10)",
        "training": {"script": "tools/train/train_digits.py", "args": f"--variant {args.variant}" + (f" --epochs {epochs}" if epochs != VARIANTS[args.variant]["epochs"] else ""),
                     "epochs": epochs, "seed": args.seed, "seconds": round(train_seconds),
                     "pytorch_accuracy": round(acc, 4)},
    })
    common.log(f"wrote {path} ({path.stat().st_size} bytes) and its models.json entry")


if __name__ == "__main__":
    main()
