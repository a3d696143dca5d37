"""NeMo Gym's model-server side of training-token capture, run on the calls
gym's test made: argv is TOKEN_DIR CALLS, each CALLS line {"key", "id",
"request", "answer"} (a request body and the whole answer a model server
gave it). Each call is recorded as NeMo Gym's middleware records it: its
request turns, its parent resolved, its intent registered, its tokens
captured into TOKEN_DIR."""
import asyncio
import sys

import orjson

from nemo_gym.base_responses_api_model import _request_messages
from nemo_gym.token_id_capture import (
    CaptureContext,
    FileLineageStore,
    TokenCaptureStore,
    capture_tokens,
    register_call_intent,
    reset_token_sink,
    resolve_parent,
    set_token_sink,
)

token_dir, calls = sys.argv[1], sys.argv[2]


async def main():
    store, lineage = TokenCaptureStore(token_dir), FileLineageStore(token_dir)
    for line in open(calls, "rb").read().splitlines():
        call = orjson.loads(line)
        ctx = CaptureContext(rollout_id=call["key"], model_call_id=call["id"], token_sink=store, lineage_store=lineage)
        token = set_token_sink(ctx)
        try:
            items = _request_messages(call["request"])
            await resolve_parent(items)
            await register_call_intent()
            await capture_tokens(call["answer"], request_messages=items)
        finally:
            reset_token_sink(token)


asyncio.run(main())
