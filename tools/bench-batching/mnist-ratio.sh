#!/usr/bin/env bash
# mnist-8, end-to-end img/s with and without batching, alternated so machine drift hits both sides:
#   with:    default server, the client sends 32 images per call (c=16, and c=4);
#   without: max batch 1, single-image calls (both splits, c=64, their best point in run.sh).
# Each round measures all four and prints with / best-without; the summary is the median of the rounds.
#   tools/bench-batching/mnist-ratio.sh [rounds] [seconds-per-point]
# Needs ../shared (the model and the digit PNGs).
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
secs=${2:-6}
source tools/bench-batching/common.sh
echo 18840 > "$work/port"
trap 'pkill -f "glimpse serve --host 127.0.0.1 --port 188[4-9]" || true; rm -rf "$work"' EXIT
mkdir -p "$work/models" "$work/digits"
ln -s "$(realpath $shared/models/mnist-8.onnx)" "$work/models/"
echo '{"preprocessing": "mnist"}' > "$work/models/mnist-8.json"
for d in 0 1 2 3 4 5 6 7 8 9; do ln -s "$(realpath $shared/images/digits/torchserve_$d.png)" "$work/digits/"; done

# One point: serve flags, concurrency, extra glimpse-load flags; prints img/s. Runs in a command
# substitution (a subshell), so each call takes the next port from a counter file.
point() {
  local port=$(( $(cat "$work/port") + 1 ))
  echo $port > "$work/port"
  .build/release/glimpse serve --host 127.0.0.1 --port $port --models "$work/models" --max-queue 1024 $1 2>"$work/serve.log" &
  local pid=$!
  for _ in $(seq 100); do grep -q "listening on" "$work/serve.log" && break; sleep 0.1; done
  .build/release/glimpse-load --port $port --images "$work/digits" --model mnist-8 -c 2 --concurrency "$2" \
    --duration "$secs" --warmup 2 --quiet --json "$work/r.json" $3 > /dev/null
  kill $pid; wait $pid 2>/dev/null || true
  python3 tools/bench-batching/row.py "$work/r.json" mnist-8 x "$2" | cut -d, -f4
}

ratios=()
for r in $(seq "$rounds"); do
  w16=$(point "" 16 "--images-per-call 32")
  w4=$(point "" 4 "--images-per-call 32")
  o12=$(point "--max-batch 1 --workers 1 --threads 2" 64 "")
  o21=$(point "--max-batch 1 --workers 2 --threads 1" 64 "")
  ratio=$(python3 -c "print(round(max($w16,$w4)/max($o12,$o21), 2))")
  ratios+=("$ratio")
  echo "round $r: with batching c16 $w16, c4 $w4 img/s; without off-1x2 $o12, off-2x1 $o21 img/s; ratio $ratio"
done
python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print(f'median ratio over {len(v)} rounds: {statistics.median(v):.2f} (min {min(v):.2f}, max {max(v):.2f})')" "${ratios[@]}"
