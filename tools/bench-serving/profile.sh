#!/usr/bin/env bash
# Instructions per request on the request path, counted by valgrind (callgrind), so the figures repeat
# on a noisy shared machine where seconds do not:
#   - GET /healthz over h2c (h2load -c 2 -m 64) and over HTTP/1.1 (h2load --h1 -c 16);
#   - nghttpd serving a 16-byte file over h2c (same h2load command): the C ceiling;
#   - JSON-RPC classify of a 28x28 digit PNG on mnist-8 over h2c (h2load -c 2 -m 8) and HTTP/1.1
#     (h2load --h1 -c 16): 16 calls in flight in both. (Under valgrind an inference takes ~50 ms, and
#     with more in flight the queue's predicted wait passes its 2 s bound and calls are refused with
#     queue_full; the script fails on any refusal.)
# Each server runs under `valgrind --tool=callgrind`; a warm-up batch comes first, then
# `callgrind_control -d` (dump and zero), the measured batch of a fixed number of requests, and
# `callgrind_control -d` again: that second dump holds only the measured requests. Prints the table,
# and with --report the cost centres of each scenario (tools/bench-serving/callgrind_summary.py).
#
#   tools/bench-serving/profile.sh [--healthz-requests 20000] [--classify-requests 3000] [--nghttpd 1]
#                                  [--no-build] [--binary PATH] [--out DIR] [--report]
#
# --out keeps the callgrind files in DIR (default: a temporary folder, removed on exit). The server is a
# release build for valgrind (haswell: valgrind rejects AVX-512) with debug info, in its own scratch
# folder .build-prof; --binary profiles another glimpse executable instead (e.g. one built with other
# compiler flags) and skips the build. --classify-requests 0 skips the classify scenarios, --nghttpd 0
# the nghttpd one. Every wait is bounded; the whole run takes about 15 minutes on 2 cores (the build
# adds about 15 more the first time).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/lib/bench.sh
healthz_requests=20000
classify_requests=3000
out=
report=0
nghttpd=1
binary=
args=()
for a in "$@"; do
  if [ "$a" = --report ]; then report=1; else args+=("$a"); fi
done
parse_options --healthz-requests=healthz_requests --classify-requests=classify_requests --out=out --nghttpd=nghttpd \
  --binary=binary -- "${args[@]+"${args[@]}"}"
shared=${GLIMPSE_SHARED:-../shared}
for tool in valgrind callgrind_control h2load nghttpd curl python3; do
  command -v "$tool" >/dev/null || { echo "$tool not found" >&2; exit 1; }
done
built=.build-prof/release/glimpse
if [ -n "$binary" ]; then
  built=$binary
  build=0
fi
if [ "$build" = 1 ]; then
  GLIMPSE_TARGET_CPU=haswell timeout 3600 swift build -c release --product glimpse --scratch-path .build-prof -Xswiftc -g >/dev/null
fi
[ -x "$built" ] || { echo "no $built: run without --no-build" >&2; exit 1; }
# valgrind 3.19 cannot read this toolchain's DWARF 5 forms ("unhandled dwarf2 abbrev form code 0x25",
# then "Possibly corrupted debuginfo file" and it gives up): profile a copy without the debug sections.
# The symbol table stays, so every function keeps its name; only line numbers are lost.
server_bin=$built-valgrind
if [ ! -x "$server_bin" ] || [ "$built" -nt "$server_bin" ]; then objcopy --strip-debug "$built" "$server_bin"; fi

make_work_folder
if [ -n "$out" ]; then mkdir -p "$out"; out=$(cd "$out" && pwd); else out=$work; fi
mkdir -p "$work/models" "$work/www"
ln -s "$(cd "$shared/models" && pwd)/mnist-8.onnx" "$work/models/mnist-8.onnx"
echo '{"preprocessing": "mnist"}' >"$work/models/mnist-8.json"
printf '{"status":"ok"}\n' >"$work/www/healthz"   # 16 bytes, what Glimpse's /healthz answers
python3 - "$shared/images/digits/torchserve_3.png" "$work/body.json" <<'EOF'
import base64, json, sys
image = base64.b64encode(open(sys.argv[1], "rb").read()).decode()
call = {"jsonrpc": "2.0", "id": 1, "method": "classify", "params": {"image": image, "model": "mnist-8", "top_k": 1}}
open(sys.argv[2], "w").write(json.dumps(call, separators=(",", ":")))
EOF

# valgrind 3.19 dies on libdispatch's sigsuspend with a read-only mask (see sigsuspend_shim.c).
cc -O2 -shared -fPIC -o "$work/sigsuspend_shim.so" tools/bench-serving/sigsuspend_shim.c -ldl

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"

# run_h2load LOG ARGS...: h2load bounded in time; fails unless every request succeeded with a 2xx.
run_h2load() {
  local log=$1
  shift
  timeout 900 h2load "$@" >"$log" 2>&1 || { cat "$log" >&2; return 1; }
  local n
  n=$(grep -oP 'requests: \K\d+' "$log" | head -1)
  grep -q "succeeded, 0 failed, 0 errored, 0 timeout" "$log" || { cat "$log" >&2; return 1; }
  grep -q "status codes: $n 2xx" "$log" || { cat "$log" >&2; return 1; }
}

# dump PREFIX: `callgrind_control -d` of the process $cg_pid (it answers once the file is written),
# bounded; prints the new dump's path. Earlier dumps of PREFIX have been moved or removed.
dump() {
  shopt -s nullglob
  local files
  timeout 300 callgrind_control -d "$cg_pid" >/dev/null 2>&1 || { echo "callgrind_control -d $cg_pid failed" >&2; return 1; }
  for _ in $(seq 300); do
    files=("$out/$1".cg.*)
    [ ${#files[@]} -gt 0 ] && break
    sleep 0.2
  done
  [ ${#files[@]} -gt 0 ] || { echo "no callgrind dump from $cg_pid" >&2; return 1; }
  ls -t "${files[@]}" | head -1
}

# wait_listening PORT SECONDS
wait_listening() {
  for _ in $(seq $(($2 * 5))); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $1), 1).close()" 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  echo "nothing listens on $1 after $2 s" >&2
  return 1
}

# measure NAME REQUESTS WARMUP_H2LOAD_ARGS... -- MEASURED_H2LOAD_ARGS...: warm-up batch, dump (removed),
# measured batch of REQUESTS, dump (kept as $out/NAME.callgrind); records "file:NAME:REQUESTS" in $rows.
rows=()
measure() {
  local name=$1 requests=$2
  shift 2
  local warm=()
  while [ "$1" != -- ]; do warm+=("$1"); shift; done
  shift
  local file
  run_h2load "$work/$name.warm.log" "${warm[@]}"
  file=$(dump "$prefix")
  rm -f "$file"   # start-up and warm-up
  run_h2load "$work/$name.log" "$@"
  file=$(dump "$prefix")
  mv "$file" "$out/$name.callgrind"
  rows+=("$out/$name.callgrind:$name:$requests")
  echo "  $name: $(grep -oP 'finished in \K.*' "$work/$name.log")" >&2
}

valgrind_flags=(--tool=callgrind --dump-instr=no --compress-strings=yes)

# Glimpse: one server process for its four scenarios (each measured batch has its own dump).
prefix=glimpse
echo "glimpse under callgrind on port $port ..." >&2
LD_PRELOAD="$work/sigsuspend_shim.so" timeout 3000 valgrind "${valgrind_flags[@]}" --callgrind-out-file="$out/$prefix.cg" \
  "$server_bin" serve --host 127.0.0.1 --port "$port" --models "$work/models" --threads 1 --log-level warning \
  >"$work/glimpse.log" 2>&1 &
server=$!
wait_listening "$port" 600 || { tail -20 "$work/glimpse.log" >&2; exit 1; }
cg_pid=$(pgrep -P "$server" || true)   # timeout's child: valgrind.bin (the valgrind wrapper script execs it)
[ -n "$cg_pid" ] || cg_pid=$server
# a correct answer first (JSON-RPC errors would be HTTP 200 too)
answer=$(timeout 120 curl -s --http2-prior-knowledge "$base/rpc" -H 'content-type: application/json' --data-binary @"$work/body.json")
echo "$answer" | grep -q '"predictions":\[{"index":3' || { echo "unexpected classify answer: $answer" >&2; exit 1; }

h=$healthz_requests
c=$classify_requests
measure h2c-healthz "$h" -n 2000 -c 2 -m 64 "$base/healthz" -- -n "$h" -c 2 -m 64 "$base/healthz"
measure http1-healthz "$h" --h1 -n 2000 -c 16 "$base/healthz" -- --h1 -n "$h" -c 16 "$base/healthz"
if [ "$c" -gt 0 ]; then
  measure h2c-classify "$c" -n 300 -c 2 -m 8 -d "$work/body.json" -H 'content-type: application/json' "$base/rpc" \
    -- -n "$c" -c 2 -m 8 -d "$work/body.json" -H 'content-type: application/json' "$base/rpc"
  measure http1-classify "$c" --h1 -n 300 -c 16 -d "$work/body.json" -H 'content-type: application/json' "$base/rpc" \
    -- --h1 -n "$c" -c 16 -d "$work/body.json" -H 'content-type: application/json' "$base/rpc"
  # every classify answered with a result, not an error
  timeout 120 curl -s "$base/metrics" >"$work/metrics.txt"
  grep '^glimpse_requests_total' "$work/metrics.txt" | grep 'method="classify"' >&2 || true
  if grep '^glimpse_requests_total' "$work/metrics.txt" | grep 'method="classify"' | grep -v 'outcome="ok"' | grep -qv ' 0$'; then
    echo "some classify calls failed (see above)" >&2; exit 1
  fi
fi
stop_server

# nghttpd, the C ceiling for /healthz.
if [ "$nghttpd" = 1 ]; then
  prefix=nghttpd
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  base="http://127.0.0.1:$port"
  echo "nghttpd under callgrind on port $port ..." >&2
  timeout 1200 valgrind "${valgrind_flags[@]}" --callgrind-out-file="$out/$prefix.cg" \
    nghttpd --no-tls -d "$work/www" "$port" >"$work/nghttpd.log" 2>&1 &
  server=$!
  wait_listening "$port" 120
  cg_pid=$(pgrep -P "$server" || true)
  [ -n "$cg_pid" ] || cg_pid=$server
  measure nghttpd-healthz "$h" -n 2000 -c 2 -m 64 "$base/healthz" -- -n "$h" -c 2 -m 64 "$base/healthz"
  stop_server
fi
echo
echo "valgrind: $(valgrind --version); $(h2load --version | head -1); $(nghttpd --version | head -1)"
echo
python3 tools/bench-serving/callgrind_summary.py table "${rows[@]}"
if [ "$report" = 1 ]; then
  for row in "${rows[@]}"; do
    IFS=: read -r file name requests <<<"$row"
    echo
    python3 tools/bench-serving/callgrind_summary.py report "$file" "$name" "$requests"
  done
fi
