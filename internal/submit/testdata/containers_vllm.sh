#!/bin/bash
#SBATCH --job-name=gym-aime
#SBATCH --account=acct
#SBATCH --time=2-00:00:00
#SBATCH --chdir=/runs/gym-job-20260101T000000Z-abcdef/aime
#SBATCH --output=/runs/gym-job-20260101T000000Z-abcdef/aime/logs/slurm-%j.out
#SBATCH --partition=batch
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8

set -o pipefail
cd /runs/gym-job-20260101T000000Z-abcdef/aime
fail() { exit "$1"; }

env HF_TOKEN="${HF_TOKEN}" CUDA_CACHE=/tmp/cuda WORK="${SLURM_SUBMIT_DIR}" srun --overlap --nodes=1 --ntasks=1 --no-container-mount-home --container-image=nvcr.io/nvidia/vllm:25.01 --output=logs/policy-${SLURM_JOB_ID}.log vllm serve Qwen/Qwen3-8B --port 8000 --tensor-parallel-size 4 &
POLICY_PID=$!

for attempt in $(seq 12); do
  if ! kill -0 "$POLICY_PID" 2>/dev/null; then echo "policy died during startup." >&2; fail 1; fi
  if curl -sf --max-time 5 http://localhost:8000/health >/dev/null; then break; fi
  if [ "$attempt" = 12 ]; then echo "ERROR: policy did not become healthy after 12 attempts." >&2; fail 1; fi
  sleep 5
done

GYM_CMD=(
  /runs/gym-job-20260101T000000Z-abcdef/bin/gym eval run
  ++output_jsonl_fpath="/runs/gym-job-20260101T000000Z-abcdef/aime/artifacts/rollouts.jsonl"
  ++use_absolute_ip=true
  ++head_server.port=0
  --model-type openai_model
  '+config_paths=[benchmarks/aime25/config.yaml]'
  ++split=benchmark
  ++policy_base_url=http://localhost:8000/v1
  ++policy_model_name=Qwen/Qwen3-8B
  ++policy_api_key=dummy
)
srun --overlap --nodes=1 --ntasks=1 --output=/runs/gym-job-20260101T000000Z-abcdef/aime/logs/driver-${SLURM_JOB_ID}.log "${GYM_CMD[@]}"
DRIVER_RC=$?
kill $POLICY_PID 2>/dev/null
for _ in $(seq 30); do kill -0 $POLICY_PID 2>/dev/null || break; sleep 1; done
kill -9 $POLICY_PID 2>/dev/null
wait
[ "$DRIVER_RC" = 0 ] || fail "$DRIVER_RC"
