from fastapi import Request, Response

from nemo_gym.base_responses_api_agent import Body
from nemo_gym.openai_utils import NeMoGymResponse, NeMoGymResponseCreateParamsNonStreaming
from responses_api_agents.simple_agent.app import (
    SimpleAgent,
    SimpleAgentRunRequest,
    SimpleAgentVerifyResponse,
)


class {{.Class}}Agent(SimpleAgent):
    ray_enabled = False

    async def responses(
        self,
        request: Request,
        response: Response,
        body: NeMoGymResponseCreateParamsNonStreaming = Body(),
    ) -> NeMoGymResponse:
        # TODO: Replace this fallback with raise NotImplementedError after implementing run().
        return await super().responses(request, response, body)

    async def run(self, request: Request, body: SimpleAgentRunRequest) -> SimpleAgentVerifyResponse:
        # TODO: Replace this fallback with external episode delegation.
        return await super().run(request, body)


if __name__ == "__main__":
    {{.Class}}Agent.run_webserver()
