"""NeMo Gym's math_with_judge library path (math_verify, no judge) on the
answers gym's test generated: argv is CASES OUT, each CASES line
{"expected", "generated"}; each OUT line {"reward", "extracted_answer"} as
the server's verify gives them with should_use_judge false."""
import json
import sys

from math_verify.metric import math_metric
from math_verify.parser import ExprExtractionConfig, LatexExtractionConfig

from resources_servers.math_with_judge.app import _extract_last_boxed_answer, _run_math_verify

verifier = math_metric(
    gold_extraction_target=(LatexExtractionConfig(),),
    pred_extraction_target=(ExprExtractionConfig(), LatexExtractionConfig()),
)
cases, out = sys.argv[1], sys.argv[2]
with open(out, "w") as f:
    for line in open(cases):
        case = json.loads(line)
        boxed = _extract_last_boxed_answer(case["generated"])
        if boxed is None or not boxed.strip():
            reward, extracted = 0.0, None
        else:
            reward, extracted = _run_math_verify(verifier, case["expected"], case["generated"])
        f.write(json.dumps({"reward": reward, "extracted_answer": extracted}) + "\n")
