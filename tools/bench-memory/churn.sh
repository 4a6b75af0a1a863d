#!/usr/bin/env bash
# Memory under model churn (issue: reliability): the release server with every model of
# ../shared/models, a steady classify load on squeezenet1.1 (h2load, 2 streams, bounded by time),
# then RELOADS `models.reload` calls of squeezenet1.1 (the model under load) and PAIRS
# `models.unload` + `models.load` pairs of mobilenetv2-int8, one after another, while the load goes on.
# Prints the server's RSS in the steady state before the churn (the median of the last 10 s of
# samples), its peak during the churn, and after it, with their ratios to the steady state; the
# answers the load got (every one must be 2xx) and the admin calls that failed (must be 0).
#
#   tools/bench-memory/churn.sh [--no-build] [--reloads N] [--pairs N] [--warmup SECONDS]
#
# Loopback only; the load is bounded by its duration, each admin call by curl's --max-time.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/lib/bench.sh
reloads=100 pairs=100 warmup=30
parse_options --reloads=reloads --pairs=pairs --warmup=warmup -- "$@"
if [ "$build" = 1 ]; then build_release; fi
command -v h2load >/dev/null || { echo "h2load not found: run scripts/setup.sh --test" >&2; exit 1; }
make_work_folder
python3 - "$work" <<'PY'
import base64, json, sys
image = open("../shared/images/imagenet/Dog1.jpg", "rb").read()
body = {"jsonrpc": "2.0", "id": 1, "method": "classify",
        "params": {"image": base64.b64encode(image).decode(), "model": "squeezenet1.1", "top_k": 1}}
json.dump(body, open(sys.argv[1] + "/classify.json", "w"))
PY
port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
start_server "$work/serve.log" 1800 --host 127.0.0.1 --port "$port" --models ../shared/models --admin-without-auth
pid=$(pgrep -P "$server" -f "glimpse serve")
url="http://127.0.0.1:$port/rpc"

# One RSS sample (KiB) per second into rss.txt, until stopped.
( while kill -0 "$pid" 2>/dev/null; do awk '$1 == "VmRSS:" {print $2}' "/proc/$pid/status"; sleep 1; done ) > "$work/rss.txt" &
sampler=$!
# The load: rounds of 200 calls until the stop file appears (at most 1,000 rounds).
( for _ in $(seq 1000); do
    [ -e "$work/stop" ] && break
    h2load -n 200 -c 1 -m 2 -d "$work/classify.json" -H 'content-type: application/json' "$url" 2>&1 | grep -E '^(status codes|requests):'
  done ) > "$work/load.txt" &
load=$!
sleep "$warmup"
steady=$(tail -n 10 "$work/rss.txt" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
mark=$(wc -l < "$work/rss.txt")
# What the loaded models hold (models.list `memory`), in MiB: all, and squeezenet1.1's plans.
held() {
  curl -sS --max-time 10 -H 'content-type: application/json' -d '{"jsonrpc":"2.0","id":1,"method":"models.list"}' "$url" |
    python3 -c 'import json, sys
models = json.load(sys.stdin)["result"]
models = models["models"] if isinstance(models, dict) else models
total = sum(m["memory"]["total_bytes"] for m in models) / 1048576
sq = [m["memory"] for m in models if m["name"] == "squeezenet1.1"][0]
plans, planned = sq["plans"], sq["plans_bytes"] / 1048576
print(f"models hold {total:.0f} MiB; squeezenet1.1 {plans} plans, {planned:.0f} MiB")'
}
held_before=$(held)

failed=0
admin() {
  local answer
  answer=$(curl -sS --max-time 60 -H 'content-type: application/json' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$1\",\"params\":{\"model\":\"$2\"}}" "$url" || echo curl-failed)
  if ! grep -q '"result"' <<< "$answer"; then failed=$((failed + 1)); echo "$1 $2: $answer" >&2; fi
}
start=$SECONDS
for _ in $(seq "$reloads"); do admin models.reload squeezenet1.1; done
for _ in $(seq "$pairs"); do admin models.unload mobilenetv2-int8; admin models.load mobilenetv2-int8; done
churn=$(( SECONDS - start ))
sleep 10
held_after=$(held)
touch "$work/stop"
wait "$load" 2>/dev/null || true
after=$(tail -n 1 "$work/rss.txt")
peak=$(tail -n +"$mark" "$work/rss.txt" | sort -n | tail -n 1)
ok=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' "$work/load.txt" | awk '{s += $1} END {print s}')
sent=$(sed -n 's/^requests: [0-9]* total, [0-9]* started, \([0-9]*\) done.*/\1/p' "$work/load.txt" | awk '{s += $1} END {print s}')
stop_server
mib() { echo $(( $1 / 1024 )); }
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
echo "churn: $reloads reloads of squeezenet1.1 + $pairs unload/load pairs of mobilenetv2-int8 in ${churn} s, under load"
echo "RSS steady before: $(mib "$steady") MiB"
echo "RSS peak during:   $(mib "$peak") MiB ($(ratio "$peak" "$steady")x steady)"
echo "RSS after (10 s):  $(mib "$after") MiB ($(ratio "$after" "$steady")x steady)"
echo "load answers: $ok 2xx of $sent done; admin calls failed: $failed"
echo "before: $held_before"
echo "after:  $held_after"
