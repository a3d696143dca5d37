#!/usr/bin/env bash
# Start → all ready, and shutdown, of `gym env start` with 3 Go servers,
# over RUNS runs (default 20); prints each run and the medians, in ms.
# The gym under test is the cmd/gym test binary, which registers a minimal
# Go server (resources_servers/test_minimal) until the real ones exist.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go test -c -o "$work/gym" ./cmd/gym
cat > "$work/servers.yaml" <<'YAML'
a: {resources_servers: {test_minimal: {entrypoint: app.py, domain: other}}}
b: {resources_servers: {test_minimal: {entrypoint: app.py, domain: other}}}
c: {resources_servers: {test_minimal: {entrypoint: app.py, domain: other}}}
YAML
ms() { echo $(( ($2 - $1) / 1000 )) | awk '{printf "%.1f", $1/1000}'; }
: > "$work/results"
for i in $(seq "$runs"); do
  fifo="$work/fifo$i"
  mkfifo "$fifo"
  t0=$(date +%s%N)
  (cd "$work" && exec ./gym env start --config servers.yaml ++head_server.port=$((21000 + i)) > "$fifo" 2>&1) &
  pid=$!
  exec 3<"$fifo"
  while IFS= read -r line <&3; do
    [[ $line == "All "*" servers ready"* ]] && break
  done
  t1=$(date +%s%N)
  cat <&3 > /dev/null &
  drain=$!
  kill -INT "$pid"
  wait "$pid"
  t2=$(date +%s%N)
  wait "$drain" || true
  exec 3<&-
  echo "$(ms "$t0" "$t1") $(ms "$t1" "$t2")" | tee -a "$work/results" | awk '{print "run: ready " $1 " ms, shutdown " $2 " ms"}'
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "median start → all ready: $(cut -d' ' -f1 "$work/results" | median) ms"
echo "median shutdown:          $(cut -d' ' -f2 "$work/results" | median) ms"
