#!/usr/bin/env bash
# Installs what Glimpse builds against (Debian -dev packages); with --test, also the real peers the
# tests use: curl, nghttp and h2load (nghttp2-client), nghttpd (nghttp2-server), promtool and
# prometheus, headless chromium (status page), openssl (test certificates), onnxruntime from
# PyPI in a virtual environment at .build/onnxruntime-venv (tests run quantized models in it), and
# NVIDIA's tritonclient (HTTP) in .build/tritonclient-venv (the Open Inference Protocol tests).
set -euo pipefail
need=(libturbojpeg0-dev libspng-dev libnghttp2-dev libssl-dev zlib1g-dev pkg-config)
if [ "${1:-}" = "--test" ]; then
  need+=(curl nghttp2-client nghttp2-server prometheus chromium openssl python3-venv)
fi
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "installing: ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "${1:-}" = "--test" ]; then
  venv="$(cd "$(dirname "$0")/.." && pwd)/.build/onnxruntime-venv"
  if ! "$venv/bin/python" -c "import onnxruntime, numpy" 2>/dev/null; then
    echo "installing onnxruntime and numpy into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q onnxruntime numpy
  fi
  # A client Glimpse did not write, for the Open Inference Protocol (KServe v2) tests; pinned.
  triton="$(cd "$(dirname "$0")/.." && pwd)/.build/tritonclient-venv"
  if ! "$triton/bin/python" -c "import tritonclient.http, numpy" 2>/dev/null; then
    echo "installing tritonclient[http] into $triton" >&2
    python3 -m venv "$triton"
    "$triton/bin/pip" install -q "tritonclient[http]==2.50.0"
  fi
fi
