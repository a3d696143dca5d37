#!/usr/bin/env bash
# `gym eval aggregate` over N recorded rollouts, for each N in NS (default
# "10000 100000 1000000"): peak RSS, wall and CPU, with and without the
# rollout health check that follows the metrics. The target is < 100 MiB at
# 100k rows and a peak that stays flat from 10k to 1M: the rollouts stream
# from disk, nothing per row is held.
#
# The rows are real: `gym eval run` collects example_single_tool_call's five
# prompts twice each on the replay model, and those ten rollouts are copied N
# times, each copy made distinct (its own task and response id), as tasks of
# REPEATS (default 4) rollouts spread over four shards, every shard written
# in reverse order so the merge has to sort.
#
# GYM=path measures that binary instead of building this checkout; BEFORE=path
# also measures an older build on the same rows, alternating with this one,
# and fails unless both write the same bytes. KEEP=1 keeps the work
# directory; HEALTH=off (or on) measures only that way.
set -euo pipefail
# A relative GYM=<binary> is the caller's, from where the script was run.
if [[ -n ${GYM:-} ]]; then GYM=$(realpath "$GYM"); fi
cd "$(dirname "$0")/.."
work=$(mktemp -d)
cleanup() {
  if [[ ${KEEP:-0} == 1 ]]; then echo "work directory: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

repeats=${REPEATS:-4}
if [[ -n ${GYM:-} ]]; then
  gym=$GYM
else
  go build -o "$work/gym" ./cmd/gym
  gym=$work/gym
fi

cd "$work"
builds=(this)
[[ -n ${BEFORE:-} ]] && builds=(before this)
binary() { if [[ $1 == before ]]; then realpath "$BEFORE"; else echo "$gym"; fi; }
"$gym" eval run --resources-server example_single_tool_call --model-type replay_model --split example \
  --num-repeats 2 --no-health-check -o seed/collected.jsonl > seed.log 2>&1 || { tail -20 seed.log; exit 1; }
# The collector writes in completion order: sorted, the copies are the same
# on every run.
awk '{ match($0, /"_ng_task_index":[0-9]+,"_ng_rollout_index":[0-9]+/); print substr($0, RSTART, RLENGTH) "\t" $0 }' \
  seed/collected.jsonl | sort | cut -f2- > seed/rollouts.jsonl

for n in ${NS:-10000 100000 1000000}; do
  rm -rf shards results && mkdir shards
  awk -v n="$n" -v r="$repeats" -v dir=shards '{ l[NR] = $0 } END {
    for (i = n - 1; i >= 0; i--) {
      row = l[i % NR + 1]; task = int(i / r)
      sub(/"_ng_task_index":[0-9]+/, "\"_ng_task_index\":" task, row)
      sub(/"_ng_rollout_index":[0-9]+/, "\"_ng_rollout_index\":" i % r, row)
      sub(/"id":"resp_/, "\"id\":\"resp_" i "_", row)
      print row > (dir "/shard_" task % 4 ".jsonl")
    } }' seed/rollouts.jsonl
  size=$(cat shards/*.jsonl | wc -c)
  for health in ${HEALTH:-off on}; do
    flag=""
    [[ $health == off ]] && flag=--no-health-check
    for build in "${builds[@]}"; do
      rm -rf "results_$build"
      /usr/bin/time -f '%M %e %U %S' -o time.txt "$(binary "$build")" eval aggregate --resources-server example_single_tool_call \
        -i 'shards/*.jsonl' -o "results_$build/all.jsonl" $flag > aggregate.out 2> aggregate.err || { tail -20 aggregate.err; exit 1; }
      read -r rss_kb wall user sys < time.txt
      [[ $(wc -l < "results_$build/all.jsonl") == "$n" ]] || { echo "merged $(wc -l < "results_$build/all.jsonl") rows, want $n" >&2; exit 1; }
      awk -v b="$build" -v n="$n" -v h="$health" -v kb="$rss_kb" -v w="$wall" -v u="$user" -v s="$sys" -v mb="$size" 'BEGIN {
        printf "%-6s rows %8d (%5.0f MiB)  health check %-3s  peak RSS %6.1f MiB  wall %6.1f s  CPU %6.1f s (%.1f µs/row)\n",
          b, n, mb/1048576, h, kb/1024, w, u+s, (u+s)*1e6/n }'
    done
    if [[ -n ${BEFORE:-} ]]; then
      for f in all.jsonl all_aggregate_metrics.json quality_summary.json rollout_verdicts.jsonl; do
        [[ -e results_this/$f || -e results_before/$f ]] || continue
        cmp -s "results_before/$f" "results_this/$f" || { echo "$f differs between the builds" >&2; exit 1; }
      done
      echo "       the same bytes from both builds (merged rollouts, metrics, health files)"
    fi
    rm -rf results_before results_this
  done
done
