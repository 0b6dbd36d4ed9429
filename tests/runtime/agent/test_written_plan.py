"""A plan as a model writes it: checked JSON in, every problem named for the model; a revision
adopted through ``Plan.adjust_plan``. Properties (hypothesis): a revision that is accepted
never loses or changes a done step, and an agent turn never runs a step whose dependencies
are not done, whatever plans, failures and revisions its model writes."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cabins.llm import ChatReply, ScriptedClient
from runtime import SimClock, Tool, ToolArgs, configure_logging
from runtime.agent.plan import Plan, PlanError, PlanStep
from runtime.agent.turn import Agent
from runtime.agent.turn_state import TurnResult, TurnSettings
from runtime.agent.written_plan import PlanRules, plan_json, read_plan, read_revision
from runtime.freeze import FrozenDict
from tests.support.turn_script import chat_reply, current_step, plan, role_of

RULES = PlanRules(min_steps=3, max_steps=8, tools=frozenset({"fetch", "save"}))


def written(*steps: tuple[str, str, Sequence[str]], **status: str) -> str:
    return json.dumps(plan(*steps, status=status or None))


# -- reading a plan -----------------------------------------------------------------------------


def test_a_good_plan_is_read_with_its_checks_and_tools() -> None:
    text = written(("a", "fetch", ()), ("b", "", ("a",)), ("c", "save", ("a", "b")))
    read = read_plan(text, RULES)
    assert read.ids == ("a", "b", "c") and read.revision == 0
    assert read.step("a").action == "fetch" and read.step("b").action == ""
    assert read.step("c").data["verify"] == "c is done" and read.can_run("a")
    assert read_plan(f"```json\n{text}\n```", RULES) == read  # one fenced block is JSON


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "the reply is empty"),
        ("Sure! Here is the plan.", "the reply is not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"steps": [], "goal": "x"}', "unknown keys ['goal']"),
        (written(("a", "", ()), ("b", "", ())), "the plan has 2 steps; write 3 to 8"),
        (written(*((f"s{i}", "", ()) for i in range(9))), "the plan has 9 steps"),
        (written(("a", "drive", ()), ("b", "", ()), ("c", "", ())), "no tool 'drive'"),
        (written(("a", "", ("z",)), ("b", "", ()), ("c", "", ())), "unknown step(s) 'z'"),
        (written(("a", "", ("b",)), ("b", "", ("a",)), ("c", "", ())), "the plan has a cycle"),
        (written(("a", "", ()), ("a", "", ()), ("c", "", ())), "duplicate step id 'a'"),
        (written(("a", "", ("a",)), ("b", "", ()), ("c", "", ())), "depends on itself"),
        (written(("a", "", ()), ("b", "", ()), ("c", "", ()), a="done"), "status 'done'"),
    ],
)
def test_a_malformed_plan_is_refused_saying_what_is_wrong(text: str, said: str) -> None:
    with pytest.raises(PlanError) as caught:
        read_plan(text, RULES)
    assert said in str(caught.value)


def test_every_problem_of_a_plan_is_named_at_once() -> None:
    text = json.dumps(
        {"steps": [{"id": "a"}, {"id": "b", "description": "x", "verify": ""}, "c", {"x": 1}]}
    )
    with pytest.raises(PlanError) as caught:
        read_plan(text, RULES)
    said = str(caught.value)
    for part in (
        "step 'a' needs a non-empty string 'description'",
        "step 'a' needs a non-empty string 'verify' (how to tell the step is done)",
        "step 'b' needs a non-empty string 'verify'",
        "step 3 is a string, not an object",
        "step 4 has unknown keys ['x']",
    ):
        assert part in said


# -- reading a revision -------------------------------------------------------------------------


def started() -> Plan:
    first = read_plan(written(("a", "fetch", ()), ("b", "", ("a",)), ("c", "", ("b",))), RULES)
    return first.with_status("a", "running").with_status("a", "done").with_status("b", "failed")


def test_a_revision_keeps_done_steps_and_replaces_a_failed_one() -> None:
    text = written(("a", "fetch", ()), ("b2", "", ("a",)), ("c", "", ("b2",)), a="done")
    revised = read_revision(started(), text, RULES)
    assert revised.revision == 1 and revised.step("a") == started().step("a")
    assert revised.ids == ("a", "b2", "c") and revised.can_run("b2")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (written(("b2", "", ()), ("c", "", ("b2",))), "cannot drop step 'a'"),
        (written(("a", "save", ()), ("b2", "", ("a",)), a="done"), "cannot change step 'a'"),
        (written(("a", "fetch", ()), ("b", "", ("a",)), a="done", b="failed"), "still failed"),
        (
            written(("a", "fetch", ()), ("n", "", ("a",)), ("c", "", ()), a="done", n="done"),
            "as done",
        ),
        (written(("a", "fetch", ()), a="done"), "leaves 0 steps to do"),
        (written(("a", "fetch", ()), ("x", "", ("y",)), ("y", "", ("x",)), a="done"), "cycle"),
    ],
)
def test_a_revision_that_loses_work_or_cannot_go_on_is_refused(text: str, said: str) -> None:
    with pytest.raises(PlanError) as caught:
        read_revision(started(), text, RULES)
    assert said in str(caught.value)


def test_the_plan_shown_to_the_model_reads_back_as_the_same_plan() -> None:
    plan_ = started()
    shown = json.loads(plan_json(plan_, {"a": "42"}))
    assert shown["steps"][0] == {
        "id": "a",
        "description": "do a",
        "tool": "fetch",
        "verify": "a is done",
        "depends_on": [],
        "status": "done",
        "result": "42",
    }
    for step in shown["steps"]:  # the failed step tried again: the rest comes back as it was
        step["status"] = "pending" if step["status"] == "failed" else step["status"]
    again = read_revision(plan_, json.dumps(shown), RULES)
    assert [s for s in again.steps if s.id != "b"] == [s for s in plan_.steps if s.id != "b"]


# -- property: a revision never loses done steps -----------------------------------------------


@st.composite
def plans_under_way(draw: st.DrawFn) -> Plan:
    """A plan of 3 to 8 steps (dependencies on earlier steps) part-way through: some steps
    done (their dependencies done), some failed, the rest pending."""
    n = draw(st.integers(3, 8))
    steps: list[PlanStep] = []
    for i in range(n):
        deps = draw(st.lists(st.sampled_from([s.id for s in steps]), unique=True)) if steps else []
        steps.append(
            PlanStep(
                f"s{i}",
                f"do s{i}",
                draw(st.sampled_from(["", "fetch"])),
                depends_on=tuple(deps),
                data=FrozenDict({"verify": f"s{i} is done"}),
            )
        )
    current = Plan(tuple(steps))
    for step in steps:
        if current.can_run(step.id):
            status = draw(st.sampled_from(["done", "failed", "pending", "pending"]))
            if status != "pending":
                current = current.with_status(step.id, "running").with_status(step.id, status)
    return current


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(plans_under_way(), st.data())
def test_an_accepted_revision_never_loses_or_changes_a_done_step(
    before: Plan, data: st.DataObject
) -> None:
    shown = json.loads(plan_json(before))["steps"]
    out: list[dict[str, Any]] = []
    for step in shown:
        change = data.draw(st.sampled_from(["keep", "keep", "drop", "describe", "status", "deps"]))
        if change == "drop":
            continue
        if change == "describe":
            step["description"] += " again"
        elif change == "status":
            step["status"] = data.draw(st.sampled_from(["done", "pending", "failed", "running"]))
        elif change == "deps":
            step["depends_on"] = data.draw(st.lists(st.sampled_from([s["id"] for s in shown])))
        if step["status"] == "failed" and data.draw(st.booleans()):
            step["status"] = "pending"
        out.append(step)
    for i in range(data.draw(st.integers(0, 2))):
        out.append({"id": f"new{i}", "description": "more", "verify": "it is", "depends_on": []})
    old_done = {s.id: s for s in before.steps if s.status == "done"}
    try:
        after = read_revision(before, json.dumps({"steps": out}), RULES)
    except PlanError:
        return
    assert after.revision == before.revision + 1
    for step_id, step in old_done.items():
        assert after.step(step_id) == step  # there, and exactly as it was
    assert {s.id for s in after.steps if s.status == "done"} == set(old_done)
    assert not [s for s in after.steps if s.status in ("failed", "running")]
    assert after.runnable()


# -- property: a turn never runs a step before its dependencies --------------------------------


class NoteArgs(ToolArgs):
    key: str


def work(args: NoteArgs) -> dict[str, Any]:
    return {"success": not args.key.startswith("fail"), "key": args.key}


class RandomPlanner:
    """A model that writes ``first`` as its plan, fails each step of ``fails`` the first time
    it runs, and revises as ``data`` draws: tries the failed step again, replaces it, or
    first tries to change a done step (which must be refused)."""

    def __init__(self, first: dict[str, Any], fails: set[str], data: st.DataObject) -> None:
        self.first, self.fails, self.data = first, set(fails), data
        self.ran: set[str] = set()

    def __call__(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any]) -> ChatReply:
        request = {"messages": list(messages), "tools": list(tools)}
        role = role_of(request)
        if role == "plan":
            return ChatReply.text(json.dumps(self.first))
        if role == "revise":
            return ChatReply.text(json.dumps(self.revise(messages)))
        if role == "answer":
            return ChatReply.text("done")
        step, made, _ = current_step(messages)
        if made == 0 and step in self.fails and step not in self.ran:
            self.ran.add(step)
            return chat_reply_call("work", {"key": f"fail-{step}"})
        self.ran.add(step)
        return ChatReply.text(f"{step} ok")

    def revise(self, messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        asked = str(messages[1]["content"])
        shown = json.loads(asked.split("Plan: ", 1)[1].split("\nFeedback:", 1)[0])["steps"]
        done = [s for s in shown if s["status"] == "done"]
        if len(messages) == 2 and done and self.data.draw(st.booleans(), label="sabotage"):
            done[0]["description"] += " (rewritten)"  # a done step changed: refused
        strategy = self.data.draw(st.sampled_from(["retry", "replace"]), label="strategy")
        out = []
        for step in shown:
            step.pop("result", None)
            if step["status"] == "failed":
                if strategy == "replace":
                    renamed = f"{step['id']}r"
                    for other in shown:
                        other["depends_on"] = [
                            renamed if d == step["id"] else d for d in other["depends_on"]
                        ]
                    step["id"] = renamed
                step["status"] = "pending"
            out.append(step)
        return {"steps": out}


def chat_reply_call(name: str, args: Mapping[str, Any]) -> ChatReply:
    from cabins.fake_llm import FakeReply

    return chat_reply(FakeReply.calls((name, dict(args))))


def check_turn(result: TurnResult) -> None:
    """Every revision keeps the steps done before it, and every step ran with its
    dependencies done."""
    runs = list(result.steps_run)
    done: set[str] = set()
    for k, current in enumerate(result.revisions):
        if k:
            previous = result.revisions[k - 1]
            for step_id in done:
                kept = current.step(step_id)
                assert kept == replace(previous.step(step_id), status="done")
        assert {s.id for s in current.steps if s.status == "done"} == done
        for run in [r for r in runs if r.revision == current.revision]:
            waiting = [d for d in current.step(run.step).depends_on if d not in done]
            assert not waiting, f"{run.step} ran before {waiting} were done"
            if run.status == "done":
                done.add(run.step)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(3, 6), st.data())
def test_a_turn_never_runs_a_step_before_its_dependencies_and_keeps_done_steps(
    n: int, data: st.DataObject
) -> None:
    configure_logging(level="critical")
    steps = []
    for i in range(n):
        earlier = [f"s{j}" for j in range(i)]
        deps = data.draw(st.lists(st.sampled_from(earlier), unique=True)) if earlier else []
        steps.append((f"s{i}", "work", deps))
    fails = set(data.draw(st.lists(st.sampled_from([s[0] for s in steps]), unique=True)))
    listed = data.draw(st.permutations(steps))  # plan order is not the dependency order
    model = RandomPlanner(plan(*listed), fails, data)
    tool = Tool("work", "Do some work.", NoteArgs, work)
    agent = Agent(
        ScriptedClient([model], repeat_last=True),
        tools=[tool],
        clock=SimClock(),
        settings=TurnSettings(replans=8, step_budget=200),
    )
    result = agent.run("Do the work")
    assert result.outcome == "answer", result.detail
    check_turn(result)
    assert len([r for r in result.steps_run if r.status == "failed"]) == len(fails)
