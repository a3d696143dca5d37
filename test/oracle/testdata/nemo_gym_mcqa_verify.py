"""NeMo Gym's mcqa verify on the answers gym's test generated: argv is
CASES OUT, each CASES line {"server_mode", "body"} (the server's
grading_mode, or null, and a /verify body); each OUT line {"reward",
"extracted"}, or {"error": <exception type>} when verify raises."""
import asyncio
import json
import sys
from types import SimpleNamespace

from resources_servers.mcqa.app import MCQAResourcesServer, MCQAVerifyRequest


async def main():
    cases, out = sys.argv[1], sys.argv[2]
    with open(out, "w") as f:
        for line in open(cases):
            case = json.loads(line)
            server = SimpleNamespace(config=SimpleNamespace(grading_mode=case["server_mode"]))
            try:
                r = await MCQAResourcesServer.verify(server, MCQAVerifyRequest.model_validate(case["body"]))
                f.write(json.dumps({"reward": r.reward, "extracted": r.extracted_answer}) + "\n")
            except Exception as e:
                f.write(json.dumps({"error": type(e).__name__}) + "\n")


asyncio.run(main())
