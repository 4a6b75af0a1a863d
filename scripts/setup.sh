#!/usr/bin/env bash
# Installs the C libraries and tools Glimpse builds against and tests with (Debian packages).
set -euo pipefail
need=(libturbojpeg0-dev libspng-dev libnghttp2-dev nghttp2-client pkg-config curl)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
