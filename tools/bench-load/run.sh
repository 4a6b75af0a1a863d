#!/usr/bin/env bash
# glimpse-load's own cost: CPU µs per request vs h2load for the same `health` calls, same run.
#   tools/bench-load/run.sh [requests=20000] [rounds=3]
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/lib/bench.sh
scripts/setup.sh --test
build_release
port=18801
.build/release/glimpse serve --host 127.0.0.1 --port $port --models "$(mktemp -d)" 2>/tmp/glimpse-bench-load.log &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "listening on" /tmp/glimpse-bench-load.log && break; sleep 0.1; done
python3 tools/bench-load/cpu_per_request.py $port .build/release/glimpse-load "${1:-20000}" "${2:-3}"
