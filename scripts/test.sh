#!/usr/bin/env bash
# The test command: installs what the tests need, then runs the whole suite.
# Compute targets (tensor, kernels, engine, ONNX, image) are built optimized in every configuration
# (see Package.swift), so the debug test build runs real kernels at full speed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
if [ ! -d ../shared ]; then
  echo "error: test data not found at ../shared (next to this repository)" >&2
  exit 1
fi
scripts/check-layers.sh
scripts/check-size.sh
exec swift test "$@"
