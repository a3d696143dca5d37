#!/bin/bash
#SBATCH --job-name=gym-mcqa
#SBATCH --account=acct
#SBATCH --chdir=/runs/gym-job-20260101T000000Z-abcdef/mcqa
#SBATCH --output=/runs/gym-job-20260101T000000Z-abcdef/mcqa/logs/slurm-%A_%a.out
#SBATCH --array=0-3
#SBATCH --requeue
#SBATCH --open-mode=append

set -o pipefail
cd /runs/gym-job-20260101T000000Z-abcdef/mcqa
fail() {
  if [ "${SLURM_RESTART_COUNT:-0}" -lt 2 ]; then
    echo "shard ${SLURM_ARRAY_TASK_ID} failed (exit $1); requeued to resume" >&2
    scontrol requeue "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
  fi
  exit "$1"
}

GYM_CMD=(
  /runs/gym-job-20260101T000000Z-abcdef/bin/gym eval run
  ++output_jsonl_fpath="/runs/gym-job-20260101T000000Z-abcdef/mcqa/artifacts/shard_${SLURM_ARRAY_TASK_ID}.jsonl"
  ++use_absolute_ip=true
  ++head_server.port=0
  --model-type replay_model
  '+config_paths=[benchmarks/mcqa_example/config.yaml]'
  ++split=benchmark
  --shard "${SLURM_ARRAY_TASK_ID}/4"
  --disable-aggregation
  --resume
)
srun --overlap --nodes=1 --ntasks=1 --output=/runs/gym-job-20260101T000000Z-abcdef/mcqa/logs/driver-${SLURM_JOB_ID}.log "${GYM_CMD[@]}"
DRIVER_RC=$?
[ "$DRIVER_RC" = 0 ] || fail "$DRIVER_RC"
# ---- aggregate.sh ----
#!/bin/bash
#SBATCH --job-name=gym-mcqa-aggregate
#SBATCH --account=acct
#SBATCH --chdir=/runs/gym-job-20260101T000000Z-abcdef/mcqa
#SBATCH --output=/runs/gym-job-20260101T000000Z-abcdef/mcqa/logs/slurm-%j.out

set -o pipefail
cd /runs/gym-job-20260101T000000Z-abcdef/mcqa
GYM_CMD=(
  /runs/gym-job-20260101T000000Z-abcdef/bin/gym eval aggregate
  -i '/runs/gym-job-20260101T000000Z-abcdef/mcqa/artifacts/shard_*.jsonl'
  -o /runs/gym-job-20260101T000000Z-abcdef/mcqa/artifacts/rollouts.jsonl
  --model-type replay_model
  '+config_paths=[benchmarks/mcqa_example/config.yaml]'
  ++split=benchmark
)
srun --overlap --nodes=1 --ntasks=1 --output=/runs/gym-job-20260101T000000Z-abcdef/mcqa/logs/aggregate-${SLURM_JOB_ID}.log "${GYM_CMD[@]}"
