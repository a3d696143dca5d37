"""A NeMo Gym resources server's verify on the cases gym's test generated:
argv is CASES OUT MODULE SERVER REQUEST FIELDS — the server's module, its
class, its verify request class and the comma-separated response fields to
report. Each CASES line {"config": <the server config's fields>, "body":
<a /verify body>}; each OUT line {"reward", <field>...}, or {"error":
<exception type>} when verify raises."""
import asyncio
import importlib
import json
import sys
from types import SimpleNamespace


async def main():
    cases, out, module, server_class, request_class, fields = sys.argv[1:7]
    mod = importlib.import_module(module)
    server_type, request_type = getattr(mod, server_class), getattr(mod, request_class)
    with open(out, "w") as f:
        for line in open(cases):
            case = json.loads(line)
            # The server itself, built without its start-up, so that verify
            # has its config and its own methods.
            server = server_type.model_construct(config=SimpleNamespace(**case["config"]))
            try:
                r = await server_type.verify(server, request_type.model_validate(case["body"]))
            except Exception as e:
                f.write(json.dumps({"error": type(e).__name__}) + "\n")
                continue
            result = {"reward": r.reward}
            for name in filter(None, fields.split(",")):
                result[name] = getattr(r, name)
            f.write(json.dumps(result) + "\n")


asyncio.run(main())
