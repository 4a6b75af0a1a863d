#!/usr/bin/env bash
# Batching benchmark: throughput and latency vs concurrency for batching off, fixed and adaptive settings,
# over real HTTP/2 load from glimpse-load (libnghttp2), release builds.
#   tools/bench-batching/run.sh [seconds-per-point] [concurrency list] [models]
# BENCH_SERVER=PATH measures another glimpse executable (an earlier release build) with the same client.
# Needs ../shared (models and images). Prints a table and writes tools/bench-batching/results.csv.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-8}
conc=${2:-1,4,16,64}
models=${3:-squeezenet1.1,mnist-8}
source tools/bench-batching/common.sh
trap 'pkill -f "glimpse serve --host 127.0.0.1 --port 1879" || true; rm -rf "$work"' EXIT
mkdir -p "$work/models" "$work/photos" "$work/digits"
ln -s "$(realpath $shared/models/squeezenet1.1.onnx)" "$work/models/"
ln -s "$(realpath $shared/models/mnist-8.onnx)" "$work/models/"
ln -s "$(realpath $shared/labels/imagenet_classes.txt)" "$work/models/"
echo '{"preprocessing": "imagenet"}' > "$work/models/squeezenet1.1.json"
echo '{"preprocessing": "mnist"}' > "$work/models/mnist-8.json"
for f in Dog1.jpg croco.jpg goldfish.jpg kitten_small.jpg samoyed_dog.jpg vulture.jpeg; do ln -s "$(realpath $shared/images/imagenet/$f)" "$work/photos/"; done
for d in 0 1 2 3 4 5 6 7 8 9; do ln -s "$(realpath $shared/images/digits/torchserve_$d.png)" "$work/digits/"; done

# name | serve flags | glimpse-load flags
configs=(
  "off-1x2|--max-batch 1 --workers 1 --threads 2|"
  "off-2x1|--max-batch 1 --workers 2 --threads 1|"
  "fixed-8|--max-batch 8 --batch-policy fixed --max-queue-delay-ms 2 --workers 1 --threads 2|"
  "adaptive-1x2|--workers 1 --threads 2|"
  "adaptive-2x1|--workers 2 --threads 1|"
  "default (adaptive 2x2)||"
  "default-32-per-call||--images-per-call 32"
)
[ -n "${BENCH_CONFIGS:-}" ] && IFS=';' read -ra configs <<< "$BENCH_CONFIGS"
out=tools/bench-batching/results.csv
echo "model,config,concurrency,img_per_s,p50_ms,p99_ms,errors" > "$out"
port=18790
for model in ${models//,/ }; do
  images=$work/photos; [ "$model" = "mnist-8" ] && images=$work/digits
  for entry in "${configs[@]}"; do
    IFS='|' read -r name flags loadflags <<< "$entry"
    # Client-side batching (an `images` array per call) only for mnist-8, whose cost per request
    # dominates; 32 squeezenet1.1 images per call at c >= 16 would pass the in-flight image limit.
    [ -n "$loadflags" ] && [ "$model" != "mnist-8" ] && continue
    port=$((port + 1))
    "${BENCH_SERVER:-.build/release/glimpse}" serve --host 127.0.0.1 --port $port --models "$work/models" --max-queue 1024 $flags 2>"$work/serve.log" &
    pid=$!
    for _ in $(seq 100); do grep -q "listening on" "$work/serve.log" && break; sleep 0.1; done
    for c in ${conc//,/ }; do
      conns=2; [ "$c" -lt 2 ] && conns=1
      .build/release/glimpse-load --port $port --images "$images" --model "$model" -c $conns --concurrency "$c" \
        --duration "$secs" --warmup 2 --quiet --json "$work/r.json" $loadflags > /dev/null
      python3 tools/bench-batching/row.py "$work/r.json" "$model" "$name" "$c" >> "$out"
    done
    kill $pid; wait $pid 2>/dev/null || true
  done
done
column -s, -t < "$out"
