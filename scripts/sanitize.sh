#!/usr/bin/env bash
# The test suite under a sanitizer (issue: reliability):
#
#   scripts/sanitize.sh address [swift test options]    # AddressSanitizer (and LeakSanitizer off: see below)
#   scripts/sanitize.sh thread  [swift test options]    # ThreadSanitizer
#
# Builds the tests in release (as scripts/test.sh does) with the sanitizer into .build-address or
# .build-thread, so the glimpse servers the tests start are instrumented too. Every process writes its
# reports to files under .build-KIND/sanitizer-reports/ (the servers' stderr goes to logs the tests do
# not show); the run fails if any test fails or any report was written. Extra options go to
# `swift test`, e.g. --filter BatchQueueTests.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-}
case "$kind" in
  address|thread) shift ;;
  *) echo "usage: scripts/sanitize.sh address|thread [swift test options]" >&2; exit 2 ;;
esac
scripts/setup.sh --test
scratch=.build-$kind
reports=$PWD/$scratch/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
# LeakSanitizer is off: the Swift runtime keeps metadata caches and NIO its singletons for the life of
# the process, which it reports as leaks at exit. Unbounded growth is what bench-memory measures.
export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=0:abort_on_error=0"
# The suppressions cover reports inside dependencies that come from orderings ThreadSanitizer cannot
# see (each is explained in the file). Timeouts of the tests that wait on a server scale with
# GLIMPSE_TEST_TIME_SCALE: instrumented engines run several times slower.
export TSAN_OPTIONS="log_path=$reports/tsan:halt_on_error=0:suppressions=$PWD/scripts/tsan-suppressions.txt"
if [ "$kind" = thread ]; then export GLIMPSE_TEST_TIME_SCALE=${GLIMPSE_TEST_TIME_SCALE:-8}; else export GLIMPSE_TEST_TIME_SCALE=${GLIMPSE_TEST_TIME_SCALE:-3}; fi
started=$(date +%s)
status=0
swift test -c release -Xswiftc -enable-testing --sanitize="$kind" --scratch-path "$scratch" "$@" || status=$?
echo "sanitize $kind: swift test exited $status after $(( $(date +%s) - started )) s"
found=$(find "$reports" -type f | wc -l)
if [ "$found" -gt 0 ]; then
  echo "sanitize $kind: $found report file(s):" >&2
  for f in $(find "$reports" -type f | head -20); do echo "== $f" >&2; head -40 "$f" >&2; done
  exit 1
fi
echo "sanitize $kind: no reports"
exit "$status"
