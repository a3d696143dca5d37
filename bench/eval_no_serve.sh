#!/usr/bin/env bash
# `gym eval run --no-serve` over ROWS (default 100000) input rows against fast
# local servers: `gym env start` runs example_single_tool_call, its
# simple_agent and the replay model, and gym collects every row (a full
# rollout each: seed_session, model calls, a tool call for most rows, verify)
# and aggregates. Prints the collector's peak RSS (the target is < 150 MB: the
# rows stream from disk, nothing holds them all), its throughput and its CPU
# per rollout, then the floor beside it: bench/rundriver driving the same
# agent at the same concurrency, and the collector's CPU as a multiple of the
# driver's.
#
# CONCURRENCY (default 256) sets --concurrency; DRIVER_DURATION (default 10s,
# 0 to skip) how long the floor runs; KEEP=1 keeps the work directory.
set -euo pipefail
# A relative GYM=<binary> is the caller's, from where the script was run.
if [[ -n ${GYM:-} ]]; then GYM=$(realpath "$GYM"); fi
cd "$(dirname "$0")/.."
repo=$PWD
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
work=$(mktemp -d)
pid=""
cleanup() {
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    kill -INT "$pid"
    wait "$pid" || true
  fi
  if [[ ${KEEP:-0} == 1 ]]; then echo "work directory: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

rows=${ROWS:-100000}
head_port=${HEAD_PORT:-$((21000 + RANDOM % 4000))}
# GYM=<binary> measures that build (an older commit's, say) instead of this
# checkout's.
if [[ -n ${GYM:-} ]]; then cp "$GYM" "$work/gym"; else go build -o "$work/gym" ./cmd/gym; fi

# Distinct rows (an id field each, which the verifier ignores) over the five
# example prompts the replay model has recordings for.
awk -v n="$rows" '{ l[NR] = $0 } END { for (i = 0; i < n; i++) { r = l[i % NR + 1]; sub(/^\{/, "{\"id\": " i ", ", r); print r } }' \
  resources_servers/example_single_tool_call/data/example.jsonl > "$work/rows.jsonl"

(cd "$work" && exec ./gym env start --resources-server example_single_tool_call --model-type replay_model \
  ++head_server.port="$head_port" > start.log 2>&1) &
pid=$!
wait_ready "$work/start.log" "$pid"

cd "$work"
start=$(date +%s.%N)
/usr/bin/time -f '%M %e %U %S' -o time.txt ./gym eval run --no-serve -a example_single_tool_call_simple_agent \
  -i rows.jsonl -o results/bench.jsonl --concurrency "${CONCURRENCY:-256}" ++head_server.port="$head_port" ${EXTRA:-} \
  > run.out 2> run.err || { tail -20 run.err; exit 1; }
read -r rss_kb wall user sys < time.txt
done_rows=$(wc -l < results/bench.jsonl)
echo "rows: $rows  rollouts written: $done_rows  failures: $(wc -l < results/bench_failures.jsonl)"
awk -v kb="$rss_kb" -v w="$wall" -v u="$user" -v s="$sys" -v n="$done_rows" 'BEGIN {
  printf "collector peak RSS: %.1f MiB\nwall: %.1f s  throughput: %.0f rollouts/s  collector CPU: %.2f s (%.3f ms/rollout)\n", kb/1024, w, n/w, u+s, (u+s)*1000/n }'
grep -A3 'Key metrics' run.out | head -4 || true # none when aggregation is off

# The floor beside it, measured in the same run: bench/rundriver, a bare
# net/http client that only sends each row to the agent's /run and reads the
# answer, at the same concurrency, for DRIVER_DURATION (default 10s). The
# VM's speed moves the collector's CPU per rollout much more than its ratio
# to the driver's. DRIVER_DURATION=0 (or 0s) skips it.
if [[ ! ${DRIVER_DURATION:-10s} =~ ^0+[a-z]*$ ]]; then
  (cd "$repo" && go build -o "$work/rundriver" ./bench/rundriver)
  agent=$(grep -o 'example_single_tool_call_simple_agent .*http://127.0.0.1:[0-9]*' start.log | grep -o 'http://.*')
  ./rundriver -url "$agent" -rows "$repo/resources_servers/example_single_tool_call/data/example.jsonl" \
    -concurrency "${CONCURRENCY:-256}" -duration "${DRIVER_DURATION:-10s}" > driver.txt
  awk -v u="$user" -v s="$sys" -v n="$done_rows" '
    / rollouts in / { line = $0 }
    /rundriver \(this client\)/ { d = $(NF-5) }
    END { if (d <= 0) { print "floor: bench/rundriver reported no CPU per rollout"; exit }
          c = (u+s)*1000/n
          printf "floor, bench/rundriver at the same concurrency: %.3f ms/rollout; the collector is %.2f times it\n", d, c/d
          print "  " line }' driver.txt
fi
