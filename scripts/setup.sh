#!/usr/bin/env bash
# Installs what Glimpse builds against (Debian -dev packages); with --test, also the real peers the
# tests use: curl, nghttp and h2load (nghttp2-client), nghttpd (nghttp2-server), promtool and
# prometheus, headless chromium (status page), openssl (test certificates).
set -euo pipefail
need=(libturbojpeg0-dev libspng-dev libnghttp2-dev libssl-dev zlib1g-dev pkg-config)
if [ "${1:-}" = "--test" ]; then
  need+=(curl nghttp2-client nghttp2-server prometheus chromium openssl)
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
