"""The agent cabin in a tick loop on the simulated clock, its model behind the real ``openai``
client and the scripted server: a goal carried through a turn off the tick thread (the
loop goes on while it decides), the summary remembered through the loop and recalled by the
next turn, a failed request asked again on the loop's clock, a goal that changes ending the
turn under way, alarms for the other endings, a checkpoint in the middle of a turn, and
everything it emits registered."""

from __future__ import annotations

from typing import Any

import pytest

from cabins.agent import AgentCabin
from cabins.fake_llm import FakeLLMServer, FakeReply
from runtime import (
    Assembler,
    CabinMap,
    ContextSpec,
    EventLog,
    LongTermMemory,
    SimClock,
    StateBoard,
    TickLoop,
    WorkingMemory,
    configure_logging,
)
from runtime.cabin import timing_of
from tests.support.fake_model import openai_client
from tests.support.turn_script import TurnScript, plan

pytest.importorskip("openai")

SPEC = ContextSpec(
    name="agent",
    board_keys=("goal:*",),
    required=("goal:*",),
    weights={"goal:*": 1.0},
    timing={"mode": "async", "latency": 0.5},
)
RATE = 10.0  # Hz: a tick is 0.1 s of the simulated clock
PLAN = plan(("s1", "", ()), ("s2", "", ("s1",)), ("s3", "", ("s2",)))


@pytest.fixture(autouse=True)
def _quiet() -> None:
    configure_logging(level="critical")


client = openai_client


class Rig:
    """An agent cabin in a tick loop on the simulated clock, with a long-term memory the
    loop writes to and the cabin recalls from."""

    def __init__(self, server: FakeLLMServer, *, executor: Any = None, **settings: Any) -> None:
        self.clock = SimClock()
        self.board, self.log = StateBoard(clock=self.clock), EventLog(clock=self.clock)
        self.memory = LongTermMemory(":memory:")
        settings.setdefault("long_term", self.memory)
        self.cabin = AgentCabin(SPEC, client=client(server), answer_key="agent:answer", **settings)
        assembler = Assembler(self.board, CabinMap(), self.log, WorkingMemory(), [SPEC])
        self.loop = TickLoop(
            assembler, [self.cabin], RATE, self.clock, long_term=self.memory, executor=executor
        )
        self.server = server

    def run(self, ticks: int) -> list[float]:
        """Run ``ticks`` ticks; the simulated time at which each request was sent."""
        sent: list[float] = []
        for _ in range(ticks):
            before = len(self.server.requests)
            result = self.loop.step()
            sent += [result.time] * (len(self.server.requests) - before)
        return sent

    def events(self, kind: str) -> list[Any]:
        return [e.data for e in self.log.query(0.0, 1e9, kinds=[kind], limit=None)]


def test_a_goal_is_carried_through_a_turn_off_the_tick_thread_and_remembered(serve: Any) -> None:
    server = serve(TurnScript(plans=[PLAN], answer="The margin is 50."))
    rig = Rig(server)
    assert timing_of(rig.cabin).is_async
    rig.board.write("goal:margin", {"what": "margin of Q1"})
    rig.run(3)
    assert len(server.requests) == 5  # the whole turn in one decision: plan, 3 steps, answer
    assert rig.events("agent_turn") == []  # its outbox comes back after the latency
    rig.run(10)
    (turn,) = rig.events("agent_turn")
    assert turn["outcome"] == "answer" and turn["answer"] == "The margin is 50."
    assert turn["task"] == "goal:margin" and turn["calls"] == 5
    assert dict(turn["steps"]) == {"s1": "done", "s2": "done", "s3": "done"}
    assert [e["step"] for e in rig.events("agent_step")] == ["s1", "s2", "s3"]
    assert rig.board.read("agent:answer").value == "The margin is 50."  # type: ignore[union-attr]
    (kept,) = rig.events("remembered")
    assert kept["stored"] is True and kept["content"] == turn["remembered"]
    # carried once: no request while the goal stays as it is
    rig.run(20)
    assert len(server.requests) == 5
    # a new goal: a new turn, which recalls the first one's summary
    rig.board.write("goal:margin", {"what": "margin of Q2"})
    rig.run(10)
    assert len(server.requests) == 10
    assert "The margin is 50." in server.requests[5]["messages"][0]["content"]


def test_the_loop_goes_on_while_the_turn_is_decided_elsewhere(serve: Any) -> None:
    from runtime.testing import ManualExecutor

    server = serve(TurnScript(plans=[PLAN]))
    executor = ManualExecutor()
    rig = Rig(server, executor=executor)
    rig.board.write("goal:g", "do it")
    rig.run(5)  # the decision is handed off at tick 0; the loop does not wait for it
    assert executor.pending == ("agent",) and server.requests == []
    assert rig.loop.tick == 5
    executor.finish("agent")  # the turn runs where the executor runs it
    assert len(server.requests) == 5 and rig.events("agent_turn") == []
    rig.run(1)  # its outbox is applied at the next apply phase
    assert [e["outcome"] for e in rig.events("agent_turn")] == ["answer"]


def test_a_failed_request_is_asked_again_on_the_loops_clock(serve: Any) -> None:
    server = serve(FakeReply(status=429, headers={"retry-after": "3"}), TurnScript(plans=[PLAN]))
    rig = Rig(server)
    rig.board.write("goal:g", "do it")
    sent = rig.run(80)
    assert sent[0] == 0.0 and sent[1] >= 3.0 - 1e-9  # nothing asked in the wait
    assert rig.cabin.turns == 1
    assert [e["outcome"] for e in rig.events("agent_turn")] == ["answer"]


def test_a_goal_that_changes_while_its_turn_waits_ends_it_abandoned(serve: Any) -> None:
    server = serve(FakeReply(status=503, headers={"retry-after": "5"}), TurnScript(plans=[PLAN]))
    rig = Rig(server)
    rig.board.write("goal:g", "first")
    rig.run(10)
    assert rig.cabin.turn is not None and rig.cabin.turn.waiting
    rig.board.write("goal:g", "second")
    rig.run(20)
    outcomes = [(e["outcome"], e["goal"]) for e in rig.events("agent_turn")]
    assert outcomes == [("abandoned", 'goal:g: "first"'), ("answer", 'goal:g: "second"')]
    (alarm,) = [a for a in rig.events("alarm") if a["kind"] == "agent_turn_failed"]
    assert alarm["level"] == "warn" and alarm["reason"].startswith("abandoned: the goal changed")


def test_an_ending_other_than_an_answer_raises_an_alarm_with_its_cause(serve: Any) -> None:
    server = serve(FakeReply(status=401))
    rig = Rig(server)
    rig.board.write("goal:g", "do it")
    rig.run(30)
    assert len(server.requests) == 1  # permanent: never asked again for this goal
    (alarm,) = [a for a in rig.events("alarm") if a["kind"] == "agent_turn_failed"]
    assert alarm["level"] == "alarm" and alarm["reason"].startswith("permanent_error: HTTP 401")
    assert alarm["cause"]["status"] == 401
    assert rig.board.read("agent:answer") is None


def test_a_checkpoint_in_the_middle_of_a_turn_goes_on_as_if_it_had_not_stopped(
    serve: Any,
) -> None:
    from runtime.testing import round_trip_state
    from sim.run.runstate import records

    script = TurnScript(plans=[PLAN])
    server = serve(FakeReply(status=429, headers={"retry-after": "4"}), script)
    rig = Rig(server)
    rig.board.write("goal:g", "do it")
    rig.run(5)
    waiting = rig.cabin.turn
    assert waiting is not None and waiting.waiting and waiting.calls == 1
    fresh = AgentCabin(SPEC, client=client(server), answer_key="agent:answer")
    copy = round_trip_state(rig.cabin, fresh, records=records())
    assert copy.turn == waiting and copy.task == "goal:g"
    assert copy.rng.random() == rig.cabin.rng.random()
    state = copy.turn
    assert state is not None
    copy.agent.advance(state, now=1.0)
    assert len(server.requests) == 1  # still waiting, as the original would
    copy.agent.advance(state, now=state.retry_at or 0.0)
    assert state.result is not None and state.result.outcome == "answer"


def test_a_spec_can_set_the_turns_bounds(serve: Any) -> None:
    from runtime.settings import settings_from_spec

    spec = ContextSpec.model_validate({**SPEC.model_dump(), "params": {"step_budget": 7}})
    settings = settings_from_spec(AgentCabin, spec)
    cabin = AgentCabin(spec, client=client(serve(FakeReply())), settings=settings)
    assert cabin.settings.step_budget == 7


def test_a_cabin_without_a_model_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="needs a model: give --llm-base-url"):
        AgentCabin(SPEC)


def test_what_it_emits_is_registered(serve: Any) -> None:
    from cabins.warehouse.registry import WAREHOUSE

    known = {e.kind: set(e.fields) for e in WAREHOUSE.events}
    script = TurnScript(
        plans=[PLAN],
        revisions=[plan(("s1", "", ()), ("s2b", "", ("s1",)), status={"s1": "done"})],
        steps={"s2": [FakeReply.calls(("read_from_scratchpad", '{"key": 1}'))] * 9},
    )
    server = serve(script)
    rig = Rig(server, settings=AgentCabin.Settings(step_iterations=2))
    rig.board.write("goal:g", "do it")
    rig.run(20)
    server._script = [FakeReply(status=401)]  # the next turn fails at once
    rig.board.write("goal:g", "again")
    rig.run(20)
    emitted = [e for e in rig.log.query(0.0, 1e9, limit=None) if "agent" in e.tags]
    kinds = {e.kind for e in emitted}
    assert {"agent_step", "agent_turn", "replan", "alarm"} <= kinds
    assert {e.kind: sorted(set(e.data) - known[e.kind]) for e in emitted} == {k: [] for k in kinds}
