"""The scripted OpenAI-compatible server on 127.0.0.1, as the tests of the LLM cabin, the
agent turn and the agent cabin use it: a fixture that starts servers and closes them, and
the real ``openai`` client pointed at one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cabins.fake_llm import FakeLLMServer
from cabins.llm import OpenAIChatClient


@pytest.fixture
def serve() -> Iterator[Any]:
    """``serve(*script)``: a started ``FakeLLMServer`` answering with ``script``, closed
    after the test."""
    made: list[FakeLLMServer] = []

    def make(*script: Any) -> FakeLLMServer:
        server = FakeLLMServer(script).start()
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


def openai_client(server: FakeLLMServer, **settings: Any) -> OpenAIChatClient:
    """The real ``openai`` client on ``server``, as a chat client (``settings`` go to
    ``OpenAIChatClient``)."""
    import openai

    return OpenAIChatClient(
        openai.OpenAI(base_url=server.url, api_key="unused"), model="fake", **settings
    )
