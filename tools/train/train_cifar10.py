#!/usr/bin/env python3
"""Trains Glimpse's `cifar10` models on CIFAR-10 (the JPEG copy in ../shared/datasets/cifar10-jpeg) on
the CPU and exports them to models/cifar10-<variant>.onnx with their models.json entry.

  large: ResNet-9 (Myrtle/DAWNBench layout) at width 16, a quarter of the original's channels: prep
         conv, three stages with max pooling, residual blocks after stages 1 and 3, global max pool, linear head. The exported graph runs
         the network on the image and on its mirror image and averages the logits (Gather, Add, Mul):
         twice the compute, +1.1 points of test accuracy (87.30 -> 88.39).
  small: a plain 4-conv CNN that pools after every conv (16-32-64-128 channels at 32-16-8-4 pixels),
         so little work happens at full resolution; global max pool, linear head.

Recipe: SGD with Nesterov momentum, one-cycle learning rate (linear up, linear down), label smoothing,
BatchNorm (folded into the convolutions at export), random crop (reflect pad 4) and horizontal flip,
float32 NCHW (bfloat16 autocast, --bf16, was slower on the 2-core AVX-512 VM these were trained on, and
oneDNN's AMX kernels crash there with an illegal instruction: the hypervisor does not enable AMX).
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
    # width (channels of the first conv), residual blocks, epochs, batch, peak lr, layout,
    # tta: the exported graph also runs the mirror image and averages the logits
    "large": dict(width=16, residual=True, epochs=20, batch=512, lr=0.4, tta=True),
    "small": dict(width=16, residual=False, epochs=8, batch=512, lr=0.4, arch="pool-first"),
}


def conv_bn(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Residual(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.body = nn.Sequential(conv_bn(c, c), conv_bn(c, c))

    def forward(self, x):
        return x + self.body(x)


class ResNet9(nn.Module):
    def __init__(self, width: int = 64, residual: bool = True, classes: int = 10, head_scale: float = 0.125):
        super().__init__()
        c = width
        self.features = nn.Sequential(
            conv_bn(3, c),
            conv_bn(c, 2 * c), nn.MaxPool2d(2), Residual(2 * c) if residual else nn.Identity(),
            conv_bn(2 * c, 4 * c), nn.MaxPool2d(2),
            conv_bn(4 * c, 8 * c), nn.MaxPool2d(2), Residual(8 * c) if residual else nn.Identity(),
            nn.AdaptiveMaxPool2d(1), nn.Flatten())
        self.head = nn.Linear(8 * c, classes)
        self.head_scale = head_scale

    def forward(self, x):
        return self.head(self.features(x)) * self.head_scale


class SmallCNN(nn.Module):
    """conv-pool x4 with widths c, 2c, 4c, 8c; about a sixth of the large model's multiply-adds."""

    def __init__(self, width: int = 16, classes: int = 10, head_scale: float = 0.125):
        super().__init__()
        c = width
        self.features = nn.Sequential(
            conv_bn(3, c), nn.MaxPool2d(2),
            conv_bn(c, 2 * c), nn.MaxPool2d(2),
            conv_bn(2 * c, 4 * c), nn.MaxPool2d(2),
            conv_bn(4 * c, 8 * c),
            nn.AdaptiveMaxPool2d(1), nn.Flatten())
        self.head = nn.Linear(8 * c, classes)
        self.head_scale = head_scale

    def forward(self, x):
        return self.head(self.features(x)) * self.head_scale


class Exportable(nn.Module):
    """The trained network with the head scale folded into the linear layer and nn.Identity dropped,
    so the ONNX graph is Conv/Relu/MaxPool/Add/GlobalMaxPool/Flatten/Gemm only."""

    def __init__(self, net: nn.Module):
        super().__init__()
        self.features = nn.Sequential(*[m for m in net.features if not isinstance(m, nn.Identity)])
        self.features[-2] = nn.AdaptiveMaxPool2d(1)
        self.head = nn.Linear(net.head.in_features, net.head.out_features)
        with torch.no_grad():
            self.head.weight.copy_(net.head.weight * net.head_scale)
            self.head.bias.copy_(net.head.bias * net.head_scale)

    def forward(self, x):
        return self.head(self.features(x))


def to_input(x_uint8: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """uint8 NHWC -> normalized float NCHW, exactly Glimpse's table."""
    x = x_uint8.permute(0, 3, 1, 2).float()
    return (x * (1.0 / 255.0) - mean) / std


def augment(batch: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Random crop 32x32 from a reflect-padded 40x40 image and random horizontal flip (uint8 NHWC)."""
    n = batch.shape[0]
    padded = F.pad(batch.permute(0, 3, 1, 2).float(), (4, 4, 4, 4), mode="reflect")
    dx = torch.randint(0, 9, (n,), generator=gen)
    dy = torch.randint(0, 9, (n,), generator=gen)
    flip = torch.rand(n, generator=gen) < 0.5
    ar = torch.arange(32)
    rows = (dy[:, None] + ar[None, :])                       # n,32
    cols = (dx[:, None] + ar[None, :])                       # n,32
    cols = torch.where(flip[:, None], cols.flip(1), cols)
    idx_n = torch.arange(n)[:, None, None]
    out = padded.permute(0, 2, 3, 1)[idx_n, rows[:, :, None], cols[:, None, :]]   # n,32,32,3
    return out.to(torch.uint8)


def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, mean, std, bf16: bool, batch: int = 1000) -> float:
    model.eval()
    correct = 0
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        for i in range(0, len(x), batch):
            logits = model(to_input(x[i:i + batch], mean, std))
            correct += (logits.argmax(1) == y[i:i + batch]).sum().item()
    return correct / len(x)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variant", choices=sorted(VARIANTS), required=True)
    p.add_argument("--data", default=str(common.DEFAULT_DATA), help="folder holding cifar10-jpeg/ (default: %(default)s)")
    p.add_argument("--cache", default=str(common.DEFAULT_CACHE), help="where the decoded uint8 arrays go (default: %(default)s)")
    p.add_argument("--models", default=str(common.DEFAULT_MODELS), help="output folder (default: %(default)s)")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: on a shared 2-vCPU VM one thread was faster than two)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, help="override the variant's epoch count")
    p.add_argument("--width", type=int, help="override the variant's width")
    p.add_argument("--bf16", action="store_true", help="train under bfloat16 autocast instead of float32")
    p.add_argument("--bench", type=int, default=0, metavar="STEPS", help="only time STEPS training steps and exit")
    p.add_argument("--no-export", action="store_true")
    args = p.parse_args()

    cfg = dict(VARIANTS[args.variant])
    if args.epochs:
        cfg["epochs"] = args.epochs
    if args.width:
        cfg["width"] = args.width
    common.seed_everything(args.seed, args.threads)
    bf16 = args.bf16

    tx, ty, vx, vy = (torch.from_numpy(a) for a in common.load_cifar10(args.data, args.cache))
    spec = common.CIFAR10_PREPROCESSING
    mean = torch.tensor(spec["mean"]).view(1, 3, 1, 1)
    std = torch.tensor(spec["std"]).view(1, 3, 1, 1)

    if cfg.get("arch") == "pool-first":
        model = SmallCNN(cfg["width"])
    else:
        model = ResNet9(cfg["width"], cfg["residual"])
    params = common.count_params(model)
    common.log(f"cifar10-{args.variant}: {cfg}, {params} parameters, bf16={bf16}, threads={args.threads}")

    batch, epochs = cfg["batch"], cfg["epochs"]
    steps_per_epoch = len(tx) // batch          # drop the last partial batch
    total = epochs * steps_per_epoch
    opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9, nesterov=True, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg["lr"], total_steps=total, pct_start=0.25,
                                                anneal_strategy="linear", div_factor=20, final_div_factor=200,
                                                three_phase=False, cycle_momentum=False)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.2)
    gen = torch.Generator().manual_seed(args.seed)

    start = time.time()
    step = 0
    for epoch in range(epochs):
        model.train()
        t0 = time.time()
        perm = torch.randperm(len(tx), generator=gen)
        loss_sum = 0.0
        for b in range(steps_per_epoch):
            idx = perm[b * batch:(b + 1) * batch]
            xb = to_input(augment(tx[idx], gen), mean, std)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = criterion(model(xb).float(), ty[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.item()
            step += 1
            if args.bench and step == 2:
                tb = time.time()
            if args.bench and step == args.bench + 2:
                per = (time.time() - tb) / args.bench
                common.log(f"bench: {per:.3f} s/step, {per * steps_per_epoch:.0f} s/epoch estimated")
                return
        acc = evaluate(model, vx, vy, mean, std, bf16) if (epoch == epochs - 1 or epoch % 4 == 3) else float("nan")
        common.log(f"epoch {epoch + 1}/{epochs} loss {loss_sum / steps_per_epoch:.4f} "
                   f"test {acc:.4f} ({time.time() - t0:.0f} s)")
    train_seconds = time.time() - start

    acc = evaluate(model, vx, vy, mean, std, False)
    common.log(f"PyTorch test accuracy (float32): {acc:.4f}; training {train_seconds:.0f} s")
    if args.no_export:
        return

    models = Path(args.models)
    name = f"cifar10-{args.variant}"
    path = models / f"{name}.onnx"
    Path(args.cache).mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), Path(args.cache) / f"{name}-seed{args.seed}.pt")
    export = Exportable(model.float().eval()).eval()
    ops = common.export_onnx(export, (1, 3, 32, 32), path)
    x_test = common.glimpse_normalize(vx.numpy(), spec)
    with torch.no_grad():
        ref = export(torch.from_numpy(x_test[:256])).numpy()
    logits = common.onnx_predict(path, x_test[:256], threads=args.threads)
    common.log(f"max |torch - ort| logits on 256 images: {float(np.abs(ref - logits).max()):.2e}; ops {sorted(set(ops))}")
    record(models, args.variant, cfg, args.seed, params, acc, train_seconds, x_test, vy.numpy(), args.threads)


def record(models: Path, variant: str, cfg: dict, seed: int, params: int, pytorch_acc: float, train_seconds: float,
           x_test: np.ndarray, y_test: np.ndarray, threads: int = 1) -> None:
    """Given the exported single-pass model at models/cifar10-<variant>.onnx: adds the mirror pass when the
    variant has `tta`, measures onnxruntime's test accuracy, writes the labels and the models.json entry."""
    name = f"cifar10-{variant}"
    path = models / f"{name}.onnx"
    single = float((common.onnx_predict(path, x_test, threads=threads).argmax(1) == y_test).mean())
    common.log(f"onnxruntime test accuracy, single pass: {single:.4f}")
    if cfg.get("tta"):
        common.add_flip_tta(path)
    ort_acc = float((common.onnx_predict(path, x_test, threads=threads).argmax(1) == y_test).mean())
    common.log(f"onnxruntime test accuracy of {path.name}: {ort_acc:.4f}")
    common.write_labels(models, "cifar10.labels.txt", common.CIFAR10_CLASSES)
    w = cfg["width"]
    arch = (f"plain CNN, 4 conv+max pool, widths {w}-{2 * w}-{4 * w}-{8 * w}" if cfg.get("arch") == "pool-first"
            else f"ResNet-9 layout, width {w} ({w}-{2 * w}-{4 * w}-{8 * w})")
    if cfg.get("tta"):
        arch += "; mean of the logits of the image and its mirror image (two passes in the graph)"
    common.update_manifest(models, name, {
        "file": f"{name}.onnx",
        "family": "cifar10",
        "variant": variant,
        "version": "1",
        "labels": "cifar10.labels.txt",
        "preprocessing": common.CIFAR10_PREPROCESSING,
        "accuracy": round(ort_acc, 4),
        "accuracy_dataset": "CIFAR-10 test split, 10,000 JPEG q75 images (../shared/datasets/cifar10-jpeg)",
        "parameters": params,
        "size_bytes": path.stat().st_size,
        "latency_ms": None,
        "architecture": arch,
        "training": {"script": "tools/train/train_cifar10.py", "args": f"--variant {variant}" + (f" --epochs {cfg['epochs']}" if cfg["epochs"] != VARIANTS[variant]["epochs"] else ""),
                     "epochs": cfg["epochs"], "seed": seed, "seconds": round(train_seconds),
                     "pytorch_accuracy": round(pytorch_acc, 4), "single_pass_accuracy": round(single, 4)},
    })
    common.log(f"wrote {path} ({path.stat().st_size} bytes) and its models.json entry")


if __name__ == "__main__":
    main()
