#!/usr/bin/env bash
# End-to-end rollouts/s with no model: `gym env start` runs
# example_single_tool_call, its simple_agent and the replay model
# (responses_api_models/replay_model answering from the recorded
# example_rollouts.jsonl), and bench/rundriver drives the agent's /run with
# the 5 example rows at 64 and 256 concurrent clients, DURATION (10s) each.
# Every rollout is a full one: seed_session, two model calls and a
# get_weather call for three of the five rows, verify. Each server's CPU per
# 1000 rollouts (and the system time of it) and peak RSS follow, then the
# floor: bench/floor's trivial Go servers making the same exchanges, in as
# many processes, driven the same way, once with net/http's client, once
# with gym's plain-http transport in the floor agent, and once with that
# transport and every floor server on a local socket beside its port, as
# gym's servers are.
#
# CAPTURE=1 turns on model-call capture (observability_enabled): every
# model call is then appended to its rollout's capture file, one new file
# per rollout, in CAPTURE_DIR (default: calls/ in the work directory; put
# it on tmpfs, e.g. /dev/shm/calls, to see the cost without the disk's).
# CONCURRENCY (default "64 256") and DURATION change the levels; KEEP=1 keeps
# the work directory (the servers' log is start.log there). GOGC or GOMEMLIMIT in
# the environment reach every server: a GOGC turns off the servers' own GC
# budget (GOGC=100 measures Go's default).
set -euo pipefail
# A relative GYM=<binary> is the caller's, from where the script was run.
if [[ -n ${GYM:-} ]]; then GYM=$(realpath "$GYM"); fi
cd "$(dirname "$0")/.."
repo=$PWD
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
work=$(mktemp -d)
pid=""
floors=()
cleanup() {
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    kill -INT "$pid"
    wait "$pid" || true
  fi
  for f in "${floors[@]}"; do kill "$f" 2>/dev/null || true; done
  if [[ ${KEEP:-0} == 1 ]]; then echo "work directory: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# GYM=<binary> measures that build (an older commit's, say) instead of this
# checkout's.
if [[ -n ${GYM:-} ]]; then cp "$GYM" "$work/gym"; else go build -o "$work/gym" ./cmd/gym; fi
go build -o "$work/rundriver" ./bench/rundriver
go build -o "$work/floor" ./bench/floor

# The configs and the recordings come from the binary's install root, as
# for a user with no checkout; the servers run in an empty directory.
capture=()
if [[ ${CAPTURE:-0} == 1 ]]; then
  capture=(++observability_enabled=true "++model_call_capture_dir=${CAPTURE_DIR:-$work/calls}")
fi
(cd "$work" && exec ./gym env start \
  --config resources_servers/example_single_tool_call/configs/example_single_tool_call.yaml \
  --config responses_api_models/replay_model/configs/replay_model.yaml \
  ++head_server.port="${HEAD_PORT:-$((21000 + RANDOM % 4000))}" "${capture[@]}" \
  > start.log 2>&1) &
pid=$!
wait_ready "$work/start.log" "$pid"
agent=$(grep -o 'example_single_tool_call_simple_agent .*http://127.0.0.1:[0-9]*' "$work/start.log" | grep -o 'http://.*')

# CPU seconds a process has used so far, and the system (kernel) seconds
# of them, from /proc (Linux).
cpu() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz, $15 / hz}' "/proc/$1/stat"; }
# per1000 NAME "BEFORE" "AFTER" N prints NAME's CPU seconds, and the system
# seconds of them, per 1000 of the N rollouts between the two cpu readings.
per1000() {
  awk -v name="$1" -v a="$2" -v b="$3" -v n="$4" 'BEGIN {
    split(a, x, " "); split(b, y, " ")
    printf "    %-40s %6.3f CPU s per 1000 rollouts, %5.3f of them system\n", name, (y[1] - x[1]) * 1000 / n, (y[2] - x[2]) * 1000 / n }'
}
mapfile -t servers < <(awk '/ \(go\) / {print $1 "=" $NF}' "$work/start.log")
rows="$repo/resources_servers/example_single_tool_call/data/example.jsonl"

echo "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); agent at $agent"
for c in ${CONCURRENCY:-64 256}; do
  declare -A before=()
  for s in "${servers[@]}"; do before[$s]=$(cpu "${s#*=}"); done
  "$work/rundriver" -url "$agent" -rows "$rows" -concurrency "$c" -duration "${DURATION:-10s}" | tee "$work/level.txt"
  # Where the time went: CPU seconds of each process per 1000 rollouts.
  n=$(grep -o '[0-9]* rollouts in' "$work/level.txt" | cut -d' ' -f1)
  for s in "${servers[@]}"; do
    per1000 "${s%%=*}" "${before[$s]}" "$(cpu "${s#*=}")" "$n"
  done
done
# Each gym server's peak resident memory over both levels.
for s in "${servers[@]}"; do
  awk -v name="${s%%=*}" '/^VmHWM/ {printf "    %-40s %6.1f MiB peak RSS\n", name, $2 / 1024}' "/proc/${s#*=}/status"
done

# The floor: the same exchanges per rollout between trivial Go servers
# (bench/floor), in as many processes, driven the same way; then again with
# the floor agent calling through gym's own plain-http transport, as gym's
# agent does (net/http's server on both); then with every floor server on a
# local socket beside its port too, which that transport dials, as gym's
# servers are.
port() { for _ in $(seq 100); do a=$(grep -o '127.0.0.1:[0-9]*' "$1" 2>/dev/null) && { echo "$a"; return; }; sleep 0.05; done; }
for variant in net/http gym-client local-socket; do
  client=() listen=()
  case $variant in
    gym-client) client=(-gym-client) ;;
    local-socket) client=(-gym-client) listen=(-local-socket) ;;
  esac
  "$work/floor" -backend "${listen[@]}" > "$work/floor.resources" & floors+=($!); resources_pid=$!
  "$work/floor" -backend "${listen[@]}" > "$work/floor.model" & floors+=($!); model_pid=$!
  resources=$(port "$work/floor.resources"); model=$(port "$work/floor.model")
  "$work/floor" -agent "${client[@]}" "${listen[@]}" -resources "http://$resources" -model "http://$model" > "$work/floor.agent" & floors+=($!); agent_pid=$!
  agent=$(port "$work/floor.agent")
  case $variant in
    net/http) echo "floor (bench/floor, trivial Go servers, the same exchanges per rollout):" ;;
    gym-client) echo "floor, its agent calling through gym's plain-http transport (bench/floor -gym-client):" ;;
    local-socket) echo "floor, on gym's transport, every server on a local socket and raw system calls too, as gym's (bench/floor -gym-client -local-socket):" ;;
  esac
  for c in ${CONCURRENCY:-64 256}; do
    declare -A before=()
    for p in $resources_pid $model_pid $agent_pid; do before[$p]=$(cpu "$p"); done
    "$work/rundriver" -url "http://$agent" -rows "$rows" -concurrency "$c" -duration "${DURATION:-10s}" | tee "$work/level.txt"
    n=$(grep -o '[0-9]* rollouts in' "$work/level.txt" | cut -d' ' -f1)
    for s in resources=$resources_pid model=$model_pid agent=$agent_pid; do
      per1000 "floor ${s%%=*}" "${before[${s#*=}]}" "$(cpu "${s#*=}")" "$n"
    done
  done
  kill "$resources_pid" "$model_pid" "$agent_pid" 2>/dev/null || true
  wait "$resources_pid" "$model_pid" "$agent_pid" 2>/dev/null || true
done
