"""NeMo Gym's collector-side finalization of training-token captures, run
on the rows and token store gym's test wrote: argv is TOKEN_DIR ROWS OUT,
each ROWS line a finished rollout row; each OUT line is
{"row": <the row as NeMo Gym's collector writes it>, "built": <whether a
build came back>, "masked": ..., "retire": <whether its capture may be
retired>}."""
import asyncio
import sys
import warnings
from pathlib import Path

import orjson

from nemo_gym.token_id_capture import TokenCaptureStore
from nemo_gym.token_id_capture.delivery import capture_build_can_retire, finalize_rollout_token_capture

warnings.simplefilter("ignore")
token_dir, rows, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])


async def main():
    store = TokenCaptureStore(token_dir)
    with out.open("wb") as f:
        for line in rows.read_bytes().splitlines():
            result = orjson.loads(line)
            built = await finalize_rollout_token_capture(result, store)
            f.write(orjson.dumps({
                "row": orjson.dumps(result).decode(),
                "built": built is not None,
                "masked": bool(built and built.get("mask_sample")),
                "retire": capture_build_can_retire(built),
            }) + b"\n")


asyncio.run(main())
