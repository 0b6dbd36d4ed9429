"""The agent turn end to end, through the real ``openai`` client against the scripted
OpenAI-compatible server on 127.0.0.1 (``cabins.fake_llm``), on a simulated clock (a wait
for a retry moves the clock, nothing sleeps): recall into the prompt, a plan the model
writes, a failing step, a re-plan the model writes that keeps the done steps, the answer and
the remembered summary; and each way a turn ends, each with its own outcome."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from cabins.fake_llm import FakeLLMServer, FakeReply
from runtime import LongTermMemory, SimClock, Tool, ToolArgs, configure_logging
from runtime.agent.turn import Agent
from runtime.agent.turn_state import TURN_OUTCOMES, TurnSettings
from tests.support.fake_model import openai_client
from tests.support.turn_script import TurnScript, plan

pytest.importorskip("openai")

DATA = {"revenue": 120, "cost": 70}
USER = {"user": "u1"}
THREE = plan(("s1", "fetch", ()), ("s2", "fetch", ("s1",)), ("s3", "", ("s2",)))


class FetchArgs(ToolArgs):
    key: str = Field(description="what to fetch")


def fetch(args: FetchArgs) -> dict[str, Any]:
    if args.key not in DATA:
        return {"success": False, "error": f"no {args.key!r}; known: {sorted(DATA)}"}
    return {"success": True, "value": DATA[args.key]}


FETCH = Tool("fetch", "Fetch a figure by key.", FetchArgs, fetch)


@pytest.fixture(autouse=True)
def _quiet() -> None:
    configure_logging(level="critical")


def agent_on(server: FakeLLMServer, **kwargs: Any) -> Agent:
    client = openai_client(server)
    kwargs.setdefault("tools", [FETCH])
    kwargs.setdefault("clock", SimClock())
    return Agent(client, **kwargs)


def call(name: str, **args: Any) -> FakeReply:
    return FakeReply.calls((name, args))


# -- the whole turn ---------------------------------------------------------------------------


def test_a_turn_plans_fails_a_step_replans_keeping_done_steps_answers_and_remembers(
    serve: Any,
) -> None:
    revision = plan(
        ("s1", "fetch", ()),
        ("s2b", "fetch", ("s1",)),
        ("s3", "", ("s2b",)),
        status={"s1": "done"},
    )
    script = TurnScript(
        plans=[THREE],
        revisions=[revision],
        steps={
            "s1": [call("fetch", key="revenue"), "revenue is 120"],
            "s2": [call("fetch", key="profit")],  # no such key: the tool says success false
            "s2b": [call("fetch", key="cost"), "cost is 70"],
            "s3": ["margin is 50"],
        },
        answer="Revenue 120, cost 70, margin 50.",
    )
    server = serve(script)
    memory = LongTermMemory(":memory:")
    memory.remember("u1 reads figures in dollars", scope=USER)
    memory.remember("u2 likes euros", scope={"user": "u2"})
    result = agent_on(server, memory=memory, scope=USER).run("Work out the margin")

    assert result.outcome == "answer" and result.answer == "Revenue 120, cost 70, margin 50."
    assert result.step_states() == {"s1": "done", "s2b": "done", "s3": "done"}
    assert [(r.step, r.status, r.reason) for r in result.steps_run] == [
        ("s1", "done", ""),
        ("s2", "failed", "tool_failed"),
        ("s2b", "done", ""),
        ("s3", "done", ""),
    ]
    first, revised = result.revisions
    assert revised.revision == 1 and revised.step("s1") == replace(first.step("s1"), status="done")
    assert result.results["s1"] == "revenue is 120" and result.results["s2b"] == "cost is 70"
    assert result.calls == len(server.requests) == 1 + 2 + 1 + 1 + 2 + 1 + 1
    # the scoped recall is in every system prompt; the other user's memory in none
    systems = [r["messages"][0]["content"] for r in server.requests]
    assert all("u1 reads figures in dollars" in s for s in systems)
    assert not any("u2 likes euros" in s for s in systems)
    # the model wrote the revision, shown the plan with its states, s1's result and why
    (asked,) = [r for r in server.requests if "\nFeedback:" in str(r["messages"][1]["content"])]
    shown = json.loads(asked["messages"][1]["content"].split("Plan: ")[1].split("\nFeedback:")[0])
    assert [(s["id"], s["status"]) for s in shown["steps"]] == [
        ("s1", "done"),
        ("s2", "failed"),
        ("s3", "pending"),
    ]
    assert shown["steps"][0]["result"] == "revenue is 120"
    assert "step s2 failed (tool_failed)" in asked["messages"][1]["content"]
    # the summary is remembered in the scope, and recalled by the next turn
    assert result.remembered is not None and result.remembered.stored is True
    assert "Answer: Revenue 120, cost 70, margin 50." in result.remembered.content
    found = memory.recall("the margin", scope=USER, k=5)
    assert any(r.content == result.remembered.content for r in found)


def test_the_scratchpad_carries_results_between_steps_and_is_shown_each_request(
    serve: Any,
) -> None:
    script = TurnScript(
        plans=[THREE],
        steps={
            "s1": [call("save_to_scratchpad", key="revenue", value=120), "saved"],
            "s2": [call("read_from_scratchpad", key="revenue"), "read"],
        },
    )
    server = serve(script)
    result = agent_on(server).run("Keep a figure")
    assert result.outcome == "answer"
    s2_request = next(
        r for r in server.requests if "Current step s2" in json.dumps(r["messages"][-1])
    )
    assert "- revenue: 120" in s2_request["messages"][0]["content"]
    tool_results = [m for m in server.requests[-2]["messages"] if m["role"] == "tool"]
    assert any('"value":120' in m["content"] for m in tool_results)


def test_a_revision_that_changes_a_done_step_is_shown_back_and_the_next_one_is_adopted(
    serve: Any,
) -> None:
    bad = plan(("s1", "save_to_scratchpad", ()), ("s2b", "fetch", ("s1",)), status={"s1": "done"})
    good = plan(("s1", "fetch", ()), ("s2b", "fetch", ("s1",)), status={"s1": "done"})
    script = TurnScript(
        plans=[THREE],
        revisions=[bad, good],
        steps={"s1": ["one"], "s2": [call("fetch", key="nothing")]},
    )
    server = serve(script)
    result = agent_on(server).run("Do it")
    assert result.outcome == "answer" and result.step_states() == {"s1": "done", "s2b": "done"}
    retry = [r for r in server.requests if "\nFeedback:" in str(r["messages"][1]["content"])][-1]
    said = retry["messages"][-1]["content"]
    assert "The plan was not accepted" in said and "cannot change step 's1'" in said


def test_a_malformed_plan_is_shown_back_and_a_good_one_is_adopted(serve: Any) -> None:
    script = TurnScript(plans=["here is my plan: do it", {"steps": []}, THREE])
    server = serve(script)
    result = agent_on(server).run("Do it")
    assert result.outcome == "answer" and len(result.revisions) == 1
    planning = [r for r in server.requests if "planner" in r["messages"][0]["content"][:30]]
    assert len(planning) == 3
    said = [m["content"] for m in planning[2]["messages"] if m["role"] == "user"]
    assert "the reply is not JSON" in said[1] and "'steps' must be a non-empty list" in said[2]


# -- each ending ------------------------------------------------------------------------------


def test_a_plan_still_malformed_after_its_attempts_ends_the_turn(serve: Any) -> None:
    too_small = plan(("s1", "", ()))
    server = serve(TurnScript(plans=["not json", too_small, {"steps": "x"}]))
    result = agent_on(server, settings=TurnSettings(plan_attempts=3)).run("Do it")
    assert result.outcome == "malformed_plan" and result.calls == len(server.requests) == 3
    assert "no acceptable plan in 3 replies" in result.detail
    assert result.plan is None and result.remembered is None


def test_a_refusal_ends_the_turn_with_the_models_text(serve: Any) -> None:
    script = TurnScript(
        plans=[THREE], steps={"s1": [FakeReply(content=None, refusal="I cannot fetch that.")]}
    )
    server = serve(script)
    memory = LongTermMemory(":memory:")
    result = agent_on(server, memory=memory, scope=USER).run("Do it")
    assert result.outcome == "refusal" and result.refusal == "I cannot fetch that."
    assert result.answer is None and result.remembered is None
    assert memory.count(scope=USER) == 0  # nothing is remembered of a turn that did not end
    assert result.step_states()["s1"] == "running"


def test_a_permanent_error_ends_the_turn_after_one_request(serve: Any) -> None:
    server = serve(FakeReply(status=401))
    clock = SimClock()
    result = agent_on(server, clock=clock).run("Do it")
    assert result.outcome == "permanent_error" and len(server.requests) == 1
    assert result.error is not None and result.error["status"] == 401
    assert result.error["permanent"] is True and "HTTP 401" in result.detail
    assert clock.now() == 0.0  # no wait: asking again cannot help


def test_a_context_length_error_is_permanent_too(serve: Any) -> None:
    server = serve(FakeReply(status=400, error_code="context_length_exceeded"))
    result = agent_on(server).run("Do it")
    assert result.outcome == "permanent_error" and len(server.requests) == 1
    assert result.error is not None and result.error["code"] == "context_length_exceeded"


def test_the_step_budget_ends_a_turn_whose_model_never_finishes(serve: Any) -> None:
    keys = iter(range(10_000))
    save = [lambda r: call("save_to_scratchpad", key=f"k{next(keys)}", value=1)] * 99
    endless = TurnScript(plans=[THREE], steps={"s1": save})
    server = serve(endless)
    settings = TurnSettings(step_budget=6, step_iterations=50)
    result = agent_on(server, settings=settings).run("Do it")
    assert result.outcome == "budget_spent" and result.calls == len(server.requests) == 6


def test_a_step_over_its_iterations_fails_and_the_model_replans(serve: Any) -> None:
    keys = iter(range(10_000))
    script = TurnScript(
        plans=[THREE],
        revisions=[plan(("s1b", "", ()), ("s2", "", ("s1b",)), ("s3", "", ("s2",)))],
        steps={"s1": [lambda r: call("save_to_scratchpad", key=f"k{next(keys)}", value=1)] * 99},
    )
    server = serve(script)
    result = agent_on(server, settings=TurnSettings(step_iterations=3)).run("Do it")
    assert result.outcome == "answer"
    failed = result.steps_run[0]
    assert (failed.step, failed.reason, failed.iterations) == ("s1", "too_many_iterations", 3)


def test_the_same_action_twice_in_a_row_fails_the_step(serve: Any) -> None:
    script = TurnScript(
        plans=[THREE],
        revisions=[plan(("s1b", "", ()), ("s2", "", ("s1b",)), ("s3", "", ("s2",)))],
        steps={"s1": [call("fetch", key="revenue"), call("fetch", key="revenue")]},
    )
    server = serve(script)
    result = agent_on(server).run("Do it")
    assert result.steps_run[0].reason == "same_action_twice"
    assert result.outcome == "answer" and result.steps_run[1].step == "s1b"


def test_a_step_that_fails_after_the_last_revision_ends_the_turn(serve: Any) -> None:
    script = TurnScript(plans=[THREE], steps={"s1": [call("fetch", key="nothing")]})
    server = serve(script)
    result = agent_on(server, settings=TurnSettings(replans=0)).run("Do it")
    assert result.outcome == "replan_limit" and "step s1 failed (tool_failed)" in result.detail
    assert script.asked["revise"] == 0


def test_a_filtered_reply_ends_the_turn(serve: Any) -> None:
    server = serve(FakeReply(content="", finish_reason="content_filter"))
    result = agent_on(server).run("Do it")
    assert result.outcome == "content_filter" and result.calls == 1


def test_failures_in_a_row_back_off_honour_retry_after_and_end_the_turn(serve: Any) -> None:
    server = serve(
        FakeReply(status=429, headers={"retry-after": "20"}),
        FakeReply(status=503),
        FakeReply(status=500),
    )
    clock = SimClock()
    result = agent_on(server, clock=clock, settings=TurnSettings(failures=4)).run("Do it")
    assert result.outcome == "error" and len(server.requests) == 4
    assert result.error is not None and result.error["status"] == 500
    assert "4 failed requests in a row" in result.detail
    assert clock.now() >= 20.0  # the Retry-After was honoured before the second request


def test_a_turn_waits_on_the_callers_clock_and_goes_on_where_it_stopped(serve: Any) -> None:
    server = serve(FakeReply(status=429, headers={"retry-after": "20"}), TurnScript(plans=[THREE]))
    agent = agent_on(server)
    state = agent.start("Do it", now=0.0)
    agent.advance(state, now=0.0)
    due = state.retry_at
    assert state.waiting and due is not None and due >= 20.0
    agent.advance(state, now=10.0)
    assert len(server.requests) == 1 and state.result is None  # too early: not asked again
    agent.advance(state, now=due)
    assert state.result is not None and state.result.outcome == "answer"
    assert state.result.ended == due and not state.waiting


def test_a_reply_cut_at_the_length_limit_is_not_used_and_the_model_is_asked_again(
    serve: Any,
) -> None:
    replies = iter(
        [FakeReply(content="half a resu", finish_reason="length"), FakeReply("s1 result")]
    )
    script = TurnScript(plans=[THREE], steps={"s1": [lambda r: next(replies)]})
    server = serve(script)
    result = agent_on(server).run("Do it")
    assert result.outcome == "answer" and result.results["s1"] == "s1 result"
    nudged = [m for r in server.requests for m in r["messages"] if "length limit" in str(m)]
    assert nudged


def test_what_is_sent_is_clipped_with_a_visible_marker(serve: Any) -> None:
    script = TurnScript(
        plans=[THREE],
        steps={"s1": [call("save_to_scratchpad", key="big", value="x" * 50_000), "saved"]},
    )
    server = serve(script)
    settings = TurnSettings(note_chars=100, message_chars=200)
    result = agent_on(server, settings=settings).run("Do it")
    assert result.outcome == "answer"
    later = json.dumps(server.requests[-1], ensure_ascii=False)
    assert "…[truncated:" in later and "x" * 300 not in later


def test_every_outcome_is_distinct_and_documented() -> None:
    import runtime.agent.turn_state as module

    assert len(set(TURN_OUTCOMES)) == len(TURN_OUTCOMES) == 9
    source = Path(module.__file__).read_text(encoding="utf-8")
    documented = source.split('"""How a turn ended:', 1)[1].split('"""', 1)[0]
    assert [o for o in TURN_OUTCOMES if f"- ``{o}``" not in documented] == []


def test_a_goal_and_a_scope_are_checked() -> None:
    from runtime.errors import SettingError

    client = TurnScript(plans=[THREE]).in_process()
    with pytest.raises(SettingError, match="needs a goal"):
        Agent(client).start("  ")
    with pytest.raises(SettingError, match="scope must map strings"):
        Agent(client, scope={"user": 1})  # type: ignore[dict-item]
    with pytest.raises(SettingError, match="min_steps"):
        TurnSettings(min_steps=5, max_steps=4)
