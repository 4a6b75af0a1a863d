#!/usr/bin/env bash
# Scale-out on one machine: closed-loop classify throughput (glimpse-load, same load for every setup) of
#   1 replica with 1 engine thread, direct;   1 replica with 2 threads, direct;
#   2 replicas with 1 thread each behind HAProxy (deploy/haproxy/haproxy.cfg, as scripts/cluster.sh runs it);
#   1 replica with 2 threads behind HAProxy (what the balancer alone costs);
# the setups alternate within each round (the host has slow phases), and HAProxy's CPU per request is
# read from /proc/PID/stat.
#
#   tools/bench-cluster/run.sh [--seconds 15] [--rounds 2] [--concurrency 32] [--model mobilenetv2-12-int8] [--no-build]
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/lib/bench.sh
seconds=15; rounds=2; concurrency=32; model=mobilenetv2-12-int8
parse_options --seconds=seconds --rounds=rounds --concurrency=concurrency --model=model -- "$@"
scripts/setup.sh --test
if [ "$build" = 1 ]; then build_release; fi
exec python3 tools/bench-cluster/bench.py --seconds "$seconds" --rounds "$rounds" --concurrency "$concurrency" --model "$model"
