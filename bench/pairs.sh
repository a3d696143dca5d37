#!/usr/bin/env bash
# Before and after in one sitting: runs BENCH (eval_no_serve.sh or
# rollouts.sh) PAIRS times (default 4) on gym built at BASE and on this
# checkout, alternating (the base first, then the checkout, then the base
# again, ...), and prints each run's figures, then the medians and in how
# many pairs the checkout's was the lower (for rollouts/s, the worse; for
# CPU, the better). This VM's speed drifts by a third
# within minutes, so a change of a few percent shows only in pairs.
#
#   BASE=<commit> bash bench/pairs.sh eval_no_serve.sh
#   BASE=HEAD~3 PAIRS=6 CONCURRENCY=256 bash bench/pairs.sh rollouts.sh
#
# eval_no_serve.sh's figures are the collector's CPU per rollout and that
# as a multiple of the bare driver's in the same run (ROWS defaults to 40000
# here; EXTRA and DRIVER_DURATION pass on); rollouts.sh's, at each level of
# CONCURRENCY (default 256), the three gym servers' CPU per rollout and the
# rollouts/s. KEEP=1 keeps each run's output.
set -euo pipefail
cd "$(dirname "$0")/.."
bench=${1:?usage: BASE=<commit> bash bench/pairs.sh eval_no_serve.sh|rollouts.sh}
[[ -n ${BASE:-} ]] || { echo "BASE=<commit> names the build to compare with" >&2; exit 2; }
case $bench in
eval_no_serve.sh | rollouts.sh) ;;
*) echo "pairs.sh runs eval_no_serve.sh or rollouts.sh, not $bench" >&2; exit 2 ;;
esac
work=$(mktemp -d)
cleanup() {
  if [[ ${KEEP:-0} == 1 ]]; then echo "runs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# shellcheck source=bench/lib.sh
source bench/lib.sh
build_base_and_this "$work"
export ROWS=${ROWS:-40000} CONCURRENCY=${CONCURRENCY:-256}

# figures prints one line per figure of a run's output: its name, then its
# value.
figures() {
  if [[ $bench == eval_no_serve.sh ]]; then
    sed -n 's|.*collector CPU: .* (\([0-9.]*\) ms/rollout).*|collector-ms/rollout \1|p' "$1"
    sed -n 's|.*the collector is \([0-9.]*\) times it.*|collector/driver \1|p' "$1"
    return
  fi
  awk '
    /^floor/ { floor = 1 }
    floor { next }
    /^clients/ { level = $2; sub(":", "", level); for (i = 1; i <= NF; i++) if ($i == "rollouts/s") print "rollouts/s@" level, $(i - 1); cpu = 0; servers = 0 }
    /CPU s per 1000 rollouts/ && $1 != "rundriver" {
      for (i = 2; i < NF; i++) if ($(i + 1) == "CPU") { cpu += $i; break }
      if (++servers == 3) print "server-ms/rollout@" level, cpu
    }
  ' "$1"
}

for pair in $(seq "${PAIRS:-4}"); do
  for build in base this; do
    out="$work/$build.$pair.txt"
    GYM="$work/gym-$build" bash "bench/$bench" > "$out" 2>&1 || { tail -20 "$out"; exit 1; }
    figures "$out" | while read -r name value; do echo "$pair $build $name $value"; done | tee -a "$work/figures"
  done
done

echo "medians over ${PAIRS:-4} pairs (base $(git rev-parse --short "$BASE"), this checkout $(git rev-parse --short HEAD)$(git diff --quiet || echo ' with changes')):"
awk '
  { v[$3, $2, $1] = $4; names[$3] = 1; pairs[$1] = 1 }
  function median(name, build,   a, k, n, p) {
    n = 0
    for (p in pairs) a[++n] = v[name, build, p]
    for (i = 2; i <= n; i++) for (k = i; k > 1 && a[k - 1] > a[k]; k--) { t = a[k]; a[k] = a[k - 1]; a[k - 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    for (name in names) {
      lower = 0; n = 0
      for (p in pairs) { n++; if (v[name, "this", p] < v[name, "base", p]) lower++ }
      printf "  %-24s base %10.4g   this %10.4g   this lower in %d of %d pairs\n", name, median(name, "base"), median(name, "this"), lower, n
    }
  }
' "$work/figures"
