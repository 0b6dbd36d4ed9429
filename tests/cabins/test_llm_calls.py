"""How the LLM cabin calls its model, through the real ``openai`` client against the scripted
server on 127.0.0.1 (``cabins.fake_llm``), in a tick loop on the simulated clock (time is
the loop's, nothing sleeps): a refusal is its own outcome, with its text; a 429 or 503 is
tried again no sooner than its ``Retry-After``, other failures with backoff; permanent
errors are asked once and raise an alarm with the cause; a model that never stops is asked
at most its step budget; and what is sent is bounded, cut with a visible marker."""

from __future__ import annotations

import email.utils
import itertools
import json
from functools import partial
from typing import Any

import numpy as np
import pytest
from pydantic import Field

from cabins.fake_llm import FakeLLMServer, FakeReply
from cabins.llm import LLMCabin, LLMSettings, command_tool
from runtime import (
    Assembler,
    CabinMap,
    ContextSpec,
    EventLog,
    Scratchpad,
    SimClock,
    StateBoard,
    TickLoop,
    ToolArgs,
    WorkingMemory,
    configure_logging,
)
from runtime.backoff import Backoff
from runtime.settings import settings_from_spec
from tests.support.fake_model import openai_client

pytest.importorskip("openai")

SPEC = ContextSpec(
    name="llm",
    board_keys=("goal:*", "pose"),
    required=("goal:*",),
    weights={"goal:*": 1.0, "pose": 0.9, "note:*": 0.6},
)
RATE = 10.0  # Hz: a tick is 0.1 s of the simulated clock


class DriveArgs(ToolArgs):
    speed: float = Field(ge=0, le=1.5, description="forward speed in m/s")


DRIVE = command_tool("drive", DriveArgs, "Drive forward at a speed.")


@pytest.fixture(autouse=True)
def _quiet() -> None:
    configure_logging(level="critical")


real_client = openai_client


class Rig:
    """An LLM cabin in a tick loop on the simulated clock, with a goal and a pose that
    moves every tick (so the call policy always sees a change, unless ``still``)."""

    def __init__(self, cabin: LLMCabin, *, still: bool = False) -> None:
        self.cabin, self.still = cabin, still
        self.clock = SimClock()
        self.board, self.log = StateBoard(clock=self.clock), EventLog(clock=self.clock)
        self.pad = Scratchpad()
        assembler = Assembler(
            self.board,
            CabinMap(),
            self.log,
            WorkingMemory(),
            [cabin.spec],
            scratchpads={"llm": self.pad},
        )
        self.loop = TickLoop(assembler, [cabin], RATE, self.clock)
        self.board.write("goal:deliver:t1", {"pickup": "A", "drop": "B"})

    def run(self, ticks: int, server: FakeLLMServer) -> list[float]:
        """Run ``ticks`` ticks; the simulated time at which each request was sent."""
        sent: list[float] = []
        for _ in range(ticks):
            if not self.still or self.loop.tick == 0:
                self.board.write("pose", (0.01 * self.loop.tick, 0.0, 0.0))
            before = len(server.requests)
            result = self.loop.step()
            sent += [result.time] * (len(server.requests) - before)
        return sent

    def events(self, kind: str) -> list[Any]:
        return [e.data for e in self.log.query(0.0, 1e9, kinds=[kind], limit=None)]

    def alarms(self, kind: str) -> list[Any]:
        return [a for a in self.events("alarm") if a["kind"] == kind]


# -- refusals -------------------------------------------------------------------------------


def test_a_refusal_is_its_own_outcome_with_its_text_and_a_warning(serve: Any) -> None:
    why = "I can't help with steering a robot into people."
    server = serve(FakeReply(content=None, refusal=why))
    cabin = LLMCabin(SPEC, client=real_client(server), answer_key="llm:answer")
    rig = Rig(cabin, still=True)
    rig.run(5, server)
    (outcome,) = rig.events("llm_outcome")
    assert outcome["stopped"] == "refusal" and outcome["refusal"] == why
    assert outcome["answer"] is None and rig.board.read("llm:answer") is None
    (alarm,) = rig.alarms("llm_refusal")
    assert (
        alarm["reason"] == why and alarm["level"] == "warn" and alarm["task"] == ("goal:deliver:t1")
    )


def test_a_refusal_shows_in_a_simulated_runs_summary(serve: Any) -> None:
    from cabins.dispatcher import LLMDispatcher
    from runtime import load_spec
    from sim.run.harness import ExtraCabin, Simulation
    from tests.support.paths import ROOT

    server = serve(FakeReply(content=None, refusal="no"))
    spec = load_spec(ROOT / "specs" / "examples" / "dispatcher.toml")
    cabin = ExtraCabin(spec, partial(LLMDispatcher, client=real_client(server)))
    sim = Simulation(seed=0, extra=[cabin])
    try:
        summary = sim.run(100, until_done=False)
    finally:
        sim.close()
    assert summary["alarms"].get("llm_refusal", 0) >= 1
    outcomes = [e.data for e in sim.log.query(0, 1e9, kinds=["llm_outcome"], limit=None)]
    assert outcomes and {o["refusal"] for o in outcomes} == {"no"}


# -- failures that are tried again, and when ---------------------------------------------------

_WHEN = email.utils.formatdate(1_700_000_000, usegmt=True)
_LATER = email.utils.formatdate(1_700_000_030, usegmt=True)


@pytest.mark.parametrize(
    ("status", "headers", "wait"),
    [
        (429, {"retry-after": "20"}, 20.0),
        (503, {"Retry-After": "20"}, 20.0),
        (429, {"Retry-After": _LATER, "Date": _WHEN}, 30.0),  # an HTTP-date, by the server's Date
    ],
    ids=["429-seconds", "503-seconds", "429-http-date"],
)
def test_a_retry_after_is_honoured_on_the_loops_clock_and_not_before(
    serve: Any, status: int, headers: dict[str, str], wait: float
) -> None:
    server = serve(FakeReply(status=status, headers=headers), FakeReply(content="ok"))
    rig = Rig(LLMCabin(SPEC, client=real_client(server)))
    sent = rig.run(int((wait + 2) * RATE), server)
    # the pose moved every tick, yet nothing was sent until the wait was over; then at once
    assert sent[0] == 0.0 and sent[1] >= wait and sent[1] == pytest.approx(wait)
    failed = rig.events("llm_outcome")[0]["error"]
    assert failed["status"] == status and failed["retry_after"] == pytest.approx(wait)
    assert failed["retry_in"] == pytest.approx(wait) and failed["permanent"] is False


@pytest.mark.slow
def test_other_failures_back_off_exponentially_with_seeded_jitter(serve: Any) -> None:
    def times(seed: int) -> list[float]:
        server = serve(FakeReply(status=500))
        cabin = LLMCabin(
            SPEC,
            client=real_client(server),
            retry=Backoff(base=1.0, factor=2.0, cap=8.0, jitter=0.5),
            rng=np.random.default_rng(seed),
        )
        return Rig(cabin).run(400, server)  # 40 s of a model that always fails

    sent = times(7)
    gaps = [b - a for a, b in itertools.pairwise(sent)]
    nominal = [1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0, 8.0]  # doubling, capped at 8 s
    assert len(gaps) >= 6
    for gap, full in zip(gaps, nominal, strict=False):  # less up to half, to the next tick
        assert full * 0.5 - 1e-9 <= gap <= full + 1 / RATE + 1e-9
    assert len(sent) < 20  # not every second, let alone every tick
    assert times(7) == sent and times(8) != sent  # the jitter is the seed's


@pytest.mark.parametrize(
    ("status", "code"),
    [(400, "context_length_exceeded"), (401, None), (403, None), (404, None), (422, None)],
)
def test_a_permanent_error_is_asked_once_and_raises_an_alarm_with_the_cause(
    serve: Any, status: int, code: str | None
) -> None:
    server = serve(FakeReply(status=status, error_code=code))
    rig = Rig(LLMCabin(SPEC, client=real_client(server)))
    rig.run(300, server)  # 30 s, the pose moving every tick
    assert len(server.requests) == 1
    (outcome,) = rig.events("llm_outcome")
    assert outcome["stopped"] == "error" and outcome["error"]["permanent"] is True
    (alarm,) = rig.alarms("llm_permanent_error")
    assert alarm["level"] == "alarm" and alarm["task"] == "goal:deliver:t1"
    assert alarm["cause"]["status"] == status and alarm["cause"]["code"] == code
    assert f"HTTP {status}" in alarm["reason"]
    # another task is another request (once), not a retry of the first
    rig.board.delete("goal:deliver:t1")
    rig.board.write("goal:deliver:t2", {"pickup": "B", "drop": "C"})
    rig.run(50, server)
    assert len(server.requests) == 2 and len(rig.alarms("llm_permanent_error")) == 2


# -- a model that never stops ------------------------------------------------------------------


def never_stops(request: dict[str, Any]) -> FakeReply:
    """Always one more note: a model that never answers."""
    count = sum(1 for m in request["messages"] if m["role"] == "tool")
    return FakeReply.calls(("save_to_scratchpad", {"key": f"n{count}", "value": count}))


def test_a_model_that_never_stops_is_asked_at_most_its_step_budget(serve: Any) -> None:
    server = serve(never_stops)
    cabin = LLMCabin(
        SPEC, client=real_client(server), max_steps=4, settings=LLMSettings(step_budget=10)
    )
    rig = Rig(cabin)
    rig.run(200, server)  # 200 ticks, every one a change
    assert len(server.requests) == 10  # 4 + 4 + 2
    assert [o["stopped"] for o in rig.events("llm_outcome")] == [
        "max_steps",
        "max_steps",
        "step_budget",
    ]
    (alarm,) = rig.alarms("llm_step_budget")
    assert alarm["task"] == "goal:deliver:t1" and alarm["cause"]["step_budget"] == 10
    # a new task has a budget of its own
    rig.board.delete("goal:deliver:t1")
    rig.board.write("goal:deliver:t2", {"pickup": "B", "drop": "C"})
    rig.run(100, server)
    assert len(server.requests) == 20 and len(rig.alarms("llm_step_budget")) == 2


def test_its_own_note_writes_are_not_a_change_to_ask_about(serve: Any) -> None:
    server = serve(never_stops)
    rig = Rig(LLMCabin(SPEC, client=real_client(server), max_steps=3), still=True)
    rig.run(200, server)
    assert len(server.requests) == 3  # one decision; the notes it wrote changed nothing else
    assert len(rig.pad) == 3


# -- what is sent ------------------------------------------------------------------------------


def test_a_200_kb_note_and_tool_result_are_cut_with_a_visible_marker(serve: Any) -> None:
    big = "x" * 200_000
    server = serve(
        FakeReply.calls(("read_from_scratchpad", {"key": "log"})),
        FakeReply.calls(("save_to_scratchpad", {"key": "copy", "value": "y" * 200_000})),
        FakeReply(content="done"),
    )
    rig = Rig(LLMCabin(SPEC, client=real_client(server)), still=True)
    rig.pad.write("log", big, "a huge tool output")
    rig.run(3, server)
    assert len(server.requests) == 3
    sizes = [len(json.dumps(r)) for r in server.requests]
    assert max(sizes) < 20_000  # was 402 kB and 603 kB
    system = server.requests[0]["messages"][0]["content"]
    assert "…[truncated: 198002 of 200002 characters not shown]" in system  # the JSON string
    read = json.loads(json.dumps(server.requests[1]["messages"][-1]))
    assert read["role"] == "tool" and "…[truncated: " in read["content"]
    echoed = server.requests[2]["messages"][-2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(echoed)["truncated_arguments"].endswith("characters not shown]")
    assert rig.pad.read("copy") == "y" * 200_000  # the tool itself got the whole value
    assert rig.events("llm_outcome")[0]["answer"] == "done"


def test_a_specs_params_set_the_limits(serve: Any) -> None:
    spec = ContextSpec.model_validate(
        {**SPEC.model_dump(), "params": {"note_chars": 100, "step_budget": 3}}
    )
    settings = settings_from_spec(LLMCabin, spec)
    assert settings == LLMSettings(note_chars=100, step_budget=3)
    server = serve(FakeReply(content="ok"))
    cabin = LLMCabin(spec, client=real_client(server), settings=settings)  # as build_extra does
    rig = Rig(cabin, still=True)
    rig.pad.write("log", "z" * 500)
    rig.run(1, server)
    shown = '"' + "z" * 99 + "…[truncated: 402 of 502 characters not shown]"  # JSON, quoted
    assert shown in server.requests[0]["messages"][0]["content"]
    assert cabin.budget.limit == 3


# -- what a run keeps of it --------------------------------------------------------------------


def test_a_checkpoint_keeps_the_retry_wait_the_budget_and_the_generator(serve: Any) -> None:
    from runtime.testing import round_trip_state
    from sim.run.runstate import records

    server = serve(FakeReply(status=429, headers={"retry-after": "20"}))
    cabin = LLMCabin(SPEC, client=real_client(server), settings=LLMSettings(step_budget=3))
    Rig(cabin).run(5, server)
    cabin.budget.give_up("goal:deliver:t9", "step_budget")
    fresh = LLMCabin(SPEC, client=real_client(server), settings=LLMSettings(step_budget=3))
    copy = round_trip_state(cabin, fresh, records=records())
    assert copy.last_call == cabin.last_call and copy.last_call.retry_at == pytest.approx(20.0)
    assert copy.budget.spent == {"goal:deliver:t1": 1}
    assert copy.budget.given_up == {"goal:deliver:t9": "step_budget"}
    assert copy.rng.random() == cabin.rng.random()


def test_what_these_behaviours_emit_is_registered(serve: Any) -> None:
    from cabins.warehouse.registry import WAREHOUSE

    known = {e.kind: set(e.fields) for e in WAREHOUSE.events}
    server = serve(
        FakeReply(content=None, refusal="no"),
        FakeReply.calls(("drive", {"speed": 0.5})),
        FakeReply(status=401),
    )
    rig = Rig(
        LLMCabin(
            SPEC,
            client=real_client(server),
            action_tools=(DRIVE,),
            max_steps=1,
            settings=LLMSettings(step_budget=2),
        )
    )
    rig.run(30, server)
    emitted = [e for e in rig.log.query(0.0, 1e9, limit=None) if "llm" in e.tags]
    kinds = {(e.kind, e.data.get("kind")) for e in emitted}
    assert {("alarm", "llm_refusal"), ("alarm", "llm_step_budget")} <= kinds
    assert {e.kind: sorted(set(e.data) - known[e.kind]) for e in emitted} == {
        "alarm": [],
        "llm_outcome": [],
        "llm_max_steps": [],
    }
