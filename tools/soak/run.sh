#!/usr/bin/env bash
# Soak run (issue: reliability): a release server under open-loop overload for a long time.
#
#   tools/soak/run.sh [--duration 1800] [--factor 2] [--deadline-ms 100] [--reload-every 30]
#                     [--hostile-share 0.01] [--model cifar10-large] [--out .build/soak] [--no-build]
#
# Serves models/ (the embedded models; --admin-without-auth, loopback only, for the reloads), measures the model's closed-loop
# capacity (10 s, 64 in flight), then for --duration seconds offers --factor x that rate with
# glimpse-load (constant arrivals over h2c, deadline_ms on every call) while a second client sends
# models.reload every --reload-every seconds and hostile requests (truncated JSON, bad base64, half an
# image, bad parameters, unknown model and method, admin calls without a key, garbage bytes) at
# --hostile-share of the offered rate. Every 10 s it samples the server's RSS and the deltas of its
# glimpse_requests_total counters. At the end, a last 8 s load of 50 req/s gets a SIGTERM after 4 s:
# the drain must answer every request the server took. Writes OUT/soak.csv (per 10 s: RSS, answers,
# errors by reason) and OUT/soak.svg (goodput, p99, RSS, errors), and prints: requests offered,
# answered, refused by code, lost; share of admitted requests within the deadline; RSS range after
# minute 5 (all samples, and those outside a reload, when old and new version are both resident); reload
# and hostile outcomes; the drain's outcome. Loopback only; every step is bounded.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/lib/bench.sh
duration=1800; factor=2; deadline=100; reload=30; hostile=0.01; model=cifar10-large; out=.build/soak
parse_options --duration=duration --factor=factor --deadline-ms=deadline --reload-every=reload \
  --hostile-share=hostile --model=model --out=out -- "$@"
if [ "$build" = 1 ]; then build_release; fi
images=$(mktemp -d)
trap 'rm -rf "$images"' EXIT
family=${model%%-*}
cp models/samples/"$family"-* "$images"/ 2>/dev/null || cp ../shared/images/imagenet/*.jpg "$images"/
sample=$(ls "$images"/* | head -1)
python3 tools/soak/soak.py --glimpse .build/release/glimpse --load .build/release/glimpse-load --models models \
  --model "$model" --images "$images" --sample "$sample" --out "$out" --duration "$duration" --factor "$factor" \
  --deadline-ms "$deadline" --reload-every "$reload" --hostile-share "$hostile"
