#!/usr/bin/env bash
# Overload experiment for dynamic variant selection (issue: model variants).
#
#   tools/bench-variants/run.sh [--duration 60] [--deadline-ms 25] [--factor 2] [--recovery-factor 0.3]
#                               [--variants cifar10-large,cifar10-small] [--port 18930] [--no-build]
#
# Serves the embedded cifar10 variants named by --variants (from models/, release build, loopback only),
# then:
#   1. unloaded latency of the first (largest) variant: closed loop, 1 request in flight, 4 s;
#   2. its capacity C: closed loop, 64 requests in flight on 2 connections, 10 s (img/s answered);
#   3. open loop at factor x C for --duration s (after 2 s of warm-up at the same rate), every call with
#      deadline_ms, in three setups: static largest (model = the first variant), static smallest (the
#      last), dynamic (model = the family);
#   4. recovery: dynamic at factor x C for 20 s, then recovery-factor x C for 20 s; variants per second.
# For each setup it prints the share of offered requests answered OK within the deadline (refusals,
# expiries, errors and late answers are misses, each counted), the answered img/s and the mean served
# accuracy (the manifest accuracy of each variant weighted by its answers, read from each response's
# `variant`). The default deadline, 25 ms, is about 10x the largest variant's unloaded p50 on the
# 2-core development machine and a few times its unloaded p99 (both printed).
# cifar10-large-int8 (int8-static QDQ) is left out by default: until the engine has int8 kernels it
# runs its integer ops with float kernels, at about cifar10-large's speed, so it would only add a third
# queue competing for the same cores.
# Every step is bounded in time; the server is stopped on exit (and could not outlive the script's
# expected length by more than two minutes anyway).
set -euo pipefail
cd "$(dirname "$0")/../.."

duration=60
deadline=25
factor=2
recovery_factor=0.3
variants=cifar10-large,cifar10-small
port=18930
build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2 ;;
    --deadline-ms) deadline=$2; shift 2 ;;
    --factor) factor=$2; shift 2 ;;
    --recovery-factor) recovery_factor=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    *) echo "unknown option $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
IFS=, read -ra names <<< "$variants"
[ "${#names[@]}" -ge 2 ] || { echo "--variants needs at least two models of one family" >&2; exit 2; }
large=${names[0]}
small=${names[${#names[@]}-1]}

if [ "$build" = 1 ]; then
  swift build -c release --product glimpse >/dev/null
  swift build -c release --product glimpse-load >/dev/null
fi
glimpse=.build/release/glimpse
load=.build/release/glimpse-load

work=$(mktemp -d)
server=
sampler=
cleanup() {
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null || true
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  if [ -n "${KEEP_WORK:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A model folder with the chosen variants: links to models/ and their manifest entries (order kept).
mkdir -p "$work/models" "$work/images"
family=$(python3 - "$work/models" "${names[@]}" <<'EOF'
import json, os, sys
out, names = sys.argv[1], sys.argv[2:]
root = json.load(open("models/models.json"))
entries = {n: root["models"][n] for n in names}
families = {e["family"] for e in entries.values()}
assert len(families) == 1, f"the variants belong to several families: {families}"
for e in entries.values():
    for f in (e["file"], e.get("labels")):
        if f and not os.path.exists(os.path.join(out, f)):
            os.symlink(os.path.abspath(os.path.join("models", f)), os.path.join(out, f))
json.dump({"models": entries}, open(os.path.join(out, "models.json"), "w"), indent=2)
print(families.pop())
EOF
)
cp models/samples/"$family"-*.jpg "$work/images/"

# The server stops by itself after the expected length of the experiment plus two minutes.
limit=$(( 4 + 12 + 3 * (duration + 6) + 45 + 120 ))
timeout "$limit" "$glimpse" serve --host 127.0.0.1 --port "$port" --models "$work/models" 2>"$work/serve.log" &
server=$!
for _ in $(seq 300); do grep -q "listening on" "$work/serve.log" && break; sleep 0.1; done
grep -q "listening on" "$work/serve.log" || { cat "$work/serve.log" >&2; exit 1; }
( while sleep 5; do cut -d' ' -f1 /proc/loadavg >> "$work/loadavg.txt"; done ) &
sampler=$!
cut -d' ' -f1 /proc/loadavg > "$work/loadavg.txt"

common=(--port "$port" --images "$work/images" --quiet --timeout 10)
rate_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['runs'][0]['achievedRate'])" "$1"; }

echo "unloaded latency and capacity of $large ..." >&2
"$load" "${common[@]}" --model "$large" -c 1 --concurrency 1 --duration 4 --warmup 1 --json "$work/unloaded.json" >/dev/null
"$load" "${common[@]}" --model "$large" -c 2 --concurrency 64 --duration 10 --warmup 2 --json "$work/capacity.json" >/dev/null
capacity=$(rate_of "$work/capacity.json")
offered=$(python3 -c "print(round($capacity * $factor))")
low=$(python3 -c "print(max(1, round($capacity * $recovery_factor)))")

for setup in large small dynamic; do
  case $setup in large) model=$large ;; small) model=$small ;; dynamic) model=$family ;; esac
  echo "$setup: model $model, $offered req/s for $duration s, deadline_ms $deadline ..." >&2
  sleep 2
  "$load" "${common[@]}" --model "$model" -c 2 --rate "$offered" --deadline-ms "$deadline" --duration "$duration" --warmup 2 \
    --json "$work/$setup.json" >/dev/null || true
done

echo "recovery: $offered req/s for 20 s, then $low req/s for 20 s ..." >&2
sleep 2
"$load" "${common[@]}" --model "$family" -c 2 --rate "$offered" --rate-steps "$low@20" --deadline-ms "$deadline" --duration 40 \
  --warmup 2 --json "$work/recovery.json" >/dev/null || true

echo
echo "tools/bench-variants/run.sh --duration $duration --deadline-ms $deadline --factor $factor --recovery-factor $recovery_factor --variants $variants"
python3 tools/bench-variants/report.py "$work" "$work/models/models.json" "$family" "$large" "$small" "$deadline" "$offered" 20
