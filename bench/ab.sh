#!/usr/bin/env bash
# Before and after for a change of a few percent in the servers' CPU, on a VM
# whose speed drifts by a third within minutes: gym built at BASE and this
# checkout's gym each start example_single_tool_call, its simple_agent and
# the replay model (as bench/rollouts.sh does), both at once, and
# bench/rundriver drives them in turn, a BURST (default 2s) each, for ROUNDS
# (default 40) rounds, the order swapped every round. Each round gives the
# ratio this/base of the three servers' CPU per rollout and of rollouts/s
# from bursts seconds apart, so drift cancels; the whole is then run again
# with the two started in the other order, since the second one started can
# run a few percent cheaper for the whole sitting. Prints each order's
# median ratio and in how many rounds this checkout was the cheaper, then
# the geometric mean of the two orders' medians.
#
#   BASE=<commit> bash bench/ab.sh
#   BASE=HEAD~1 CONCURRENCY=64 ROUNDS=60 bash bench/ab.sh
#
# CONCURRENCY (default 256) is the clients per burst. KEEP=1 keeps the work
# directory (each env's start.log and the rounds' figures).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
[[ -n ${BASE:-} ]] || { echo "BASE=<commit> names the build to compare with" >&2; exit 2; }
((${ROUNDS:-40} >= 2)) || { echo "ROUNDS must be at least 2" >&2; exit 2; }
work=$(mktemp -d)
envs=()
cleanup() {
  for p in "${envs[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  for p in "${envs[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ ${KEEP:-0} == 1 ]]; then echo "work directory: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
build_base_and_this "$work"
go build -o "$work/rundriver" ./bench/rundriver
rows="$repo/resources_servers/example_single_tool_call/data/example.jsonl"
c=${CONCURRENCY:-256}

# start <dir> <binary>: a gym env in dir, its servers ready. Both builds
# run this checkout's configs and recordings, so only the code differs.
start() {
  mkdir -p "$1"
  (cd "$1" && exec "$2" env start \
    --config "$repo/resources_servers/example_single_tool_call/configs/example_single_tool_call.yaml" \
    --config "$repo/responses_api_models/replay_model/configs/replay_model.yaml" \
    ++head_server.port="$((21000 + RANDOM % 4000))" > start.log 2>&1) &
  envs+=($!)
  wait_ready "$1/start.log" "${envs[-1]}" || exit 1
}

# CPU seconds the given processes have used so far, from /proc (Linux).
cpu() { for p in "$@"; do cat "/proc/$p/stat"; done | awk -v hz="$(getconf CLK_TCK)" '{s += ($14 + $15) / hz} END {print s}'; }

# sitting <first> <second>: both builds up, the first started first; prints
# one line per burst: round, build, CPU ms per rollout, rollouts/s.
sitting() {
  local dir=$work/$1-first
  start "$dir/$1" "$work/gym-$1"
  start "$dir/$2" "$work/gym-$2"
  declare -A url servers
  for b in "$1" "$2"; do
    url[$b]=$(grep -o 'example_single_tool_call_simple_agent .*http://127.0.0.1:[0-9]*' "$dir/$b/start.log" | grep -o 'http://.*')
    servers[$b]=$(awk '/ \(go\) / {print $NF}' "$dir/$b/start.log" | xargs)
    "$work/rundriver" -url "${url[$b]}" -rows "$rows" -concurrency "$c" -duration 2s > /dev/null
  done
  for r in $(seq "${ROUNDS:-40}"); do
    local order=("$1" "$2")
    ((r % 2)) || order=("$2" "$1")
    # The CPU counted covers the driver's warm-up and new connections too,
    # the same for both builds, so the ratio holds though each figure is a
    # little high.
    for b in "${order[@]}"; do
      # shellcheck disable=SC2086 # servers[$b] is a list of pids
      c0=$(cpu ${servers[$b]})
      "$work/rundriver" -url "${url[$b]}" -rows "$rows" -concurrency "$c" -duration "${BURST:-2s}" -warmup 200ms > "$dir/burst.txt"
      # shellcheck disable=SC2086
      c1=$(cpu ${servers[$b]})
      awk -v r="$r" -v b="$b" -v c0="$c0" -v c1="$c1" '/ rollouts in / {
        for (i = 1; i <= NF; i++) if ($i == "rollouts/s") rate = $(i - 1)
        printf "%d %s %.4f %s\n", r, b, (c1 - c0) * 1000 / $3, rate }' "$dir/burst.txt"
    done
  done > "$dir/rounds.txt"
  for p in "${envs[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  for p in "${envs[@]}"; do wait "$p" 2>/dev/null || true; done
  envs=()
}

sitting base this
sitting this base
echo "this checkout ($(git rev-parse --short HEAD)$(git diff --quiet || echo ' with changes')) against $(git rev-parse --short "$BASE"), $c clients, ${ROUNDS:-40} rounds of ${BURST:-2s} bursts per order:"
python3 - "$work/base-first/rounds.txt" "$work/this-first/rounds.txt" <<'EOF'
import math, statistics, sys

def ratios(path):
    runs = {}
    for line in open(path):
        r, build, cpu, rate = line.split()
        runs.setdefault(r, {})[build] = (float(cpu), float(rate))
    pairs = [v for v in runs.values() if len(v) == 2]
    return ([v["this"][0] / v["base"][0] for v in pairs],
            [v["this"][1] / v["base"][1] for v in pairs])

medians = []
for path, label in zip(sys.argv[1:], ("base started first", "this started first")):
    cpu, rate = ratios(path)
    q = statistics.quantiles(cpu, n=4)
    medians.append((statistics.median(cpu), statistics.median(rate)))
    print(f"  {label}: servers' CPU per rollout this/base {medians[-1][0]:.3f} "
          f"(quartiles {q[0]:.3f}-{q[2]:.3f}), this cheaper in {sum(x < 1 for x in cpu)} of {len(cpu)} rounds; "
          f"rollouts/s this/base {medians[-1][1]:.3f}")
print(f"  both orders: CPU per rollout this/base {math.sqrt(medians[0][0] * medians[1][0]):.3f}, "
      f"rollouts/s {math.sqrt(medians[0][1] * medians[1][1]):.3f}")
EOF
