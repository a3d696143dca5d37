"""Python's re.findall(pattern, text, re.IGNORECASE) on the cases gym's
test generated: argv is CASES OUT, each CASES line {"pattern", "text"};
each OUT line {"error": true} when Python refuses the pattern, else
{"matches": [...]} (group 1 of each match when the pattern has groups, as
gym's mcqa reads them)."""
import json
import re
import sys

cases, out = sys.argv[1], sys.argv[2]
with open(out, "w") as f:
    for line in open(cases):
        case = json.loads(line)
        try:
            found = re.findall(case["pattern"], case["text"], re.IGNORECASE)
        except re.error:
            f.write(json.dumps({"error": True}) + "\n")
            continue
        f.write(json.dumps({"matches": [m[0] if isinstance(m, tuple) else m for m in found]}) + "\n")
