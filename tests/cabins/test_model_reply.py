"""Hostile model servers (issue 30): the real ``openai`` client on a local server that
trickles its reply a byte at a time, sends a 1.8 MB reply of 20,000 tool calls, or too
many tool calls; every request ends within its ``ReplyLimits``, and the LLM cabin handles
each as a failed call (its ``llm_outcome`` says why). The deadline runs on a fake clock."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cabins.fake_llm import FakeLLMServer, FakeReply
from cabins.llm import LLMCabin, OpenAIChatClient, classify_error
from cabins.model_reply import (
    ReplyDeadlineExceeded,
    ReplyLimits,
    ReplyRefused,
    read_reply,
)
from runtime import ContextSpec
from runtime.errors import SettingError
from runtime.testing import make_view, run_step

openai = pytest.importorskip("openai")

SPEC = ContextSpec(name="llm", board_keys=("goal:*",), weights={"goal:*": 1.0})
VIEW = make_view(SPEC, board={"goal:deliver:t1": {"pickup": "A", "drop": "B"}}, tick=3)
MANY_CALLS = FakeReply.calls(
    *[("save_to_scratchpad", {"key": f"k{i}", "value": "x" * 40}) for i in range(20_000)]
)


def fake_clock(step: float) -> Callable[[], float]:
    """A clock that moves ``step`` seconds each time it is read."""
    ticks = itertools.count(0.0, step)
    return lambda: next(ticks)


@pytest.fixture
def serve() -> Iterator[Callable[..., FakeLLMServer]]:
    made: list[FakeLLMServer] = []

    def make(*script: FakeReply) -> FakeLLMServer:
        made.append(FakeLLMServer(script).start())
        return made[-1]

    yield make
    for server in made:
        server.close()


def client(server: FakeLLMServer, **settings: Any) -> OpenAIChatClient:
    return OpenAIChatClient(
        openai.OpenAI(base_url=server.url, api_key="unused"), model="fake", **settings
    )


def test_a_server_that_trickles_its_reply_is_cut_off_at_the_whole_request_deadline(
    serve: Callable[..., FakeLLMServer],
) -> None:
    server = serve(FakeReply(content="x" * 200, trickle=0.005))
    slow = client(server, limits=ReplyLimits(deadline=10.0), clock=fake_clock(2.0))
    with pytest.raises(ReplyDeadlineExceeded, match="deadline of 10 s"):
        slow.complete([{"role": "user", "content": "hi"}], [])
    assert len(server.requests) == 1


def test_the_deadline_holds_on_the_real_clock_too(serve: Callable[..., FakeLLMServer]) -> None:
    server = serve(FakeReply(content="x" * 10_000, trickle=0.02))  # 200 s at this pace
    slow = client(server, timeout=5.0, limits=ReplyLimits(deadline=0.3))
    with pytest.raises(ReplyDeadlineExceeded):
        slow.complete([{"role": "user", "content": "hi"}], [])


def test_a_reply_within_its_limits_is_read_as_before(serve: Callable[..., FakeLLMServer]) -> None:
    server = serve(FakeReply(content="done", trickle=0.001))
    reply = client(server, clock=fake_clock(0.01)).complete([{"role": "user", "content": "x"}], [])
    assert reply.content == "done" and reply.finish_reason == "stop"


def test_a_huge_reply_is_refused_as_it_arrives(serve: Callable[..., FakeLLMServer]) -> None:
    server = serve(MANY_CALLS)  # 1.8 MB, 20,000 tool calls
    with pytest.raises(ReplyRefused, match="over 1048576 bytes"):
        client(server).complete([{"role": "user", "content": "hi"}], [])


def test_a_reply_with_too_many_tool_calls_is_refused(serve: Callable[..., FakeLLMServer]) -> None:
    server = serve(FakeReply.calls(*[("list_scratchpad_keys", {})] * 200))
    with pytest.raises(ReplyRefused, match="holds 200 tool calls; at most 64"):
        client(server).complete([{"role": "user", "content": "hi"}], [])


@pytest.mark.parametrize(
    ("reply", "limits", "kind"),
    [
        (FakeReply(content="x" * 200, trickle=0.005), ReplyLimits(deadline=10.0), "timeout"),
        (MANY_CALLS, ReplyLimits(), "bad_reply"),
        (
            FakeReply.calls(*[("list_scratchpad_keys", {})] * 9),
            ReplyLimits(max_tool_calls=8),
            "bad_reply",
        ),
    ],
    ids=["trickle", "huge", "many_calls"],
)
def test_the_cabin_handles_a_hostile_reply_as_a_failed_call(
    serve: Callable[..., FakeLLMServer], reply: FakeReply, limits: ReplyLimits, kind: str
) -> None:
    server = serve(reply)
    step = 2.0 if kind == "timeout" else 0.0  # the fake clock moves only for the deadline
    cabin = LLMCabin(SPEC, client=client(server, limits=limits, clock=fake_clock(step)))
    out = run_step(cabin, VIEW)
    (outcome,) = [e.data for e in out.events if e.kind == "llm_outcome"]
    assert outcome["stopped"] == "error" and outcome["error"]["kind"] == kind
    assert outcome["lost"]["answer"] is True


def test_a_body_that_is_not_a_completion_is_refused() -> None:
    limits = ReplyLimits()
    for body in (b"[]", b'{"choices": []}', b"{" * 5000, b"not json"):
        with pytest.raises(ReplyRefused, match="not a chat completion") as caught:
            read_reply([body], limits=limits, clock=fake_clock(0.0), started=0.0)
        assert classify_error(caught.value)["kind"] == "bad_reply"


@pytest.mark.parametrize(
    "settings",
    [{"deadline": 0}, {"deadline": float("nan")}, {"max_bytes": 0}, {"max_tool_calls": True}],
)
def test_limits_out_of_range_are_refused(settings: dict[str, Any]) -> None:
    with pytest.raises(SettingError):
        ReplyLimits(**settings)
