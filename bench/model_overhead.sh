#!/usr/bin/env bash
# What the openai_model server costs in front of an instant local upstream,
# every proxy a process of its own (TestOverhead): latency one request at a
# time (p50, p99 and what each adds over direct), then throughput at 256
# concurrent clients (req/s and its ratio to direct, in rounds with the
# targets in turn) and the proxy process's CPU time per request, read from
# /proc (in 10 ms ticks, so short runs are coarse), with its system time
# (the kernel's part) beside it. Beside gym: direct,
# gym-floor (a proxy that only reads each body and posts it on, on gym's
# own HTTP/1.1 server and transport: the floor of gym's stack), a bare
# httputil.ReverseProxy (the floor of a net/http hop) and Debian's nginx
# as a plain keep-alive reverse proxy. Run as root, the script installs
# nginx when it is missing; otherwise nginx is skipped, with a message.
#
# BASE=<commit> also builds gym at that commit (in a temporary git
# worktree) and measures it beside the working tree's, as gym-base, in the
# same run. GYM=<binary> measures that build in place of the working
# tree's. PROFILE=<file> runs the working tree's server from the test
# binary (the same code as `gym serve`) and writes its CPU profile there
# (`go tool pprof -top <file>`), so it cannot go with GYM.
# GYM_ENV="NAME=value ..." reaches the gym processes only (GYM_ENV=GOGC=400,
# say). DURATION (3s), ROUNDS (3), LATENCY_N
# (3000) and CLIENTS (256) change the run. Numbers are only meaningful on
# an otherwise idle machine.
set -euo pipefail
# A relative GYM=<binary> is the caller's, from where the script was run.
if [[ -n ${GYM:-} ]]; then GYM=$(realpath "$GYM"); fi
cd "$(dirname "$0")/.."
work=$(mktemp -d)
cleanup() {
  if [[ -d $work/base ]]; then git worktree remove --force "$work/base" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

nginx=$(command -v nginx || true)
if [[ -z $nginx && -x /usr/sbin/nginx ]]; then nginx=/usr/sbin/nginx; fi
if [[ -z $nginx && $(id -u) == 0 ]]; then
  echo "installing nginx (apt-get) to measure it beside gym" >&2
  if apt-get install -y -qq nginx >"$work/apt.log" 2>&1 ||
    { apt-get update -qq >>"$work/apt.log" 2>&1 && apt-get install -y -qq nginx >>"$work/apt.log" 2>&1; }; then
    nginx=/usr/sbin/nginx
  else
    echo "could not install nginx (see below); measuring without it" >&2
    tail -5 "$work/apt.log" >&2
  fi
fi
if [[ -z $nginx ]]; then
  echo "nginx is not installed (apt-get install nginx, as root): measuring without it" >&2
fi

args=(-overhead.duration="${DURATION:-3s}" -overhead.rounds="${ROUNDS:-3}"
  -overhead.latency-n="${LATENCY_N:-3000}" -overhead.clients="${CLIENTS:-256}"
  -overhead.gym-env="${GYM_ENV:-}")
if [[ -n ${PROFILE:-} && -n ${GYM:-} ]]; then
  echo "PROFILE profiles the working tree's server, not GYM's: set one of them" >&2
  exit 2
fi
if [[ -n ${PROFILE:-} ]]; then
  args+=(-overhead.cpuprofile="$(realpath -m "$PROFILE")")
else
  if [[ -n ${GYM:-} ]]; then cp "$GYM" "$work/gym"; else go build -o "$work/gym" ./cmd/gym; fi
  args+=(-overhead.gym="$work/gym")
fi
if [[ -n ${BASE:-} ]]; then
  git worktree add --quiet --detach "$work/base" "$BASE"
  (cd "$work/base" && go build -o "$work/gym-base" ./cmd/gym)
  args+=(-overhead.base-gym="$work/gym-base")
fi
if [[ -n $nginx ]]; then
  args+=(-overhead.nginx="$nginx")
fi
go test -c -o "$work/openai_model.test" ./responses_api_models/openai_model
ulimit -n "$(ulimit -Hn)"
"$work/openai_model.test" -test.run '^TestOverhead$' -test.v "${args[@]}" | grep -v -E '^(=== RUN|--- PASS|PASS$)'
