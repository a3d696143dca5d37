# Functions the bench scripts source.

# build_base_and_this <dir> builds gym at $BASE (from a worktree under
# <dir>, removed once built) into <dir>/gym-base, and this checkout's gym
# into <dir>/gym-this.
build_base_and_this() {
  git worktree add --quiet --detach "$1/src" "$BASE"
  if ! (cd "$1/src" && go build -o "$1/gym-base" ./cmd/gym); then
    git worktree remove --force "$1/src"
    return 1
  fi
  git worktree remove --force "$1/src"
  go build -o "$1/gym-this" ./cmd/gym
}

# wait_ready <start.log> <pid> returns once the `gym env start` running as
# pid and writing start.log has all its servers ready; if it exits first,
# or 30 s pass, it prints the log and fails.
wait_ready() {
  for _ in $(seq 600); do
    grep -q 'All [0-9]* / [0-9]* servers ready' "$1" && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.05
  done
  cat "$1"
  echo "gym env start ($1): the servers were not ready within 30 s, or it exited" >&2
  return 1
}
