#!/bin/sh
# Coverage-guided fuzzing with libFuzzer (benchmarks/fuzzing.md has the results).
# Usage: scripts/fuzz.sh NAME SECONDS [libFuzzer flags...]
#   NAME: json | base64 | rpc | jpeg-segments | image | onnx | manifest | load-scanner | all
# Builds the harness `fuzz-NAME` (Fuzz/<Name>/main.swift, declared with GLIMPSE_FUZZ=1) in release with
# `-sanitize=fuzzer,address` into .build-fuzz (the usual .build is untouched), writes a seed corpus from
# the shared test data ($GLIMPSE_SHARED, else ../shared) and a few requests written here, and fuzzes
# for SECONDS. What the run finds stays in .build-fuzz/fuzz/NAME/corpus (reused by the next run), and a
# crashing input in .build-fuzz/fuzz/NAME/ (crash-*, leak-*, oom-*, timeout-*). Prints the executions and
# the final coverage (`cov`: edges, `ft`: features) at the end.
set -eu
cd "$(dirname "$0")/.."

all='json base64 rpc jpeg-segments image onnx manifest load-scanner'
if [ $# -lt 2 ]; then
    echo "usage: scripts/fuzz.sh NAME SECONDS [libFuzzer flags...]   (NAME: $all | all)" >&2
    exit 2
fi
name=$1
seconds=$2
shift 2

if [ "$name" = all ]; then
    status=0
    for n in $all; do "$0" "$n" "$seconds" "$@" || status=1; done
    exit $status
fi
case " $all " in *" $name "*) ;; *) echo "fuzz.sh: no harness named $name ($all)" >&2; exit 2 ;; esac

shared=$(cd "${GLIMPSE_SHARED:-../shared}" && pwd)
export GLIMPSE_SHARED="$shared"
scratch=.build-fuzz
work="$scratch/fuzz/$name"
seeds="$work/seeds"
mkdir -p "$work/corpus"
rm -rf "$seeds"
mkdir -p "$seeds"

# FUZZ_NO_BUILD=1 runs the harness built last (while another build holds .build-fuzz).
[ "${FUZZ_NO_BUILD:-0}" = 1 ] || GLIMPSE_FUZZ=1 swift build -c release --scratch-path "$scratch" -Xswiftc -sanitize=fuzzer,address --product "fuzz-$name"

seed() { printf '%s' "$2" > "$seeds/$1"; }
copy() { for f in "$@"; do if [ -f "$f" ]; then cp "$f" "$seeds/"; fi; done; }
# Copies the files of at most $1 bytes.
small() { limit=$1; shift; for f in "$@"; do if [ -f "$f" ] && [ "$(wc -c < "$f")" -le "$limit" ]; then cp "$f" "$seeds/"; fi; done; }
digit=$(base64 -w0 "$shared/images/digits/torchserve_7.png")

rpc_seeds() {
    seed rpc-classify.json "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"classify\",\"params\":{\"image\":\"$digit\",\"model\":\"mnist-8\",\"top_k\":3}}"
    seed rpc-classify-images.json "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"classify\",\"params\":{\"images\":[\"$digit\",\"data:image/png;base64,$digit\"],\"crop\":\"fit\",\"deadline_ms\":1000}}"
    seed rpc-batch.json "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"models.list\"},{\"jsonrpc\":\"2.0\",\"method\":\"health\"},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"server.stats\",\"params\":{}}]"
    seed rpc-notification.json '{"jsonrpc":"2.0","method":"health"}'
    seed rpc-classify-options.json "{\"params\":{\"client_id\":\"c\",\"model\":null,\"image\":\"$digit\",\"min_accuracy\":0.5,\"deadline_ms\":250,\"crop\":\"fill\",\"top_k\":null},\"method\":\"classify\",\"id\":\"x\",\"jsonrpc\":\"2.0\"}"
    seed rpc-unload.json '{"jsonrpc":"2.0","id":3,"method":"models.unload","params":{"model":"mnist-8"}}'
    seed rpc-bad.json '{"jsonrpc":"2.0","id":null,"method":"classify","params":{"image":"!!","top_k":-1,"crop":"zoom"}}'
    seed rpc-escapes.json '{"jsonrpc":"2.0","id":1.5e3,"method":"cl\u0061ssify","params":["\ud83d\ude00",true,false,null,-0.0]}'
}

dict="$work/json.dict"
cat > "$dict" <<'EOF'
"{"
"}"
"["
"]"
":"
","
"\""
"\\u"
"\\ud83d"
"true"
"false"
"null"
"-0.5e+10"
"1E-400"
"\"jsonrpc\""
"\"2.0\""
"\"id\""
"\"method\""
"\"params\""
"\"result\""
"\"error\""
"\"code\""
"\"data\""
"\"reason\""
"\"classify\""
"\"image\""
"\"images\""
"\"model\""
"\"mnist-8\""
"\"top_k\""
"\"crop\""
"\"deadline_ms\""
"\"variant\""
"\"timing_ms\""
"\"queue\""
"\"inference\""
"\"batch_size\""
"\"predictions\""
"\"label\""
"\"models\""
"\"file\""
"\"preprocessing\""
"\"preset\""
"\"labels\""
"\"family\""
"\"version\""
"\"accuracy\""
"\"download\""
"\"sha256\""
"\"url\""
EOF
flags="-dict=$dict"

case $name in
json)
    rpc_seeds
    copy "$shared/models/models.json"
    max_len=4096 ;;
base64)
    seed plain.txt "$digit"
    seed data-url.txt "data:image/png;base64,$digit"
    seed url-safe.txt "$(printf '%s' "$digit" | tr '+/' '-_' | tr -d '=')"
    seed spaced.txt "$(printf '%s' "$digit" | fold -w 76)"
    seed short.txt 'YQ=='
    flags=""
    max_len=4096 ;;
rpc)
    rpc_seeds
    max_len=8192 ;;
jpeg-segments)
    copy "$shared"/images/formats/*.jpg "$shared"/images/digits/*.jpg "$shared/images/formats/pillow_exif_imagemagick_orientation.png"
    flags=""
    max_len=16384 ;;
image)
    small 65536 "$shared"/images/digits/*.png "$shared"/images/digits/*.jpg "$shared"/images/formats/*.jpg "$shared"/images/formats/*.png
    flags="-timeout=10"
    max_len=65536 ;;
onnx)
    # The other "light" structure models build weights of hundreds of MB at load: too slow to mutate.
    copy "$shared/models/mnist-8.onnx" "$shared/models/structure/light_squeezenet.onnx" "$shared"/models/structure/*.pb
    # libFuzzer reports an allocation over -malloc_limit_mb as a finding: a file must not make the
    # loader allocate without bound. Folding may build constants of up to 1 GiB each and 2 GiB in all
    # (ConstantFolding.maxFoldedBytes; the "light" structure models build their weights so), hence the
    # limits; the kernels' weight packing of such models takes seconds under ASan.
    flags="-malloc_limit_mb=1100 -rss_limit_mb=4096 -timeout=30"
    max_len=81920 ;;
manifest)
    copy "$shared/models/models.json"
    seed sidecar.json '{"preprocessing": "mnist", "labels": "labels.txt", "family": "digits", "variant": "fp32", "version": 2, "accuracy": 0.98}'
    seed sidecar-spec.json '{"preprocessing": {"preset": "torch", "width": 224, "height": 224, "resize_short_side": 256, "crop": "center", "channel_order": "bgr", "layout": "nhwc", "scale": 0.0039, "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225], "invert": false, "dtype": "float16"}}'
    seed catalog.json '{"files": {"labels.txt": {"url": "https://example.com/labels.txt", "sha256": "2f06e72de813a8635c9bc0397ac447a601bdbfa7df4bebc278723b958831c9bf"}}, "models": {"mnist-8": {"download": {"url": "https://example.com/mnist-8.onnx", "sha256": "2f06e72de813a8635c9bc0397ac447a601bdbfa7df4bebc278723b958831c9bf", "size": 26454}, "files": ["labels.txt"], "metadata": {"preprocessing": "mnist"}}}}'
    max_len=4096 ;;
load-scanner)
    seed ok.json '{"id":1,"jsonrpc":"2.0","result":{"batch_size":1,"energy_mj":52.399,"image":{"format":"jpeg","height":168,"width":224},"model":"squeezenet1.1","predictions":[{"index":281,"label":"tabby","score":0.527589}],"timing_ms":{"decode":0.797,"inference":24.085,"queue":0.096,"total":25.05},"variant":"squeezenet1.1","version":"1"}}'
    seed images.json '{"id":2,"jsonrpc":"2.0","result":{"results":[{"variant":"a","batch_size":2,"timing_ms":{"queue":1,"inference":2},"predictions":[{"label":"x"}]},{"variant":"b"}]}}'
    seed error.json '{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"bad","data":{"reason":"unknown_model"}}}'
    seed batch.json '[{"jsonrpc":"2.0","id":1,"result":{"variant":"v","timing_ms":{"queue":0.5}}},{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"overloaded"}},1,"x",[]]'
    max_len=4096 ;;
esac

echo "fuzz.sh: fuzz-$name for ${seconds}s, max_len $max_len, seeds $(ls "$seeds" | wc -l) ($seeds), corpus $(ls "$work/corpus" | wc -l) ($work/corpus)"
log="$work/last-run.log"
# A Swift trap is reported by libFuzzer's deadly-signal handler (the Swift backtracer trips ASan).
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=no}"
status=0
"$scratch/release/fuzz-$name" "$work/corpus" "$seeds" "-max_total_time=$seconds" "-max_len=$max_len" \
    -rss_limit_mb=2048 -print_final_stats=1 "-artifact_prefix=$work/" $flags "$@" > "$log" 2>&1 || status=$?
grep -a -E '^#[0-9]+' "$log" | tail -3
grep -a -E '^(stat::|==[0-9]+==ERROR|SUMMARY|Fatal error|.*Test unit written)' "$log" || true
done_line=$(grep -a -E '^#[0-9]+' "$log" | tail -1)
execs=$(grep -a '^stat::number_of_executed_units:' "$log" | tail -1 | sed 's/.*: *//')
cov=$(printf '%s' "$done_line" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
ft=$(printf '%s' "$done_line" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
echo "fuzz.sh: fuzz-$name executions=${execs:-?} seconds=$seconds cov=${cov:-?} ft=${ft:-?} exit=$status (log: $log)"
exit $status
