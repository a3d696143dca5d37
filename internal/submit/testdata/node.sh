#!/bin/bash
#SBATCH --job-name=gym-mcqa
#SBATCH --account=acct
#SBATCH --chdir=/runs/gym-job-20260101T000000Z-abcdef/mcqa
#SBATCH --output=/runs/gym-job-20260101T000000Z-abcdef/mcqa/logs/slurm-%j.out

set -o pipefail
cd /runs/gym-job-20260101T000000Z-abcdef/mcqa
fail() { exit "$1"; }

GYM_CMD=(
  /runs/gym-job-20260101T000000Z-abcdef/bin/gym eval run
  ++output_jsonl_fpath="/runs/gym-job-20260101T000000Z-abcdef/mcqa/artifacts/rollouts.jsonl"
  ++use_absolute_ip=true
  ++head_server.port=0
  --model-type replay_model
  '+config_paths=[benchmarks/mcqa_example/config.yaml]'
  ++split=benchmark
)
srun --overlap --nodes=1 --ntasks=1 --output=/runs/gym-job-20260101T000000Z-abcdef/mcqa/logs/driver-${SLURM_JOB_ID}.log "${GYM_CMD[@]}"
DRIVER_RC=$?
[ "$DRIVER_RC" = 0 ] || fail "$DRIVER_RC"
