"""Pillow baseline: draft() decode + resize short side 256 (BILINEAR) + center crop 224 + normalize to
float32 NCHW, on one thread. Usage: pillow_bench.py <seconds> <file>...  → prints "<file> <img/s>"."""
import io
import sys
import time

import numpy as np
from PIL import Image

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def preprocess(data):
    im = Image.open(io.BytesIO(data))
    im.draft("RGB", (256, 256))
    im = im.convert("RGB")
    w, h = im.size
    s = 256 / min(w, h)
    nw, nh = (256, round(h * s)) if w <= h else (round(w * s), 256)
    im = im.resize((nw, nh), Image.BILINEAR)
    left, top = (nw - 224) // 2, (nh - 224) // 2
    im = im.crop((left, top, left + 224, top + 224))
    a = np.asarray(im, np.float32) / 255.0
    return np.ascontiguousarray(((a - MEAN) / STD).transpose(2, 0, 1))


def main():
    seconds = float(sys.argv[1])
    for path in sys.argv[2:]:
        data = open(path, "rb").read()
        preprocess(data)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            preprocess(data)
            n += 1
        print(path, n / (time.perf_counter() - t0))


if __name__ == "__main__":
    main()
