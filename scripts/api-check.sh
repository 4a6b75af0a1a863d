#!/usr/bin/env bash
# Checks a running Glimpse server against openapi/openapi.yaml.
#
#   scripts/api-check.sh BASE_URL          e.g. scripts/api-check.sh http://127.0.0.1:8080
#
# 1. Creates (or reuses) a Python virtual environment in .build/api-venv with pinned
#    openapi-spec-validator and schemathesis (needs python3 >= 3.9 with venv, and PyPI the first time).
# 2. Validates openapi/openapi.yaml with openapi-spec-validator.
# 3. Runs a bounded schemathesis run against BASE_URL: examples, coverage and fuzzing phases on every
#    operation (JSON-RPC bodies both valid and invalid, raw image uploads, query parameters), checking
#    that nothing answers 5xx (other than the documented 503s), and that status codes, content types,
#    headers and response bodies match the document.
#
# Exits 0 when everything passes, non-zero on any failure.
#
# Environment:
#   API_CHECK_MAX_EXAMPLES  test cases per operation in the fuzzing phase (default 100)
#   API_CHECK_SEED          schemathesis seed (default 1, so runs are reproducible; "random" for a fresh one)
#   API_CHECK_TIMEOUT       wall-clock bound of the schemathesis run in seconds (default 150)
#   API_CHECK_TOKEN         API key sent as "Authorization: Bearer <key>" (for servers run with --api-keys)
set -euo pipefail

# Pinned tools. Both support Python 3.9+; tested with Python 3.11.
OPENAPI_SPEC_VALIDATOR_VERSION=0.9.0
SCHEMATHESIS_VERSION=4.32.5
HYPOTHESIS_VERSION=6.170.15

if [[ $# -ne 1 || "$1" == -* ]]; then
    echo "usage: $0 BASE_URL   (e.g. http://127.0.0.1:8080)" >&2
    exit 2
fi
BASE_URL="${1%/}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SPEC="$ROOT/openapi/openapi.yaml"
VENV="$ROOT/.build/api-venv"
MAX_EXAMPLES="${API_CHECK_MAX_EXAMPLES:-100}"
SEED="${API_CHECK_SEED:-1}"
RUN_TIMEOUT="${API_CHECK_TIMEOUT:-150}"

PYTHON="$(command -v python3 || true)"
if [[ -z "$PYTHON" ]]; then
    echo "api-check: python3 not found; install Python 3.9+ with venv (Debian: apt-get install python3 python3-venv)" >&2
    exit 2
fi
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)'; then
    echo "api-check: $("$PYTHON" --version 2>&1) is too old; schemathesis $SCHEMATHESIS_VERSION needs Python 3.9+" >&2
    exit 2
fi

# ---------------------------------------------------------------- virtual environment
mkdir -p "$ROOT/.build"
STAMP="$VENV/.api-check-stamp"
WANT="python=$("$PYTHON" -c 'import sys; print(sys.version.split()[0])') openapi-spec-validator==$OPENAPI_SPEC_VALIDATOR_VERSION schemathesis==$SCHEMATHESIS_VERSION hypothesis==$HYPOTHESIS_VERSION"
(
    # Serialize concurrent runs while the environment is built.
    if command -v flock >/dev/null; then
        exec 9>"$ROOT/.build/api-venv.lock"
        flock 9
    fi
    if [[ -x "$VENV/bin/schemathesis" && -x "$VENV/bin/openapi-spec-validator" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
        exit 0
    fi
    echo "api-check: setting up $VENV"
    rm -rf "$VENV"
    if ! "$PYTHON" -m venv "$VENV"; then
        echo "api-check: '$PYTHON -m venv' failed; install the venv module (Debian: apt-get install python3-venv)" >&2
        exit 2
    fi
    if ! "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet \
        "openapi-spec-validator==$OPENAPI_SPEC_VALIDATOR_VERSION" \
        "schemathesis==$SCHEMATHESIS_VERSION" \
        "hypothesis==$HYPOTHESIS_VERSION"; then
        rm -rf "$VENV"
        echo "api-check: pip could not install the pinned tools (is PyPI reachable?)" >&2
        exit 2
    fi
    echo "$WANT" >"$STAMP"
)

# ---------------------------------------------------------------- 1. the document itself
echo "api-check: validating openapi/openapi.yaml"
"$VENV/bin/openapi-spec-validator" "$SPEC"

# ---------------------------------------------------------------- 2. the live server
if ! curl -fsS --max-time 10 -o /dev/null "$BASE_URL/healthz"; then
    echo "api-check: no Glimpse server answers GET $BASE_URL/healthz" >&2
    exit 1
fi

# Per-operation settings. The documented 503s (a single JSON-RPC call or a REST upload refused for overload,
# e.g. a tiny deadline_ms that cannot be met; /readyz while no model is loaded or while draining) are
# answers by design, not server errors; 500 and every other 5xx still fail the run. The Open Inference
# Protocol endpoints under /v2 document 503 (not ready, overload) and 504 (deadline) the same way. POST /v1/classify
# rightly refuses almost every generated body (random bytes are not images): the "most generated data
# was rejected" warning is noise there.
CONFIG="$ROOT/.build/api-check.toml"
cat >"$CONFIG" <<'TOML'
[[operations]]
include-path = "/rpc"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503"]

[[operations]]
include-path = "/v1/classify"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503"]
warnings = false

[[operations]]
include-path = "/readyz"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503"]

[[operations]]
include-path-regex = "^/v2/"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", "503", "504"]
warnings = false
TOML

args=(
    --config-file "$CONFIG"
    run "$SPEC"
    --url "$BASE_URL"
    # 5xx other than the documented ones, undocumented status codes, wrong Content-Type, missing
    # documented headers (Retry-After, WWW-Authenticate) and bodies that do not match their schema.
    # Left out on purpose: negative_data_rejection (a JSON-RPC server answers invalid calls with HTTP 200
    # and an error object, by design), positive_data_acceptance (valid-looking classify calls with random
    # images are rightly refused), unsupported_method (other methods get 404 from the router, not 405).
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance
    --max-examples "$MAX_EXAMPLES"
    --request-timeout 30
    --workers 1
    --generation-database none
    --no-color
)
# GET / (HTML) and GET /metrics (Prometheus text) are not excluded: they take no input and their schema is
# a non-empty string, so the checks there come down to status code and content type. promtool checks the
# metrics text itself (MetricsEndToEndTests).
if [[ "$SEED" != "random" ]]; then args+=(--seed "$SEED"); fi
if [[ -n "${API_CHECK_TOKEN:-}" ]]; then args+=(--header "Authorization: Bearer $API_CHECK_TOKEN"); fi

echo "api-check: schemathesis $SCHEMATHESIS_VERSION against $BASE_URL (max $MAX_EXAMPLES examples per operation, ${RUN_TIMEOUT}s bound)"
cd "$ROOT/.build"  # keep any files schemathesis writes out of the source tree
status=0
timeout --kill-after=10 "$RUN_TIMEOUT" "$VENV/bin/schemathesis" "${args[@]}" || status=$?
if [[ $status -eq 124 || $status -eq 137 ]]; then
    echo "api-check: schemathesis did not finish within ${RUN_TIMEOUT}s" >&2
    exit 1
fi
if [[ $status -ne 0 ]]; then
    echo "api-check: FAILED (schemathesis exit status $status)" >&2
    exit 1
fi
echo "api-check: OK"
