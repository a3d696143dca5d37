#!/usr/bin/env bash
# gym eval submit on the test Slurm cluster (test/slurm/cluster.sh), beside
# the same evaluation run locally, on this machine, RUNS times (default 3),
# with each of mcqa_example's 10 rows repeated REPEATS times (default 2000:
# 20,000 rollouts):
#   local    `gym eval run` of it on replay_model, start to end
#   submit   `gym eval submit --shards 4`: load, render, stage, sbatch
#   ssh      the same submission over SSH to a login node on loopback
#            (test/slurm/sshd.sh): connect, check, stream the run, sbatch
#   sharded  submit to the merged artifacts/rollouts.jsonl (Slurm's
#            scheduling included), 4 shards and the merge
# Prints each run and the medians, in seconds. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
repeats=${REPEATS:-2000}
repo=$PWD
work=$(mktemp -d)
cluster=$(mktemp -d)
trap '"$repo/test/slurm/sshd.sh" stop "$cluster/sshd"; "$repo/test/slurm/cluster.sh" stop "$cluster"; rm -rf "$work" "$cluster"' EXIT
export $(test/slurm/cluster.sh start "$cluster")
mkdir -m 700 "$cluster/sshd"
ssh_bin=$(test/slurm/sshd.sh start "$cluster/sshd" "$SLURM_CONF")
CGO_ENABLED=0 go build -o "$work/gym" ./cmd/gym
export GYM_INSTALL_ROOT=$repo NO_COLOR=1 XDG_CACHE_HOME=$work/cache
cat > "$work/submit.yaml" <<YAML
services: {}
compute:
  cluster: {type: slurm, account: bench, walltime: "00:10:00"}
driver:
  policy_model_type: replay_model
  benchmarks:
    mcqa: {run: {config_paths: [benchmarks/mcqa_example/config.yaml], split: benchmark, num_repeats: $repeats}}
job: {output_path: results}
YAML
sed -e 's/account: bench,/account: bench, hostname: gym-login,/' -e "s|output_path: results|output_path: $work/remote|" "$work/submit.yaml" > "$work/ssh.yaml"
now() { date +%s.%N; }
cd "$work"
printf '%-4s %8s %8s %8s %8s\n' run local submit ssh sharded
: > times
for i in $(seq "$runs"); do
  t0=$(now)
  ./gym eval run --benchmark mcqa_example --model-type replay_model --split benchmark -o "local$i/r.jsonl" "++num_repeats=$repeats" > /dev/null 2>&1
  t1=$(now)
  out=$(./gym eval submit -c submit.yaml --shards 4 --json)
  t2=$(now)
  dir=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["benchmarks"][0]["job_dir"])')
  until [[ -f $dir/artifacts/rollouts_aggregate_metrics.json ]]; do sleep 0.1; done
  t3=$(now)
  ssh_out=$(PATH=$ssh_bin:$PATH ./gym eval submit -c ssh.yaml --shards 4 --json)
  t4=$(now)
  scancel $(echo "$ssh_out" | python3 -c 'import json,sys; b=json.load(sys.stdin)["benchmarks"][0]; print(b["job_id"], b["aggregate_job_id"])')
  l=$(echo "$t1 - $t0" | bc); s=$(echo "$t2 - $t1" | bc); a=$(echo "$t3 - $t1" | bc); r=$(echo "$t4 - $t3" | bc)
  printf '%-4s %8.2f %8.2f %8.2f %8.2f\n' "$i" "$l" "$s" "$r" "$a"
  echo "$l $s $r $a" >> times
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf '%-4s %8.2f %8.2f %8.2f %8.2f\n' median "$(cut -d' ' -f1 times | median)" "$(cut -d' ' -f2 times | median)" "$(cut -d' ' -f3 times | median)" "$(cut -d' ' -f4 times | median)"
