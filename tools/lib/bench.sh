# Sourced by the serving benchmarks (bash), from the repository root: option parsing, the release
# build, and a work folder with a server that is stopped on exit.

# parse_options --OPTION=VARIABLE ... -- "$@": each `--OPTION VALUE` of the arguments sets VARIABLE
# (an option may have several spellings); `--no-build` sets build=0; anything else stops the script.
build=1
parse_options() {
  local -A variables=()
  while [ "$1" != -- ]; do variables[${1%%=*}]=${1#*=}; shift; done
  shift
  while [ $# -gt 0 ]; do
    if [ "$1" = --no-build ]; then
      build=0; shift
    elif [ -n "${variables[$1]:-}" ]; then
      [ $# -ge 2 ] || { echo "option $1 needs a value (see the header of $0)" >&2; exit 2; }
      printf -v "${variables[$1]}" '%s' "$2"; shift 2
    else
      echo "unknown option $1 (see the header of $0)" >&2; exit 2
    fi
  done
}

# build_release: the release server and load generator.
build_release() {
  swift build -c release --product glimpse >/dev/null
  swift build -c release --product glimpse-load >/dev/null
}

# make_work_folder: a temporary folder in $work, removed on exit (kept and named when KEEP_WORK is
# set); the server ($server) and the sampler ($sampler) the script starts are stopped on exit.
make_work_folder() {
  work=$(mktemp -d)
  server=
  sampler=
  trap stop_and_clean EXIT
  trap 'exit 130' INT TERM
}

stop_and_clean() {
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null || true
  stop_server
  if [ -n "${KEEP_WORK:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}

# start_server LOG LIMIT ARGUMENTS...: `glimpse serve ARGUMENTS` in the background for at most LIMIT
# seconds, its log in LOG, as $server; returns once it listens (or stops the script).
start_server() {
  local log=$1 limit=$2
  shift 2
  timeout "$limit" .build/release/glimpse serve "$@" 2>"$log" &
  server=$!
  for _ in $(seq 300); do grep -q "listening on" "$log" && break; sleep 0.1; done
  grep -q "listening on" "$log" || { cat "$log" >&2; exit 1; }
}

stop_server() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; server=; fi
}
