#!/usr/bin/env bash
# The request path's cost, in one run: req/s and server CPU µs per request for
#   - GET /healthz: Glimpse over h2c (h2load -c 2 -m 64) and HTTP/1.1 (h2load --h1 -c 16), and nghttpd
#     serving a 16-byte file over h2c (the same h2load command) as the ceiling of a C HTTP/2 server;
#   - classify on mnist-8 (a digit PNG) and on squeezenet1.1 (kitten_small.jpg): h2c through
#     glimpse-load (64 streams over 2 connections) and through h2load (-c 2 -m 32), HTTP/1.1 through
#     h2load --h1 -c 16 and -c 64 (64 calls in flight, as through glimpse-load); beside the total CPU
#     per request, the engine's CPU per image (from glimpse_energy_joules_total /
#     glimpse_energy_watts_per_core) and the rest ("outside the engine").
#
#   tools/bench-serving/run.sh [--seconds 8] [--requests 200000] [--no-build] [--server PATH]
#                              [--compare-flags "FLAGS"]
#
# --server measures another glimpse executable (a copy of an earlier release build) with the same
# clients. --compare-flags runs every Glimpse row twice, the second time with a server started with
# FLAGS added to `glimpse serve` (e.g. "--http2-stream-channels", the earlier HTTP/2 transport), the two
# servers one after the other in the same run.
#
# Release build, loopback only; every load step is bounded in requests and time. The server's CPU comes
# from /proc/PID/stat (user + system) around each step.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/lib/bench.sh
seconds=8
requests=200000
server_path=.build/release/glimpse
compare_flags=
parse_options --seconds=seconds --requests=requests --server=server_path --compare-flags=compare_flags -- "$@"
for tool in h2load nghttpd; do
  command -v "$tool" >/dev/null || { echo "$tool not found: run scripts/setup.sh --test" >&2; exit 1; }
done
if [ "$build" = 1 ]; then build_release; fi
exec python3 tools/bench-serving/bench.py --seconds "$seconds" --requests "$requests" --server "$server_path" \
  --compare-flags="$compare_flags"
