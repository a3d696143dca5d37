#!/usr/bin/env bash
# Time from `env start` to all servers ready with two Python servers and
# warm venvs: gym against NeMo Gym's own `ng env start` (nemo-gym 0.7.0), on
# one config, on this machine, in one run of this script.
#
# The config is two instances (weather_a, weather_b) of the
# example_single_tool_call resources server that nemo-gym ships: two Python
# servers, no references, no model. Both tools run in the Debian root made
# by test/nemogym/root.sh (nemo-gym needs Python >= 3.13.14), each in its
# own directory inside the root (so its venv, .venv of the copied server
# directory, hardlinks from the root's warm uv cache), with
# ++uv_cache_dir=/var/cache/uv, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 and a free
# ++head_server.port. Each tool first runs once, untimed, to build its venv;
# then RUNS rounds (default 3), each timing, in turn, gym, NeMo Gym, gym with
# ++skip_venv_if_present=true and NeMo Gym with ++skip_venv_if_present=true
# (which makes both skip venv setup). A time is from launching the command
# to the "All 2 / 2 servers ready" line on its output; then (once the output
# has been quiet for 1 s) SIGINT, and the run must end with nothing left (no
# process of the run, no Ray raylet or gcs_server: leftovers are killed and
# make the script fail).
#
# example_single_tool_call declares ray_enabled=False, but both tools still
# start a Ray cluster (NeMo Gym: ray.init() in its parent, before any server;
# gym: one `ray start --head`), and that is inside the times. Each run's line
# also gives, from the timestamped output, when the tool's first line came
# (for NeMo Gym, its CLI's own import), when Ray was up, when venv setup
# ended (uv's last line), when both servers had imported (uvicorn's "Started
# server process") and listened, and the shutdown time after SIGINT, with
# the 1-minute load average at SIGINT (the runs' own Ray and servers count
# in it). The numbers only mean much on an otherwise idle machine.
#
# Prints "skipped: <reason>" and exits 0 when the root cannot be built.
# START_TIMEOUT (default 600 s) bounds one start; KEEP=1 keeps the work
# directory (every run's timestamped output is there, *.log).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
start_timeout=${START_TIMEOUT:-600}
ready_line="All 2 / 2 servers ready"

skip() { echo "skipped: $*"; exit 0; }
[[ $(id -u) == 0 ]] || skip "needs root to chroot into the nemo-gym root"
echo "nemo-gym root: test/nemogym/root.sh (minutes, the first time)"
errf=$(mktemp)
rc=0
root=$(./test/nemogym/root.sh 2>"$errf") || rc=$?
cat "$errf" >&2
reason=$(tail -1 "$errf")
rm -f "$errf"
[[ $rc != 3 ]] || skip "${reason#nemo-gym root: }"
[[ $rc == 0 ]] || { echo "test/nemogym/root.sh failed (exit $rc)" >&2; exit 1; }

work=$(mktemp -d "$root/tmp/gym-bench-XXXXXX")
in=${work#"$root"}                 # the work directory's path inside the root
tag=gym-bench-$$-$RANDOM           # in the environment of every process of a run
pid="" rpid=""

# "pid cmdline" of each process of this script's runs still alive: inside
# the root and either carrying the tag in its environment (Ray's processes
# inherit it) or naming the work directory.
ours() {
  local p r cmd
  for p in /proc/[0-9]*; do
    r=$(readlink "$p/root" 2>/dev/null) || continue
    [[ $r == "$root" ]] || continue
    cmd=$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null) || continue
    [[ -n $cmd ]] || continue
    if grep -qzxF "GYM_BENCH_TAG=$tag" "$p/environ" 2>/dev/null || [[ $cmd == *"$in"* ]]; then
      echo "${p#/proc/} ${cmd:0:160}"
    fi
  done
}
# Ray processes in the root that are not ours (another user of the root);
# they are left alone.
others_ray() {
  local p r cmd
  for p in /proc/[0-9]*; do
    r=$(readlink "$p/root" 2>/dev/null) || continue
    [[ $r == "$root" ]] || continue
    cmd=$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null) || continue
    [[ $cmd == *raylet* || $cmd == *gcs_server* ]] || continue
    grep -qzxF "GYM_BENCH_TAG=$tag" "$p/environ" 2>/dev/null || echo "${p#/proc/} ${cmd:0:120}"
  done
}
kill_ours() {
  local line
  while read -r line; do kill -KILL "${line%% *}" 2>/dev/null || true; done < <(ours)
}
cleanup() {
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    kill -INT "$pid"
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  kill_ours
  [[ -n $rpid ]] && kill "$rpid" 2>/dev/null || true
  if [[ ${KEEP:-0} == 1 ]]; then echo "work directory: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((21000 + RANDOM % 4000))
}

mkdir -p "$work/bin"
CGO_ENABLED=0 go build -o "$work/bin/gym" ./cmd/gym
shipped=$root/opt/nemo-gym/lib/python3.13/site-packages/resources_servers/example_single_tool_call
for tool in gym ng; do
  mkdir -p "$work/$tool/resources_servers" "$work/$tool/home"
  cp -r "$shipped" "$work/$tool/resources_servers/"
  rm -rf "$work/$tool/resources_servers/example_single_tool_call/"{.venv,__pycache__}
  cat > "$work/$tool/servers.yaml" <<'YAML'
weather_a:
  resources_servers:
    example_single_tool_call: {entrypoint: app.py, domain: agent, verified: false}
weather_b:
  resources_servers:
    example_single_tool_call: {entrypoint: app.py, domain: agent, verified: false}
YAML
done

# Writes each line read from fifo $1 to log $2, stamped with the time it was read.
stamp() {
  local line
  while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done < "$1" > "$2"
}

failures=0
: > "$work/results"
# run TOOL MODE LABEL: one `env start` → ready → SIGINT → exit. MODE is
# full or skip (++skip_venv_if_present=true). A timed run (LABEL a number)
# appends "tool mode ready ray venv imported listening shutdown" to results.
run() {
  local tool=$1 mode=$2 label=$3 cmd status=ok code
  local log="$work/$tool-$mode-$label.log" fifo="$work/fifo"
  case $tool in
    gym) cmd="$in/bin/gym env start" ;;
    ng) cmd="ng env start" ;;
  esac
  cmd+=" --config servers.yaml ++uv_cache_dir=/var/cache/uv ++head_server.port=$(free_port)"
  [[ $mode == skip ]] && cmd+=" ++skip_venv_if_present=true"
  rm -f "$fifo"; mkfifo "$fifo"
  stamp "$fifo" "$log" &
  rpid=$!
  local t0=$EPOCHREALTIME
  # env --default-signal=INT: a background job of a script starts with
  # SIGINT ignored, and Python would then never see the SIGINT below.
  ./test/nemogym/inroot.sh "$root" --env HOME="$in/$tool/home" --env RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 \
    --env PYTHONUNBUFFERED=1 --env NO_COLOR=1 --env GYM_BENCH_TAG="$tag" \
    -- /usr/bin/env --default-signal=INT /bin/bash -c "cd $in/$tool && exec $cmd" > "$fifo" 2>&1 &
  pid=$!
  local deadline=$((SECONDS + start_timeout))
  until grep -q "$ready_line" "$log" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then status="exited before ready"; break; fi
    if ((SECONDS > deadline)); then status="not ready within ${start_timeout}s"; break; fi
    sleep 0.1
  done
  # The ready line is not the end of a start: NeMo Gym goes on printing
  # its server table (a SIGINT then lands inside its start and it exits 1).
  # So SIGINT goes once the output has been quiet for 1 s (at most 10 s).
  if [[ $status == ok ]]; then
    local size quiet=0
    for _ in $(seq 100); do
      size=$(stat -c %s "$log"); sleep 0.1
      if [[ $(stat -c %s "$log") == "$size" ]]; then quiet=$((quiet + 1)); else quiet=0; fi
      ((quiet < 10)) || break
    done
  fi
  local load tint=$EPOCHREALTIME
  load=$(cut -d' ' -f1 /proc/loadavg)
  kill -INT "$pid" 2>/dev/null || true
  for _ in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid"; [[ $status == ok ]] && status="still running 60 s after SIGINT"
  fi
  code=0; wait "$pid" || code=$?
  local texit=$EPOCHREALTIME
  pid=""
  # Servers and Ray may outlive the tool for a moment; 20 s, then they count.
  local left=""
  for _ in $(seq 100); do left=$(ours); [[ -z $left ]] && break; sleep 0.2; done
  if [[ -n $left ]]; then
    kill_ours
    [[ $status == ok ]] && status="left processes behind"
    echo "  left behind by $tool ($mode, $label), killed:"; sed 's/^/    /' <<< "$left"
  fi
  for _ in $(seq 50); do kill -0 "$rpid" 2>/dev/null || break; sleep 0.1; done
  kill "$rpid" 2>/dev/null || true
  wait "$rpid" 2>/dev/null || true
  rpid=""
  if [[ $status == ok ]]; then
    case $tool in
      gym) grep -q 'Ray runtime started' "$log" || status="no Ray head started" ;;
      ng) grep -q 'Started a local Ray instance' "$log" || status="did not start its own Ray cluster" ;;
    esac
  fi
  # Milestones, in seconds from launch: Ray up, venv setup's last line, both
  # servers imported (uvicorn's "Started server process"), both listening,
  # ready; then the shutdown time.
  local line
  line=$(awk -v t0="$t0" -v tint="$tint" -v texit="$texit" -v ready_line="$ready_line" '
    function at() { return sprintf("%.1f", $1 - t0) }
    NR == 1 { first = at() }
    /Head server is not up yet/ { polls++ }
    /Started Ray cluster at|Ray runtime started/ && ray == "" { ray = at() }
    /^[0-9.]+ \(weather_[ab]\) (Using CPython|Creating virtual|Activate with|Resolved|Prepared|Installed|Uninstalled|Audited|Checked) / { venv = at() }
    /^[0-9.]+ \(weather_[ab]\) INFO: +Started server process/ { imported = at() }
    /^[0-9.]+ \(weather_[ab]\) INFO: +Uvicorn running on/ { listening = at() }
    index($0, ready_line) && ready == "" { ready = at() }
    END {
      printf "%s %s %s %s %s %s %.1f %d", (ready == "" ? "-" : ready), (first == "" ? "-" : first), (ray == "" ? "-" : ray),
        (venv == "" ? "-" : venv), (imported == "" ? "-" : imported), (listening == "" ? "-" : listening), texit - tint, polls
    }' "$log")
  read -r ready first ray venv imported listening shutdown polls <<< "$line"
  printf '  %-3s %-4s %-7s ready %6s s  (first output %s, Ray up %s, venv setup done %s, imported %s, listening %s%s)  shutdown %s s, exit %s, load %s%s\n' \
    "$tool" "$mode" "$label" "$ready" "$first" "$ray" "$venv" "$imported" "$listening" \
    "$( ((polls == 0)) || echo "; slept 3 s x$polls polling the head server")" "$shutdown" "$code" "$load" \
    "$([[ $status == ok ]] || echo "  FAILED: $status")"
  if [[ $status != ok ]]; then
    failures=$((failures + 1))
    echo "  last lines of its output:"; tail -25 "$log" | cut -d' ' -f2- | cut -c1-200 | sed 's/^/    /'
    return 0
  fi
  [[ $label == warm-up ]] || echo "$tool $mode $ready $first $ray $venv $imported $listening $shutdown" >> "$work/results"
}

echo "$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); root $root; $runs timed rounds"
echo "untimed runs, building each tool's venv:"
run gym full warm-up
run ng full warm-up
echo "timed runs (seconds from launch):"
for i in $(seq "$runs"); do
  run gym full "$i"
  run ng full "$i"
  run gym skip "$i"
  run ng skip "$i"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
stray=$(others_ray)
[[ -z $stray ]] || { echo "Ray processes in the root that are not this script's (another user's; left alone):"; sed 's/^/  /' <<< "$stray"; }

median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "-"; else printf "%.1f", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
col() { awk -v t="$1" -v m="$2" -v c="$3" '$1 == t && $2 == m && $c != "-" {print $c}' "$work/results"; }
row() { printf '%-50s %-18s %6s   %-6s %-6s %-6s %-8s %-6s %-8s\n' "$@"; }
echo
echo "start → all 2 servers ready, two Python servers (example_single_tool_call twice), venvs warm; seconds."
echo "Both tools also start a Ray cluster (example_single_tool_call has ray_enabled=False): inside the times."
row "" "runs" "median" "1st out" "Ray up" "venv" "imported" "listen" "shutdown"
for mode in full skip; do
  for tool in gym ng; do
    case $tool in gym) name="gym env start" ;; ng) name="NeMo Gym ng env start" ;; esac
    [[ $mode == skip ]] && name+=" ++skip_venv_if_present=true"
    row "$name" "$(col $tool $mode 3 | paste -sd' ')" "$(col $tool $mode 3 | median)" "$(col $tool $mode 4 | median)" \
      "$(col $tool $mode 5 | median)" "$(col $tool $mode 6 | median)" "$(col $tool $mode 7 | median)" \
      "$(col $tool $mode 8 | median)" "$(col $tool $mode 9 | median)"
  done
done
echo "(after the median: medians of when, in seconds from launch, the first output line came, Ray was up,"
echo " venv setup ended, both servers had imported and both listened; shutdown is SIGINT to exit)"
if ((failures > 0)); then echo "$failures run(s) failed" >&2; exit 1; fi
