from fastapi import Request, Response

from nemo_gym.base_responses_api_agent import Body
from nemo_gym.openai_utils import NeMoGymResponse, NeMoGymResponseCreateParamsNonStreaming
from responses_api_agents.simple_agent.app import SimpleAgent


class {{.Class}}Agent(SimpleAgent):
    ray_enabled = False

    async def responses(
        self,
        request: Request,
        response: Response,
        body: NeMoGymResponseCreateParamsNonStreaming = Body(),
    ) -> NeMoGymResponse:
        # TODO: Implement the custom Gym agent strategy.
        return await super().responses(request, response, body)


if __name__ == "__main__":
    {{.Class}}Agent.run_webserver()
