"""Generates real-looking q90 JPEGs for the image-pipeline benchmark.

Each image is a mosaic of the shared ImageNet photos (resized so that detail density stays like a
camera photo's) with mild sensor-like noise, saved by Pillow at quality 90 with 4:2:0 subsampling.
Usage: make_images.py <shared_dir> <out_dir>
"""
import os
import sys

import numpy as np
from PIL import Image

SIZES = [(640, 480), (1920, 1080), (4032, 3024)]


def main():
    shared, out = sys.argv[1], sys.argv[2]
    folder = os.path.join(shared, "images", "imagenet")
    photos = []
    for name in sorted(os.listdir(folder)):
        if name.lower().endswith((".jpg", ".jpeg")):
            im = Image.open(os.path.join(folder, name)).convert("RGB")
            if min(im.size) >= 350:
                photos.append(im)
    if not photos:
        sys.exit(f"no photos found in {folder}")
    rng = np.random.default_rng(1234)
    for w, h in SIZES:
        tile = max(320, min(w, h) // 2)  # ~2 tiles across the short side
        canvas = Image.new("RGB", (w, h))
        i = 0
        for y in range(0, h, tile):
            for x in range(0, w, tile):
                p = photos[i % len(photos)]
                i += 1
                s = tile / min(p.size)
                t = p.resize((max(tile, round(p.width * s)), max(tile, round(p.height * s))), Image.BICUBIC)
                canvas.paste(t.crop((0, 0, tile, tile)), (x, y))
        a = np.asarray(canvas, np.float32) + rng.normal(0, 2.5, (h, w, 3))
        img = Image.fromarray(np.clip(a, 0, 255).astype(np.uint8))
        path = os.path.join(out, f"photo_{w}x{h}.jpg")
        img.save(path, quality=90, subsampling="4:2:0")
        print(f"{path} {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
