#!/usr/bin/env bash
# Glimpse engine vs onnxruntime, same machine, same run, alternating engines (A B A B ...).
#
#   tools/bench-engine/run.sh [--seconds S] [--rounds R] [--batches 1,8,32] [--threads 1,2] [--paired] [--isa ISA] [MODEL...]
#
# --isa runs Glimpse's kernels of that variant (GLIMPSE_ISA: portable, avx2, avx512, avx512vnni; default
# the best this CPU and binary have); every row names the variant it ran.
#
# --paired measures the two engines in turn, configuration by configuration (R pairs of S-second
# measurements each, default 7 × 0.5 s) and adds the median of the per-pair ratios (paired.py).
#
# Environment: GLIMPSE_SHARED (default ../shared beside the repo), BENCH_VENV (onnxruntime venv,
# created from PyPI on first use), BENCH_PACKAGE (SwiftPM package with the `bench-engine` product;
# default: the repo root), BENCH_RUNNER (prebuilt binary).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SHARED=${GLIMPSE_SHARED:-$ROOT/../shared}
VENV=${BENCH_VENV:-$HOME/.cache/glimpse-bench-venv}
SECONDS_PER=2; ROUNDS=2; BATCHES=1,8,32; THREADS=1,2; MODELS=(); PAIRED=0; PAIRED_SECONDS=0.5; PAIRED_ROUNDS=7
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_PER=$2; PAIRED_SECONDS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; PAIRED_ROUNDS=$2; shift 2 ;;
    --paired) PAIRED=1; shift ;;
    --batches) BATCHES=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --isa) export GLIMPSE_ISA=$2; shift 2 ;;
    *) MODELS+=("$1"); shift ;;
  esac
done
[ -d "$SHARED/models" ] || { echo "shared data not found at $SHARED (set GLIMPSE_SHARED)" >&2; exit 1; }
if [ ${#MODELS[@]} -eq 0 ]; then
  MODELS=("$SHARED/models/squeezenet1.1.onnx" "$SHARED/models/arch/mobilenet_v2.onnx"
          "$SHARED/models/arch/efficientnet_b0.onnx" "$SHARED/models/structure/light_resnet50.onnx")
fi
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import onnxruntime" 2>/dev/null; then
  echo "creating onnxruntime venv in $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q onnxruntime numpy
fi
RUNNER=${BENCH_RUNNER:-}
if [ -z "$RUNNER" ]; then
  PKG=${BENCH_PACKAGE:-$ROOT}
  swift build -c release --product bench-engine --package-path "$PKG" >&2
  RUNNER="$(swift build -c release --package-path "$PKG" --show-bin-path)/bench-engine"
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if [ "$PAIRED" = 1 ]; then
  "$VENV/bin/python" "$HERE/paired.py" "$RUNNER" "$VENV/bin/python" --rounds "$PAIRED_ROUNDS" --seconds "$PAIRED_SECONDS" \
    --batches "$BATCHES" --threads "$THREADS" "${MODELS[@]}"
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  exit 0
fi
OUT=$(mktemp -d)
for r in $(seq 1 "$ROUNDS"); do
  for m in "${MODELS[@]}"; do
    "$VENV/bin/python" "$HERE/ort_bench.py" --seconds "$SECONDS_PER" --batches "$BATCHES" --threads "$THREADS" "$m" 2>/dev/null >> "$OUT/ort.jsonl"
    "$RUNNER" --seconds "$SECONDS_PER" --batches "$BATCHES" --threads "$THREADS" "$m" >> "$OUT/glimpse.jsonl"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$VENV/bin/python" "$HERE/report.py" "$OUT/glimpse.jsonl" "$OUT/ort.jsonl"
