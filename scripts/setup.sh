#!/usr/bin/env bash
# Installs what Glimpse builds against (Debian -dev packages); with --test, also the real peers the
# tests use: curl, nghttp and h2load (nghttp2-client), nghttpd (nghttp2-server), promtool and
# prometheus, headless chromium (status page), openssl (test certificates), haproxy (the cluster tests), onnxruntime from
# PyPI in a virtual environment at .build/onnxruntime-venv (tests run quantized models in it), and
# NVIDIA's tritonclient (HTTP) in .build/tritonclient-venv and KServe's Python client in
# .build/kserve-venv (the Open Inference Protocol tests), and kubernetes-validate in .build/k8s-venv (the
# Kubernetes manifests of deploy/k8s/).
set -euo pipefail
need=(libturbojpeg0-dev libspng-dev libnghttp2-dev libssl-dev zlib1g-dev pkg-config)
if [ "${1:-}" = "--test" ]; then
  need+=(curl nghttp2-client nghttp2-server prometheus chromium openssl python3-venv haproxy)
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
  if ! "$venv/bin/python" -c "import onnxruntime, numpy, onnx" 2>/dev/null; then
    echo "installing onnxruntime, numpy and onnx into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q onnxruntime numpy onnx
  fi
  # A client Glimpse did not write, for the Open Inference Protocol (KServe v2) tests; pinned.
  triton="$(cd "$(dirname "$0")/.." && pwd)/.build/tritonclient-venv"
  if ! "$triton/bin/python" -c "import tritonclient.http, numpy" 2>/dev/null; then
    echo "installing tritonclient[http] into $triton" >&2
    python3 -m venv "$triton"
    "$triton/bin/pip" install -q "tritonclient[http]==2.50.0"
  fi
  # KServe's InferenceRESTClient (protocol v2), pinned. The kserve wheel's dependencies include its model
  # server's whole stack (grpcio-tools, cryptography, pillow, aiohttp, uvicorn[standard], ...), so it is
  # installed --no-deps with what `from kserve import InferenceRESTClient` needs, found by trying: the
  # package's __init__ imports the model server (fastapi, uvicorn, cloudevents, prometheus-client,
  # grpc-interceptor, timing-asgi, watchfiles, psutil, pandas) and the Kubernetes client (kubernetes,
  # pyyaml, tabulate) even to reach the REST client. Version ranges are kserve 0.21.0's own. h2 lets
  # httpx speak HTTP/2 (h2c with a transport built http1=False, http2=True). pip then warns about the
  # dependencies left out (grpcio-tools, cryptography, pillow, pyjwt, pyasn1, python-multipart).
  kserve="$(cd "$(dirname "$0")/.." && pwd)/.build/kserve-venv"
  if ! "$kserve/bin/python" -c "from kserve import InferenceRESTClient; import h2" 2>/dev/null; then
    echo "installing kserve (InferenceRESTClient) into $kserve" >&2
    python3 -m venv "$kserve"
    "$kserve/bin/pip" install -q --no-deps "kserve==0.21.0"
    "$kserve/bin/pip" install -q "httpx>=0.27.2,<1" "h2>=3,<5" "orjson>=3.11.6,<4" "numpy>=1.26,<3" \
      "pandas>=2.2,<3" "protobuf>=6.33.5,<7" "grpcio>=1.73,<2" "grpc-interceptor>=0.15.4,<1" \
      "fastapi>=0.115.3,<1" "uvicorn>=0.30.6,<1" "cloudevents>=1.6.2,<2" "prometheus-client>=0.20,<1" \
      "timing-asgi>=0.3,<1" "watchfiles>=1.0.4,<2" "psutil>=5.9.6,<6" "python-dateutil>=2.8,<3" \
      "kubernetes>=23.3" "pyyaml>=6,<7" "tabulate>=0.9,<1"
  fi
  # kubernetes-validate, pinned, for the manifests of deploy/k8s/ (KubernetesManifestTests). It bundles the
  # OpenAPI schemas of Kubernetes 1.25 to 1.37 and runs offline. It has no schema for KServe's kinds:
  # deploy/k8s/validate.py checks those with the kserve models of .build/kserve-venv.
  k8s="$(cd "$(dirname "$0")/.." && pwd)/.build/k8s-venv"
  if [ "$("$k8s/bin/kubernetes-validate" --version 2>/dev/null)" != "1.37.0" ]; then
    echo "installing kubernetes-validate into $k8s" >&2
    python3 -m venv "$k8s"
    "$k8s/bin/pip" install -q "kubernetes-validate==1.37.0"
  fi
fi
