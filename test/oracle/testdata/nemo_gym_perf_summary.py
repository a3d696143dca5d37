"""NeMo Gym's compute_perf_summary on the cases gym's test generated: argv
is CASES OUT, each CASES line {"perfs": [<ng_perf>...], "total": N}; each
OUT line is orjson.dumps of the summary (null when there is none)."""
import sys

import orjson

from nemo_gym.reward_profile import compute_perf_summary

cases, out = sys.argv[1], sys.argv[2]
with open(out, "wb") as f:
    for line in open(cases, "rb").read().splitlines():
        case = orjson.loads(line)
        f.write(orjson.dumps(compute_perf_summary(case["perfs"], case["total"])) + b"\n")
