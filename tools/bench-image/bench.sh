#!/usr/bin/env bash
# Image pipeline benchmark: GlimpseImage decode+preprocess vs Pillow (draft + resize 256 + crop 224 +
# normalize to float32 NCHW), both on one pinned core, alternating A B A B, medians reported.
#
#   tools/bench-image/bench.sh [seconds_per_run=2] [rounds=5]
#
# Environment: GLIMPSE_SHARED (default <repo>/../shared), GLIMPSE_IMAGE_BENCH (a prebuilt runner;
# default: the package's `bench-image` product, built in release),
# BENCH_CPU (core to pin, default 1), BENCH_VENV (default $TMPDIR/glimpse-bench-venv).
# Test images are generated into a temporary folder, never into the repo.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
SHARED="${GLIMPSE_SHARED:-$REPO/../shared}"
SECONDS_PER_RUN="${1:-2}"
ROUNDS="${2:-5}"
CPU="${BENCH_CPU:-1}"
VENV="${BENCH_VENV:-${TMPDIR:-/tmp}/glimpse-bench-venv}"

[ -d "$SHARED/images/imagenet" ] || { echo "shared test data not found at $SHARED (set GLIMPSE_SHARED)" >&2; exit 1; }

RUNNER="${GLIMPSE_IMAGE_BENCH:-}"
if [ -z "$RUNNER" ]; then
    (cd "$REPO" && swift build -c release --product bench-image >&2)
    RUNNER="$(cd "$REPO" && swift build -c release --show-bin-path)/bench-image"
fi

if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q pillow numpy
fi
PY="$VENV/bin/python"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/glimpse-bench-XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
"$PY" "$HERE/make_images.py" "$SHARED" "$WORK" >&2
FILES=("$WORK"/photo_640x480.jpg "$WORK"/photo_1920x1080.jpg "$WORK"/photo_4032x3024.jpg)

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)   Pillow $("$PY" -c 'import PIL; print(PIL.__version__)')   core $CPU" >&2
for r in $(seq 1 "$ROUNDS"); do
    taskset -c "$CPU" "$RUNNER" bench "$SECONDS_PER_RUN" "${FILES[@]}" | sed 's/^/glimpse /'
    taskset -c "$CPU" "$PY" "$HERE/pillow_bench.py" "$SECONDS_PER_RUN" "${FILES[@]}" | sed 's/^/pillow /'
done > "$WORK/results.txt"
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)" >&2

"$PY" - "$WORK/results.txt" <<'PYEOF'
import collections, os, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    who, path, rate = line.split()
    runs[(who, os.path.basename(path))].append(float(rate))
print(f"{'image':24s} {'glimpse img/s':>14s} {'pillow img/s':>13s} {'ratio':>7s}   (median of {len(next(iter(runs.values())))} runs each)")
for name in sorted({k[1] for k in runs}, key=lambda n: int(n.split('_')[1].split('x')[0])):
    g, p = statistics.median(runs[("glimpse", name)]), statistics.median(runs[("pillow", name)])
    print(f"{name:24s} {g:14.1f} {p:13.1f} {g / p:6.2f}x")
PYEOF
