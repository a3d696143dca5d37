from pathlib import Path
from typing import ClassVar

from pydantic import ConfigDict

from nemo_gym.base_resources_server import (
    BaseResourcesServerConfig,
    BaseVerifyRequest,
    BaseVerifyResponse,
    ReverifyMode,
    SimpleResourcesServer,
)
from nemo_gym.verifier_fixture import VerifierFixture


class {{.Class}}ResourcesServerConfig(BaseResourcesServerConfig):
    REVERIFY_MODE: ClassVar[ReverifyMode] = ReverifyMode.STATELESS


class {{.Class}}VerifyRequest(BaseVerifyRequest):
    model_config = ConfigDict(extra="allow")
    expected_answer: str


class {{.Class}}Verifier:
    async def verify(self, body: {{.Class}}VerifyRequest) -> BaseVerifyResponse:
        reward = float(body.response.output_text.strip() == body.expected_answer.strip())
        return BaseVerifyResponse(**body.model_dump(), reward=reward)


class {{.Class}}ResourcesServer({{.Class}}Verifier, SimpleResourcesServer):
    ray_enabled = False

    config: {{.Class}}ResourcesServerConfig


VERIFIER_FIXTURE = VerifierFixture(
    server_factory={{.Class}}Verifier,
    request_model={{.Class}}VerifyRequest,
    cases_path=Path(__file__).parent / "tests" / "verifier_cases.jsonl",
)


if __name__ == "__main__":
    {{.Class}}ResourcesServer.run_webserver()
