# Sourced by the batching benchmarks, from the repository root: checks the shared test data, installs
# what the server needs, builds the release server and load generator, and makes a work folder in $work.
shared=../shared
[ -d "$shared" ] || { echo "error: ../shared not found" >&2; exit 1; }
source tools/lib/bench.sh
scripts/setup.sh
build_release
work=$(mktemp -d)
