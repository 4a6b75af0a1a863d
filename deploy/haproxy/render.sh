#!/usr/bin/env bash
# Prints deploy/haproxy/haproxy.cfg with one `server glimpseN 127.0.0.1:PORT` line per PORT between its
# BEGIN/END servers markers (scripts/cluster.sh, tools/bench-cluster and the cluster tests use it).
#   deploy/haproxy/render.sh PORT...
set -euo pipefail
cfg="$(dirname "$0")/haproxy.cfg"
grep -q "# BEGIN servers" "$cfg" && grep -q "# END servers" "$cfg" || { echo "render.sh: no servers markers in $cfg" >&2; exit 1; }
[ $# -ge 1 ] || { echo "usage: deploy/haproxy/render.sh PORT..." >&2; exit 2; }
servers=""
i=0
for p in "$@"; do
  [[ "$p" =~ ^[0-9]+$ ]] || { echo "render.sh: not a port: $p" >&2; exit 2; }
  i=$((i + 1))
  servers+="    server glimpse$i 127.0.0.1:$p"$'\n'
done
awk -v servers="$servers" '
  /# BEGIN servers/ { print; printf "%s", servers; skip = 1; next }
  /# END servers/ { skip = 0 }
  !skip { print }' "$cfg"
