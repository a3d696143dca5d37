#!/usr/bin/env bash
# Holds N (default 10000) requests in flight at once through a real
# `gym serve` openai_model to a slow local upstream, lets them all finish,
# and reports whether every one completed and the gym process's peak RSS
# (VmHWM). The upstream speaks TLS and HTTP/2, as hosted endpoints do;
# HTTP1=1 makes it plain HTTP/1.1, like a local vLLM, which costs gym a
# connection (and a file descriptor) per request. MAX_RSS_MB (default 500)
# is the pass mark.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/gym" ./cmd/gym
# Each request is a connection into gym (and, over HTTP/1.1, one out of it).
ulimit -n "$(ulimit -Hn)"
args=(-inflight.gym="$work/gym" -inflight.n="${N:-10000}" -inflight.max-rss-mb="${MAX_RSS_MB:-500}")
if [[ -n ${HTTP1:-} ]]; then
  args+=(-inflight.http1)
fi
go test -count=1 -run '^TestInflight$' -v ./responses_api_models/openai_model -args "${args[@]}" 2>&1 |
  grep -v 'TLS handshake error' | grep -E 'inflight_test|^(---|ok|FAIL|PASS)'
