# Sourced by bench/pairs.sh and bench/ab.sh. build_base_and_this <dir>
# builds gym at $BASE (from a worktree under <dir>, removed once built) into
# <dir>/gym-base, and this checkout's gym into <dir>/gym-this.
build_base_and_this() {
  git worktree add --quiet --detach "$1/src" "$BASE"
  if ! (cd "$1/src" && go build -o "$1/gym-base" ./cmd/gym); then
    git worktree remove --force "$1/src"
    return 1
  fi
  git worktree remove --force "$1/src"
  go build -o "$1/gym-this" ./cmd/gym
}
