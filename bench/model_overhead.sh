#!/usr/bin/env bash
# What the openai_model server adds to a request against a local fake
# upstream: latency one request at a time (p50 and p99: direct, through gym,
# and through a bare httputil.ReverseProxy as the floor of any extra Go
# hop), and throughput at 256 concurrent clients, direct, through gym and
# through the bare proxy, with an upstream that answers at once and one that
# takes 100 ms. Numbers are only meaningful on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench 'AddedLatency|Throughput' -benchtime "${BENCHTIME:-3s}" -count "${COUNT:-1}" ./responses_api_models/openai_model
