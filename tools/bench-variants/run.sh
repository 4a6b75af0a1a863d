#!/usr/bin/env bash
# Overload experiment for dynamic variant selection (issues: model variants; the load split).
#
#   tools/bench-variants/run.sh [--duration 60] [--deadline-ms 25] [--factors 1.5,2] [--recovery-factor 0.3]
#                               [--variants cifar10-large,cifar10-small] [--labels-tar PATH] [--port 18930]
#                               [--setups large,small,switch,split] [--photos DIR] [--no-build]
#
# Serves the embedded variants named by --variants (from models/, release build, loopback only), then:
#   1. unloaded latency of the first (largest) variant: closed loop, 1 request in flight, 4 s;
#   2. the capacity of the largest and of the smallest variant, each alone, end to end: closed loop,
#      64 requests in flight on 2 connections, 10 s (img/s answered);
#   3. for each factor F of --factors: open loop at F x the largest variant's capacity for --duration s
#      (after 2 s of warm-up at the same rate), every call with deadline_ms, in four setups: static
#      largest (model = the first variant), static smallest (the last), all-or-nothing switching
#      (model = the family, server run with --selection switch) and the split (model = the family,
#      --selection split, the default); the split's shares are read from server.stats mid-run; then
#      both capacities again, so the report can also set the split beside an ideal from the
#      capacities measured just before and after it (the host's speed drifts over minutes);
#   4. recovery: the split at the largest factor for 20 s, then recovery-factor x capacity for 20 s;
#      variants per second.
# The requests cycle through labelled images: the CIFAR-10 test split (--labels-tar, a tar of
# test/CLASS/*.jpg, extracted into a temporary folder) for the cifar10 family, so glimpse-load counts
# correct answers within the deadline against every offered request ("effective accuracy"). For a
# family of photo classifiers (imagenet: `--variants mobilenetv2-12-int8,squeezenet1.1`), no labelled
# set exists here: the JPEG/PNG photos of --photos (default ../shared/images/imagenet) are labelled with
# the answer of the first (most accurate) variant, so "accuracy" reads as agreement with it (100% for
# that variant by construction; the manifest's are the published top-1). Otherwise the family's
# sample images are cycled and only manifest-weighted accuracy is reported.
# For each setup it prints the share of offered requests answered OK within the deadline (refusals,
# expiries, errors and late answers are misses, each counted), the answered img/s, the mean served
# accuracy (the manifest accuracy of each variant weighted by its answers) and the effective accuracy;
# beside them the split's ideal: the large variant's share f = (1/λ − 1/μ_S)/(1/μ_L − 1/μ_S) with the
# capacities measured in step 2, and f·acc_L + (1 − f)·acc_S.
# The default deadline, 25 ms, is about 10x the largest variant's unloaded p50 on the 2-core development
# machine and a few times its unloaded p99 (both printed).
# cifar10-large-int8 (int8-static QDQ) is left out by default: it would add a third queue competing for
# the same cores, and the experiment compares the issue's two variants.
# Every step is bounded in time; the servers are stopped on exit (and could not outlive the script's
# expected length by more than two minutes anyway).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/lib/bench.sh

duration=60
deadline=25
factors=1.5,2
recovery_factor=0.3
variants=cifar10-large,cifar10-small
labels_tar=../shared/datasets/cifar10-jpeg/test.tar
photos=
setups=large,small,switch,split
port=18930
parse_options --duration=duration --deadline-ms=deadline --factors=factors --factor=factors --labels-tar=labels_tar \
  --photos=photos --setups=setups --recovery-factor=recovery_factor --variants=variants --port=port -- "$@"
IFS=, read -ra names <<< "$variants"
[ "${#names[@]}" -ge 2 ] || { echo "--variants needs at least two models of one family" >&2; exit 2; }
large=${names[0]}
small=${names[${#names[@]}-1]}

if [ "$build" = 1 ]; then build_release; fi
load=.build/release/glimpse-load

make_work_folder

# A model folder with the chosen variants: links to models/ and their manifest entries (order kept).
mkdir -p "$work/models" "$work/images"
family=$(python3 tools/lib/model_folder.py "$work/models" "${names[@]}")
cp models/samples/"$family"-*.jpg "$work/images/" 2>/dev/null || true

if [ -z "$photos" ] && [ "$family" = imagenet ]; then photos=../shared/images/imagenet; fi
if [ "$family" = cifar10 ] && [ -f "$labels_tar" ]; then
  mkdir -p "$work/labelled"
  tar -xf "$labels_tar" -C "$work/labelled"
  source_args=(--labels "$work/labelled/test")
elif [ -n "$photos" ]; then
  mkdir -p "$work/photos"
  find "$photos" -maxdepth 1 -type f \( -iname '*.jpg' -o -iname '*.jpeg' -o -iname '*.png' \) -exec cp {} "$work/photos/" \;
  source_args=(--labels "$work/photo-labels.tsv" --images "$work/photos")
else
  source_args=(--images "$work/images")
fi
IFS=, read -ra factor_list <<< "$factors"
IFS=, read -ra setup_list <<< "$setups"

# Each server stops by itself after the expected length of the experiment plus two minutes.
limit=$(( 4 + 24 + ${#factor_list[@]} * ${#setup_list[@]} * (duration + 8) + 50 + 120 ))
serve() {  # $1: --selection
  start_server "$work/serve-$1.log" "$limit" --host 127.0.0.1 --port "$port" --models "$work/models" --selection "$1"
}
stats() {  # server.stats, as JSON, into $1
  curl -s --max-time 2 "http://127.0.0.1:$port/rpc" -H 'content-type: application/json' \
    -d '{"jsonrpc":"2.0","id":1,"method":"server.stats"}' > "$1" || true
}
( while sleep 5; do cut -d' ' -f1 /proc/loadavg >> "$work/loadavg.txt"; done ) &
sampler=$!
cut -d' ' -f1 /proc/loadavg > "$work/loadavg.txt"

common=(--port "$port" "${source_args[@]}" --quiet --timeout 10)
rate_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['runs'][0]['achievedRate'])" "$1"; }

serve split
if [ -n "$photos" ]; then
  # Each photo's label: the most accurate variant's top-1 answer (the photos carry no labels).
  python3 - "$port" "$large" "$work/photos" > "$work/photo-labels.tsv" <<'EOF'
import base64, json, os, sys, urllib.request
port, model, folder = sys.argv[1], sys.argv[2], sys.argv[3]
for name in sorted(os.listdir(folder)):
    image = base64.b64encode(open(os.path.join(folder, name), "rb").read()).decode()
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "classify", "params": {"image": image, "model": model, "top_k": 1}})
    req = urllib.request.Request(f"http://127.0.0.1:{port}/rpc", body.encode(), {"content-type": "application/json"})
    result = json.load(urllib.request.urlopen(req, timeout=30)).get("result")
    if result:
        print(f"{name}\t{result['predictions'][0]['label']}")
EOF
  echo "labelled $(wc -l < "$work/photo-labels.tsv") photos with $large's answers" >&2
fi
echo "unloaded latency of $large, capacities of $large and $small ..." >&2
"$load" "${common[@]}" --model "$large" -c 1 --concurrency 1 --duration 4 --warmup 1 --json "$work/unloaded.json" >/dev/null
"$load" "${common[@]}" --model "$large" -c 2 --concurrency 64 --duration 10 --warmup 2 --json "$work/capacity.json" >/dev/null
"$load" "${common[@]}" --model "$small" -c 2 --concurrency 64 --duration 10 --warmup 2 --json "$work/capacity-small.json" >/dev/null
capacity=$(rate_of "$work/capacity.json")
low=$(python3 -c "print(max(1, round($capacity * $recovery_factor)))")

for factor in "${factor_list[@]}"; do
  offered=$(python3 -c "print(round($capacity * $factor))")
  for setup in "${setup_list[@]}"; do
    case $setup in large) model=$large ;; small) model=$small ;; *) model=$family ;; esac
    if [ "$setup" = switch ]; then stop_server; serve switch; fi
    echo "$setup at ${factor}x: model $model, $offered req/s for $duration s, deadline_ms $deadline ..." >&2
    sleep 2
    ( sleep $(python3 -c "print(2 + $duration / 2)"); stats "$work/stats-$setup-$factor.json" ) &
    "$load" "${common[@]}" --model "$model" -c 2 --rate "$offered" --deadline-ms "$deadline" --duration "$duration" --warmup 2 \
      --json "$work/$setup-$factor.json" >/dev/null || true
    wait $! 2>/dev/null || true
    if [ "$setup" = switch ]; then stop_server; serve split; fi
  done
  # The capacities again, next to the runs: the host's speed drifts over minutes, so the report also
  # sets each factor's split beside an ideal from the capacities measured just before and after it.
  echo "capacities of $large and $small after ${factor}x ..." >&2
  "$load" "${common[@]}" --model "$large" -c 2 --concurrency 64 --duration 10 --warmup 2 --json "$work/capacity-after-$factor.json" >/dev/null
  "$load" "${common[@]}" --model "$small" -c 2 --concurrency 64 --duration 10 --warmup 2 --json "$work/capacity-small-after-$factor.json" >/dev/null
done

top=${factor_list[${#factor_list[@]}-1]}
offered=$(python3 -c "print(round($capacity * $top))")
echo "recovery: split, $offered req/s for 20 s, then $low req/s for 20 s ..." >&2
sleep 2
"$load" "${common[@]}" --model "$family" -c 2 --rate "$offered" --rate-steps "$low@20" --deadline-ms "$deadline" --duration 40 \
  --warmup 2 --json "$work/recovery.json" >/dev/null || true
stop_server

echo
echo "tools/bench-variants/run.sh --duration $duration --deadline-ms $deadline --factors $factors --recovery-factor $recovery_factor --variants $variants --setups $setups"
python3 tools/bench-variants/report.py "$work" "$work/models/models.json" "$family" "$large" "$small" "$deadline" "$factors" "$setups" 20
