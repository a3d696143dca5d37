"""NeMo Gym's collector-side join of model-call captures, run on the rows
and capture directory gym's test wrote: argv is CAPTURE_DIR ROWS OUT, each
ROWS line {"row": <the /run row>, "result": <the agent's stamped result>};
each OUT line is the result as NeMo Gym's collector writes it."""
import sys
from pathlib import Path

import orjson

from nemo_gym.base_responses_api_model import merge_model_call_capture_into_record
from nemo_gym.rollout_collection import _attach_ng_perf, _attach_trajectory_record

capture_dir, rows, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
with out.open("wb") as f:
    for line in rows.read_bytes().splitlines():
        case = orjson.loads(line)
        row, result = case["row"], case["result"]
        merge_model_call_capture_into_record(result, [capture_dir], include_payloads=True)
        if "ng_model_call_capture" in result or "ng_agent_observations" in result or "ng_trajectory" in result:
            _attach_trajectory_record(row, result)
        _attach_ng_perf(result, observability_enabled=True, rollout_latency_ms=case.get("rollout_latency_ms"))
        f.write(orjson.dumps(result) + b"\n")
