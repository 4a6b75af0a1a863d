#!/usr/bin/env bash
# Scale-out on one machine: closed-loop classify throughput (glimpse-load, same load for every setup) of
#   1 replica with 1 engine thread, direct;   1 replica with 2 threads, direct;
#   2 replicas with 1 thread each behind HAProxy (deploy/haproxy/haproxy.cfg), each pinned to a core as
#   scripts/cluster.sh runs them, and the same not pinned;
#   1 replica with 2 threads behind HAProxy (what the balancer alone costs);
# the setups alternate within each round (the host has slow phases), and HAProxy's CPU per request is
# read from /proc/PID/stat. --images takes a folder or one photo (the BENCHMARKS figures: kitten_small.jpg,
# which keeps the run engine-bound; the large photos of the default folder make it decode- and
# transport-bound).
#
#   tools/bench-cluster/run.sh [--seconds 10] [--rounds 4] [--concurrency 32] [--model mobilenetv2-12-int8] [--images DIR] [--no-build]
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/lib/bench.sh
seconds=10; rounds=4; concurrency=32; model=mobilenetv2-12-int8; images=../shared/images/imagenet
parse_options --seconds=seconds --rounds=rounds --concurrency=concurrency --model=model --images=images -- "$@"
scripts/setup.sh --test
if [ "$build" = 1 ]; then build_release; fi
exec python3 tools/bench-cluster/bench.py --seconds "$seconds" --rounds "$rounds" --concurrency "$concurrency" --model "$model" --images "$images"
