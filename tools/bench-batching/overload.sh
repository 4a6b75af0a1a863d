#!/usr/bin/env bash
# Overload test of the batching queue (issue: batching scheduler).
#
#   tools/bench-batching/overload.sh [--duration 30] [--deadline-ms 100] [--factor 2] [--port 18960] [--no-build]
#
# Serves squeezenet1.1 from ../shared with the default settings (release build, loopback only), then:
#   1. its capacity C: closed loop, 64 requests in flight on 2 connections, 8 s (img/s answered);
#   2. open loop (Poisson arrivals) at factor x C for --duration s after 2 s of warm-up, every call with
#      deadline_ms, while the server's resident memory is sampled every second.
# Prints what every offered request got: an answer (and the p50/p99 of the answers), a refusal by
# -32000 reason, an expiry (-32001), or a transport error / client timeout (which must be 0: nothing may
# time out silently), and the server's memory range over the run.
# Every step is bounded in time; the server is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/lib/bench.sh

duration=30
deadline=100
factor=2
port=18960
parse_options --duration=duration --deadline-ms=deadline --factor=factor --port=port -- "$@"
shared=../shared
[ -d "$shared/models" ] || { echo "error: ../shared (models and photos) not found beside the repository" >&2; exit 1; }
if [ "$build" = 1 ]; then
  scripts/setup.sh
  build_release
fi

make_work_folder

mkdir -p "$work/models" "$work/photos"
ln -s "$(realpath $shared/models/squeezenet1.1.onnx)" "$work/models/"
ln -s "$(realpath $shared/labels/imagenet_classes.txt)" "$work/models/"
echo '{"preprocessing": "imagenet"}' > "$work/models/squeezenet1.1.json"
for f in Dog1.jpg croco.jpg goldfish.jpg kitten_small.jpg samoyed_dog.jpg vulture.jpeg; do
  ln -s "$(realpath $shared/images/imagenet/$f)" "$work/photos/"
done

limit=$(( 10 + 12 + duration + 2 + 120 ))
start_server "$work/serve.log" "$limit" --host 127.0.0.1 --port "$port" --models "$work/models"

common=(--port "$port" --images "$work/photos" --model squeezenet1.1 --quiet --timeout 10 -c 2)
echo "capacity ..." >&2
.build/release/glimpse-load "${common[@]}" --concurrency 64 --duration 8 --warmup 2 --json "$work/capacity.json" >/dev/null
capacity=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['runs'][0]['achievedRate'])" "$work/capacity.json")
offered=$(python3 -c "print(round($capacity * $factor))")

glimpse_pid=$(pgrep -P "$server" -f "glimpse serve" | head -1)
rss() { awk '/VmRSS/ {print $2}' "/proc/$glimpse_pid/status"; }
rss > "$work/rss.txt"
( while sleep 1; do rss >> "$work/rss.txt" 2>/dev/null || break; done ) &
sampler=$!
echo "open loop: $offered req/s (Poisson) for $duration s, deadline_ms $deadline ..." >&2
.build/release/glimpse-load "${common[@]}" --rate "$offered" --poisson --deadline-ms "$deadline" --duration "$duration" --warmup 2 \
  --json "$work/overload.json" >/dev/null || true
kill "$sampler" 2>/dev/null || true
sampler=
curl -s "http://127.0.0.1:$port/metrics" > "$work/metrics.txt" || true

python3 - "$work" "$capacity" "$offered" "$deadline" "$duration" "$factor" <<'PY'
import json, sys
from pathlib import Path
work, capacity, offered, deadline, duration, factor = sys.argv[1:7]
r = json.loads((Path(work) / "overload.json").read_text())["runs"][0]
rss = [int(x) for x in (Path(work) / "rss.txt").read_text().split()]
n = r["offered"] or r["requests"]
by_rpc = r.get("byRPCError", {})
transport = r.get("byTransportError", {})
lat = r["latency"]
print(f"tools/bench-batching/overload.sh --duration {duration} --deadline-ms {deadline} --factor {factor}")
print(f"capacity (closed loop, 64 in flight): {float(capacity):.1f} img/s; offered {offered} req/s (Poisson) for {duration} s, "
      f"deadline_ms {deadline}")
print()
print("| outcome | requests | share |")
print("|---|---:|---:|")
print(f"| answered | {r['succeeded']} | {100 * r['succeeded'] / n:.2f}% |")
for label, count in sorted(by_rpc.items(), key=lambda kv: -kv[1]):
    print(f"| error `{label}` | {count} | {100 * count / n:.2f}% |")
for label, count in sorted(transport.items(), key=lambda kv: -kv[1]):
    print(f"| transport `{label}` | {count} | {100 * count / n:.2f}% |")
accounted = r["succeeded"] + sum(by_rpc.values()) + sum(transport.values())
print(f"| **total** | {accounted} of {n} offered | |")
print()
print(f"answered: {r['achievedRate']:.1f} img/s, latency p50 {lat['p50']:.1f} ms, p99 {lat['p99']:.1f} ms, max {lat['max']:.1f} ms "
      f"(deadline {deadline} ms; from the intended send time)")
print(f"server resident memory during the run: {min(rss) / 1024:.0f}-{max(rss) / 1024:.0f} MiB "
      f"(first {rss[0] / 1024:.0f}, last {rss[-1] / 1024:.0f}; {len(rss)} samples)")
print(f"HTTP statuses: {r.get('byStatus', {})}")
# Mean time per stage of the answered requests, from the server's own histograms.
stages = {}
for line in (Path(work) / "metrics.txt").read_text().splitlines() if (Path(work) / "metrics.txt").exists() else []:
    if line.startswith("glimpse_request_stage_seconds_sum") or line.startswith("glimpse_request_stage_seconds_count"):
        name, value = line.rsplit(" ", 1)
        stage = name.split('stage="')[1].split('"')[0] if 'stage="' in name else "?"
        stages.setdefault(stage, {})["sum" if "_sum" in name else "count"] = float(value)
if stages:
    print("server stage means (ms): " + ", ".join(f"{k} {1000 * v['sum'] / v['count']:.1f}" for k, v in sorted(stages.items()) if v.get("count")))
PY
