#!/usr/bin/env bash
# The test command: installs what the tests need, then runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
if [ ! -d ../shared ]; then
  echo "error: test data not found at ../shared (next to this repository)" >&2
  exit 1
fi
scripts/check-layers.sh
scripts/check-size.sh
# The tests run in a release build (with -enable-testing for `@testable import`): the servers they start
# (the release glimpse beside the test bundle), the int8 kernels and the image pipeline run as users run
# them. On 2 cores the release build takes about 1.2x the debug one, and the tests under half the time.
exec swift test -c release -Xswiftc -enable-testing "$@"
