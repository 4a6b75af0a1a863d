#!/usr/bin/env bash
# The run command: installs the C libraries, builds in release mode and serves the models of models/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product glimpse
exec .build/release/glimpse serve "$@"
