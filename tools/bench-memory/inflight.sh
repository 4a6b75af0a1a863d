#!/usr/bin/env bash
# Memory per request in flight (issue: reliability): the release server with only squeezenet1.1
# loaded, 16 classify calls in flight (h2load -c 1 -m 16, 320 calls) of one large image, the server's
# RSS idle, at its peak (VmHWM) and after the run, for each allocator setting in turn.
#
#   tools/bench-memory/inflight.sh [--no-build]
#
# Images: ../shared/images/imagenet/samoyed_dog.jpg (1546x1213 JPEG, 0.66 MB, decoded at a reduced
# DCT scale for a 224 input) and a 1546x1213 RGB PNG written by this script (5.6 MB, barely
# compressible, so 7.5 MB of base64 and a full-size decode). Allocator settings: glimpse serve's default
# (a fixed 1 MiB mmap threshold),
# and MALLOC_MMAP_THRESHOLD_=262144 (buffers of 256 KiB and more come from mmap and go back to the
# system when freed). Loopback only; every run is bounded by its request count.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/lib/bench.sh
parse_options -- "$@"
if [ "$build" = 1 ]; then build_release; fi
command -v h2load >/dev/null || { echo "h2load not found: run scripts/setup.sh --test" >&2; exit 1; }
make_work_folder
mkdir -p "$work/models"
ln -s "$(realpath ../shared/models/squeezenet1.1.onnx)" "$work/models/"
ln -s "$(realpath ../shared/labels/imagenet_classes.txt)" "$work/models/"
echo '{"preprocessing": "imagenet"}' > "$work/models/squeezenet1.1.json"
python3 - "$work" <<'PY'
import base64, json, random, struct, sys, zlib
work = sys.argv[1]
w, h = 1546, 1213
random.seed(1)
raw = b"".join(b"\0" + bytes(v for x in range(w) for v in ((x * 3 + y) & 255, (x ^ y) & 255, (random.getrandbits(5) + x // 7) & 255))
               for y in range(h))
chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")
for name, data in (("jpeg", open("../shared/images/imagenet/samoyed_dog.jpg", "rb").read()), ("png", png)):
    body = {"jsonrpc": "2.0", "id": 1, "method": "classify",
            "params": {"image": base64.b64encode(data).decode(), "model": "squeezenet1.1", "top_k": 1}}
    json.dump(body, open(f"{work}/{name}.json", "w"))
PY
# MiB of a /proc status field of the server process (timeout's child).
mib() { awk -v k="$1" '$1 == k":" {print int($2 / 1024)}' "/proc/$pid/status"; }
echo "| image | body | allocator | RSS idle MiB | peak MiB | after MiB | req/s | answered |"
echo "|---|---:|---|---:|---:|---:|---:|---:|"
for image in jpeg png; do
  for setting in "serve's default (1 MiB mmap threshold)|" "MALLOC_MMAP_THRESHOLD_=262144|MALLOC_MMAP_THRESHOLD_=262144"; do
    IFS='|' read -r label env <<< "$setting"
    port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
    # shellcheck disable=SC2086
    env $env timeout 300 .build/release/glimpse serve --host 127.0.0.1 --port "$port" --models "$work/models" 2>"$work/serve.log" &
    server=$!
    for _ in $(seq 300); do grep -q "listening on" "$work/serve.log" && break; sleep 0.1; done
    pid=$(pgrep -P "$server" -f "glimpse serve")
    idle=$(mib VmRSS)
    out=$(h2load -n 320 -c 1 -m 16 -d "$work/$image.json" -H 'content-type: application/json' "http://127.0.0.1:$port/rpc" 2>&1)
    peak=$(mib VmHWM); after=$(mib VmRSS)
    rate=$(sed -n 's/^finished in .*s, \([0-9.]*\) req\/s.*/\1/p' <<< "$out")
    ok=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' <<< "$out")
    stop_server
    echo "| $image | $(( $(stat -c %s "$work/$image.json") / 1024 )) KiB | $label | $idle | $peak | $after | $rate | $ok/320 |"
  done
done
