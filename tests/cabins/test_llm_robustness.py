"""The LLM cabin against a model that fails: the real ``openai`` client on a local
OpenAI-compatible server (``cabins.fake_llm``) that is slow, rate-limited, broken,
disconnects or cuts its replies short; and the cabin's call policy and strict tools."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from pydantic import Field

from cabins.dispatcher import OrderArgs, ScriptedDispatcher
from cabins.fake_llm import FakeReply
from cabins.llm import (
    DEFAULT_TIMEOUT,
    DEFAULT_TIMING,
    ChatReply,
    DropQueued,
    EveryTick,
    LLMCabin,
    LLMEndpoint,
    OnChange,
    ScriptedClient,
    classify_error,
    command_tool,
)
from runtime import ContextSpec, Outbox, ToolArgs, load_spec
from runtime.agent.tools import Tool, strict_schema
from runtime.asynchronous import ThreadExecutor
from runtime.backoff import Backoff
from runtime.testing import make_view, run_step
from tests.support.fake_model import openai_client

openai = pytest.importorskip("openai")

SPEC = ContextSpec(
    name="llm",
    board_keys=("goal:*", "pose"),
    required=("goal:*",),
    weights={"goal:*": 1.0, "note:*": 0.6},
)
VIEW = make_view(SPEC, board={"goal:deliver:t1": {"pickup": "A", "drop": "B"}}, tick=3)


class DriveArgs(ToolArgs):
    speed: float = Field(ge=0, le=1.5, description="forward speed in m/s")


DRIVE = command_tool("drive", DriveArgs, "Drive forward at a speed.")


real_client = openai_client


def outcome_of(out: Outbox) -> Any:
    (event,) = [e for e in out.events if e.kind == "llm_outcome"]
    return event.data


FAILURES = [
    (FakeReply(status=500), "server_error", 500),
    (FakeReply(status=429, headers={"retry-after-ms": "1"}), "rate_limited", 429),
    (FakeReply(status=503), "server_error", 503),
    (FakeReply(drop=True), "transport", None),
    (FakeReply(delay=3.0), "timeout", None),
]


@pytest.mark.parametrize(("failure", "kind", "status"), FAILURES, ids=[f[1] for f in FAILURES])
def test_a_failure_mid_decision_says_what_was_queued_and_what_was_lost(
    serve: Any, failure: FakeReply, kind: str, status: int | None
) -> None:
    server = serve(FakeReply.calls(("drive", {"speed": 0.5})), failure)
    cabin = LLMCabin(SPEC, client=real_client(server, timeout=0.3), action_tools=(DRIVE,))
    out = run_step(cabin, VIEW)
    outcome = outcome_of(out)
    assert outcome["stopped"] == "error" and outcome["rounds"] == 2
    assert outcome["error"]["kind"] == kind and outcome["error"]["status"] == status
    assert outcome["queued"]["commands"] == ("drive",)  # round 1's action stands
    assert outcome["lost"] == {"answer": True, "rounds_left": cabin.max_steps - 2}
    assert [c.name for c in out.commands] == ["drive"]
    assert len(server.requests) == 2  # no retries inside the decision


def test_drop_queued_drops_what_was_queued_and_lists_every_board_write(
    serve: Any,
) -> None:
    spec = load_spec("specs/examples/dispatcher.toml")
    view = make_view(
        spec,
        board={
            "goal:deliver:t1": {"task": "t1", "pickup": "A", "drop": "B", "released": 0.0},
            "goal:deliver:t2": {"task": "t2", "pickup": "B", "drop": "C", "released": 5.0},
        },
    )
    server = serve(FakeReply.calls(("set_order", {"tasks": ["t2", "t1"]})), FakeReply(status=500))
    kept = run_step(ScriptedDispatcher(spec, client=real_client(server)), view)
    assert [(w.key, w.value) for w in kept.writes] == [("dispatch:order", ("t2", "t1"))]
    assert outcome_of(kept)["queued"]["writes"] == ("dispatch:order",)

    server = serve(FakeReply.calls(("set_order", {"tasks": ["t2", "t1"]})), FakeReply(status=500))
    cabin = ScriptedDispatcher(spec, client=real_client(server), on_error=DropQueued())
    dropped = run_step(cabin, view)
    assert dropped.writes == []  # dropped, but never silently:
    lost = outcome_of(dropped)["lost"]
    assert lost["writes"] == ("dispatch:order",) and lost["answer"] is True


def test_retries_are_a_setting_and_the_timeout_a_default(serve: Any) -> None:
    server = serve(
        FakeReply(status=500, headers={"retry-after-ms": "1"}), FakeReply(content="fine")
    )
    client = real_client(server, max_retries=1)
    out = run_step(LLMCabin(SPEC, client=client), VIEW)
    assert outcome_of(out)["answer"] == "fine" and len(server.requests) == 2
    default = real_client(server)
    assert default.client.timeout == DEFAULT_TIMEOUT == 5.0 and default.client.max_retries == 0


def test_a_reply_cut_off_at_the_length_limit_is_not_an_answer(serve: Any) -> None:
    server = serve(
        FakeReply(content="I think we shou", finish_reason="length"), FakeReply(content="go to A")
    )
    cabin = LLMCabin(SPEC, client=real_client(server), answer_key="llm:answer")
    out = run_step(cabin, VIEW)
    outcome = outcome_of(out)
    assert outcome["answer"] == "go to A" and outcome["truncated"] == 1
    assert [(w.key, w.value) for w in out.writes] == [("llm:answer", "go to A")]
    second = server.requests[1]["messages"]
    assert second[-1]["role"] == "user" and "finish_reason=length" in second[-1]["content"]
    assert all(m.get("content") != "I think we shou" for m in second)

    always = serve(FakeReply(content="...", finish_reason="length"))
    out = run_step(LLMCabin(SPEC, client=real_client(always), max_steps=2), VIEW)
    assert outcome_of(out)["stopped"] == "max_steps" and outcome_of(out)["answer"] is None


def test_the_same_action_twice_in_one_decision_is_refused_and_replanned(
    serve: Any,
) -> None:
    server = serve(
        FakeReply.calls(("drive", {"speed": 0.5})),
        FakeReply.calls(("drive", '{"speed":0.5}')),  # the same action, written otherwise
        FakeReply.calls(("drive", {"speed": 0.2})),
        FakeReply(content="slowed down"),
    )
    cabin = LLMCabin(SPEC, client=real_client(server), action_tools=(DRIVE,))
    out = run_step(cabin, VIEW)
    assert [dict(c.args) for c in out.commands] == [{"speed": 0.5}, {"speed": 0.2}]
    (replan,) = [e.data for e in out.events if e.kind == "replan"]
    assert replan["reason"] == "same_action_twice" and replan["tool"] == "drive"
    told = json.loads(server.requests[2]["messages"][-1]["content"])
    assert told["error"].startswith("same action twice")
    assert outcome_of(out)["repeated_actions"] == 1


def test_the_model_is_called_when_the_view_changed_or_at_the_declared_rate() -> None:
    client = ScriptedClient([ChatReply.text("ok")], repeat_last=True)
    cabin = LLMCabin(SPEC, client=client, call_when=OnChange(every=5.0))
    goal = {"goal:deliver:t1": {"pickup": "A"}}
    for now in (1.0, 2.0, 3.0):  # the same view three times: one call
        run_step(cabin, make_view(SPEC, board=goal, now=now))
    assert len(client.requests) == 1 and cabin.skipped == 2
    run_step(cabin, make_view(SPEC, board={"goal:deliver:t1": {"pickup": "B"}}, now=4.0))
    assert len(client.requests) == 2  # changed
    run_step(cabin, make_view(SPEC, board={"goal:deliver:t1": {"pickup": "B"}}, now=9.5))
    assert len(client.requests) == 3  # unchanged, but 5 s went by

    failing = LLMCabin(SPEC, client=ScriptedClient([]), retry=Backoff(base=1.0, jitter=0.0))
    run_step(failing, make_view(SPEC, board=goal, now=1.0))
    assert failing.last_call is not None and not failing.last_call.ok
    assert run_step(failing, make_view(SPEC, board=goal, now=1.5)).events == []  # waits
    assert outcome_of(run_step(failing, make_view(SPEC, board=goal, now=2.0)))["stopped"] == (
        "error"
    )
    every = LLMCabin(SPEC, client=client, call_when=EveryTick())
    run_step(every, VIEW)
    run_step(every, VIEW)
    assert len(client.requests) == 5


def test_strict_tools_follow_the_openai_sdk_rules(serve: Any) -> None:
    from openai.lib._pydantic import to_strict_json_schema

    from runtime.agent.tools import _strip_titles

    for model in (DriveArgs, OrderArgs):
        assert strict_schema(_strip_titles(model.model_json_schema())) == _strip_titles(
            to_strict_json_schema(model)
        )
    server = serve(FakeReply(content="ok"))
    cabin = LLMCabin(SPEC, client=real_client(server), action_tools=(DRIVE,), strict_tools=True)
    run_step(cabin, VIEW)
    tools = server.requests[0]["tools"]
    for tool in tools:
        function = tool["function"]
        assert function["strict"] is True
        _closed(function["parameters"])
    save = next(t for t in tools if t["function"]["name"] == "save_to_scratchpad")
    assert save["function"]["parameters"]["required"] == ["key", "value", "description"]
    plain = Tool("drive", "d", DriveArgs, lambda a: None).schema()
    assert "strict" not in plain["function"]


def _closed(schema: dict[str, Any]) -> None:
    """Strict mode: every object closed with every property required, every node typed."""
    if schema.get("type") == "object":
        assert schema["additionalProperties"] is False
        assert schema["required"] == list(schema.get("properties", {}))
    assert any(k in schema for k in ("type", "anyOf", "$ref", "enum", "const")), schema
    for sub in schema.get("properties", {}).values():
        _closed(sub)
    for sub in schema.get("anyOf", []):
        _closed(sub)
    if isinstance(schema.get("items"), dict):
        _closed(schema["items"])


def test_errors_are_classified_whoever_raised_them() -> None:
    assert classify_error(TimeoutError("slow"))["kind"] == "timeout"
    assert classify_error(ConnectionResetError("gone"))["kind"] == "transport"
    assert classify_error(ValueError("bad"))["kind"] == "error"

    class Fake(Exception):
        status_code = 404

    assert classify_error(Fake("nope")) | {"message": ""} == {
        "kind": "rejected",
        "status": 404,
        "code": None,
        "retry_after": None,
        "type": "Fake",
        "message": "",
    }


def test_llm_cabins_are_asynchronous_unless_their_spec_says_otherwise() -> None:
    client = ScriptedClient([ChatReply.text("ok")])
    assert LLMCabin(SPEC, client=client).timing == DEFAULT_TIMING
    declared = ContextSpec.model_validate({**SPEC.model_dump(), "timing": {"mode": "sync"}})
    assert not LLMCabin(declared, client=client).timing.is_async


def test_an_endpoint_comes_from_the_flags_or_the_environment(serve: Any) -> None:
    assert LLMEndpoint.from_environment({}) is None
    env = {"TICKWORK_LLM_BASE_URL": "http://127.0.0.1:1/v1", "TICKWORK_LLM_MODEL": "m1"}
    assert LLMEndpoint.from_environment(env) == LLMEndpoint("http://127.0.0.1:1/v1", "m1")
    assert LLMEndpoint.from_environment(env, base_url="http://x/v1", model="m2") == LLMEndpoint(
        "http://x/v1", "m2"
    )
    assert LLMEndpoint.from_environment({"OPENAI_API_KEY": "k"}) == LLMEndpoint(None)
    server = serve(FakeReply(content="from the endpoint"))
    client = LLMEndpoint(server.url, "fake").client()
    reply = client.complete([{"role": "user", "content": "hi"}], [])
    assert reply.content == "from the endpoint" and server.requests[0]["model"] == "fake"
    # a checkpoint holds nothing of a client: a resumed run connects to the endpoint it is given
    from runtime.snapshot import StateCodec

    assert StateCodec().dump(client) == {"$o": [0, {}]}


class Fast:
    """A cabin that counts the ticks it ran on."""

    def __init__(self) -> None:
        self.spec, self.name = ContextSpec(name="fast", board_keys=("pose",)), "fast"
        self.ticks: list[int] = []

    def step(self, view: Any, out: Outbox) -> None:
        self.ticks.append(view.tick)


class _Watched(ThreadExecutor):
    """Worker threads, and the futures of the decisions they run (for the test to wait on
    one it released)."""

    def __init__(self) -> None:
        super().__init__()
        self.futures: list[Any] = []

    def start(self, task: Any, *, tick: int, period: float) -> Any:
        future = super().start(task, tick=tick, period=period)
        self.futures.append(future)
        return future


def test_a_model_that_has_not_answered_never_holds_up_the_loop_or_the_other_cabins() -> None:
    """On a fake clock: the LLM cabin decides on a worker thread, and its model answers only
    when the test lets it (a slowness as long as the test wants). A loop that waited for it
    would stop at its first tick until the gate's timeout; this one runs 60 ticks (3 s at
    20 Hz) on time, the other cabin on every one, and applies the answer when it comes."""
    from runtime import (
        Assembler,
        CabinMap,
        EventLog,
        Scratchpad,
        SimClock,
        StateBoard,
        TickLoop,
        WorkingMemory,
    )

    gate = threading.Event()
    released: list[bool] = []

    def slow(messages: Any, tools: Any) -> ChatReply:
        released.append(gate.wait(timeout=5.0))  # False: the loop waited for the model
        return ChatReply.text("thought about it")

    client = ScriptedClient([slow], repeat_last=True)
    llm = LLMCabin(SPEC, client=client, call_when=EveryTick())
    fast = Fast()
    clock = SimClock()
    board, log = StateBoard(clock=clock), EventLog(clock=clock)
    board.write("goal:deliver:t1", {"pickup": "A", "drop": "B"})
    assembler = Assembler(
        board,
        CabinMap(),
        log,
        WorkingMemory(),
        [SPEC, fast.spec],
        scratchpads={"llm": Scratchpad()},
    )
    executor = _Watched()
    loop = TickLoop(assembler, [llm, fast], 20.0, clock, executor=executor)

    def outcomes() -> list[Any]:
        return [e.data for e in log.query(0, 1e9, kinds=["llm_outcome"], limit=None)]

    try:
        stats = loop.run(60)
        assert released == [] and len(client.requests) == 1  # still thinking: not waited for
        assert fast.ticks == list(range(60))  # the other cabin ran on every tick
        assert (stats.overruns, stats.skipped_ticks) == (0, 0)
        assert clock.now() == pytest.approx(3.0)  # 60 slots of the grid, none missed
        assert outcomes() == [] and len(executor.futures) == 1  # no new view while in flight
        gate.set()
        executor.futures[0].result(timeout=5.0)  # the worker finished its decision
        loop.step()  # tick 60 applies it
        assert released == [True]
        (answer,) = outcomes()
        assert answer["answer"] == "thought about it"
        assert fast.ticks == list(range(61))
    finally:
        gate.set()
        loop.close()
