#!/usr/bin/env bash
# Runs N Glimpse replicas on loopback ports behind HAProxy, and stops them all on Ctrl-C.
#
#   scripts/cluster.sh N [glimpse serve flags...]
#
# Clients use http://127.0.0.1:8080 (h2c prior knowledge or HTTP/1.1), as with one `glimpse serve`.
# Replica i listens on 8080+i and gets --threads cores/N (at least 1), pinned to its own cores, so the
# replicas share the cores.
# HAProxy's own metrics are at http://127.0.0.1:8404/metrics (and its status page at /stats), each
# replica's at http://127.0.0.1:808i/metrics. Environment: GLIMPSE_CLUSTER_PORT (8080),
# GLIMPSE_CLUSTER_STATS_PORT (8404), GLIMPSE_CLUSTER_THREADS (engine threads per replica),
# GLIMPSE_LB_THREADS (HAProxy's threads, 1), GLIMPSE_LB_CERT and GLIMPSE_LB_TLS_PORT (TLS listener),
# GLIMPSE_BIN (a glimpse binary to use instead of building one).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || ! [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/cluster.sh N [glimpse serve flags...]   (N replicas, N >= 1)" >&2
  exit 2
fi
n=$1; shift
scripts/setup.sh
if ! command -v haproxy >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends haproxy >/dev/null
fi
bin=${GLIMPSE_BIN:-}
if [ -z "$bin" ]; then
  swift build -c release --product glimpse
  bin=.build/release/glimpse
fi
port=${GLIMPSE_CLUSTER_PORT:-8080}
cores=$(nproc)
threads=${GLIMPSE_CLUSTER_THREADS:-$(( cores / n > 0 ? cores / n : 1 ))}

run=$(mktemp -d "${TMPDIR:-/tmp}/glimpse-cluster.XXXXXX")
pids=()
stop_all() {
  trap - INT TERM EXIT
  echo "stopping HAProxy and $n replicas" >&2
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$run"
}
trap stop_all INT TERM EXIT

ports=()
for i in $(seq 1 "$n"); do
  p=$((port + i))
  # --drain-delay-s: on SIGTERM a replica reports not ready for 1 s (two of HAProxy's checks) before
  # its port closes, so traffic moves away before any connection is refused.
  # Each replica pinned to its own cores (replica i: cores (i-1)*threads ... i*threads-1, wrapping), so
  # two replicas do not preempt each other's engine threads (tools/bench-cluster: pinned 2 x 1-thread
  # replicas against unpinned, BENCHMARKS.md). GLIMPSE_CLUSTER_PIN=0 leaves placement to the kernel.
  pin=()
  if [ "${GLIMPSE_CLUSTER_PIN:-1}" = 1 ] && command -v taskset >/dev/null; then
    cpus=$(for k in $(seq 0 $((threads - 1))); do echo $(( ((i - 1) * threads + k) % cores )); done | paste -sd,)
    pin=(taskset -c "$cpus")
  fi
  "${pin[@]}" "$bin" serve --host 127.0.0.1 --port "$p" --threads "$threads" --drain-delay-s 1 "$@" 2>"$run/glimpse$i.log" &
  pids+=($!)
  ports+=("$p")
  echo "replica $i: http://127.0.0.1:$p (pid $!, --threads $threads${pin:+, cores ${pin[2]}}, log $run/glimpse$i.log)" >&2
done
# The shipped configuration with this cluster's servers between the markers.
deploy/haproxy/render.sh "${ports[@]}" >"$run/haproxy.cfg"
export GLIMPSE_LB_ADDR=${GLIMPSE_LB_ADDR:-127.0.0.1} GLIMPSE_LB_PORT=$port
export GLIMPSE_LB_STATS_PORT=${GLIMPSE_CLUSTER_STATS_PORT:-8404} GLIMPSE_LB_THREADS=${GLIMPSE_LB_THREADS:-1}
export GLIMPSE_LB_TLS_PORT=${GLIMPSE_LB_TLS_PORT:-8443}
haproxy -db -f "$run/haproxy.cfg" &
lb=$!
pids+=($lb)
echo "HAProxy: http://$GLIMPSE_LB_ADDR:$port (h2c and HTTP/1.1), metrics http://$GLIMPSE_LB_ADDR:$GLIMPSE_LB_STATS_PORT/metrics; Ctrl-C stops all" >&2
# Runs until Ctrl-C (or HAProxy exits). A replica that dies is taken out by HAProxy's health check.
set +e
wait "$lb"
