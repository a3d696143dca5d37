#!/usr/bin/env bash
# Wall time of a whole `gym env resolve --benchmark` process on a generated
# NeMo Gym-shaped tree (300 component configs, 110 benchmarks), measured with
# hyperfine when it is installed, else with a plain loop and date.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/gym" ./cmd/gym
go test -run TestWriteBenchTree -count=1 ./internal/config/ -args -benchtree="$work/tree" >/dev/null
cmd=("$work/gym" env resolve --search-dir "$work/tree" --benchmark bench_042 +policy_base_url=http://h/v1 +policy_api_key=k +policy_model_name=m)
"${cmd[@]}" >/dev/null
if command -v hyperfine >/dev/null; then
  hyperfine --warmup 5 --runs 50 -N "${cmd[*]}"
else
  runs=50
  start=$(date +%s%N)
  for _ in $(seq $runs); do "${cmd[@]}" >/dev/null; done
  end=$(date +%s%N)
  echo "mean wall time: $(( (end - start) / runs / 1000 )) µs over $runs runs"
fi
