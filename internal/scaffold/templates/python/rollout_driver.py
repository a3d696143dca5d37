from collections.abc import Mapping
from typing import Any


async def run_rollout_collection(
    rollout_collection_config: Any,
    _global_config_dict: Mapping[str, Any],
) -> None:
    """TODO: Replace this delegation with custom rollout coordination."""
    from nemo_gym.rollout_collection import RolloutCollectionHelper

    await RolloutCollectionHelper().run_from_config(rollout_collection_config)
