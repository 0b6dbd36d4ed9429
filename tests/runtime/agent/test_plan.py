"""Tests for runtime.agent.plan: the plan DAG, its validation, re-planning and the triggers."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.agent.plan import (
    Plan,
    PlanError,
    PlanStep,
    RepeatWatch,
    ReplanTrigger,
    failed_step,
    overdue_step,
)
from runtime.freeze import FrozenDict


def chain(*ids: str) -> Plan:
    """Steps each depending on the one before."""
    steps = [PlanStep(ids[0])]
    steps += [PlanStep(b, depends_on=(a,)) for a, b in itertools.pairwise(ids)]
    return Plan(tuple(steps))


# -- validation -----------------------------------------------------------------------


def test_duplicate_ids_are_refused_by_name() -> None:
    with pytest.raises(PlanError, match="duplicate step id 'a'"):
        Plan((PlanStep("a"), PlanStep("a")))


def test_unknown_dependency_is_refused_naming_both_steps() -> None:
    with pytest.raises(PlanError, match=r"step 'b' depends on unknown step\(s\) 'x'"):
        Plan((PlanStep("a"), PlanStep("b", depends_on=("x",))))


def test_a_cycle_is_refused_and_shown() -> None:
    steps = (
        PlanStep("a", depends_on=("c",)),
        PlanStep("b", depends_on=("a",)),
        PlanStep("c", depends_on=("b",)),
        PlanStep("d"),
    )
    with pytest.raises(PlanError, match="cycle") as info:
        Plan(steps)
    # shown in execution order (b runs after a, c after b, a after c), from any step
    shown = str(info.value).split(": ", 1)[1]
    assert shown in ("a -> b -> c -> a", "b -> c -> a -> b", "c -> a -> b -> c")


def test_self_dependency_is_refused() -> None:
    with pytest.raises(PlanError, match="depends on itself"):
        PlanStep("a", depends_on=("a",))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"id": ""}, "non-empty"),
        ({"id": "a", "status": "paused"}, "status must be one of"),
        ({"id": "a", "attempts": -1}, "attempts"),
        ({"id": "a", "depends_on": "b"}, "sequence of step ids"),
        ({"id": "a", "target": 3}, "target"),
        ({"id": "a", "started_at": float("nan")}, "started_at"),
        ({"id": "a", "data": {"x": object()}}, "cannot freeze"),
    ],
)
def test_bad_steps_say_what_is_wrong(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(PlanError, match=match):
        PlanStep(**kwargs)  # type: ignore[arg-type]


def test_done_step_with_an_unfinished_dependency_is_refused() -> None:
    with pytest.raises(PlanError, match=r"'b' is done but its dependencies 'a' \(pending\)"):
        Plan((PlanStep("a"), PlanStep("b", depends_on=("a",), status="done")))


def test_step_data_is_frozen() -> None:
    step = PlanStep("a", data={"xy": [1.0, 2.0]})
    assert isinstance(step.data, FrozenDict)
    assert step.data["xy"] == (1.0, 2.0)


# -- running ----------------------------------------------------------------------------


def test_next_runnable_follows_dependencies() -> None:
    plan = chain("a", "b", "c")
    assert plan.next_runnable() == plan.step("a")
    plan = plan.with_status("a", "running", started_at=3)
    assert plan.current == plan.step("a")
    assert plan.next_runnable() is None
    plan = plan.with_status("a", "done")
    assert plan.next_runnable() == plan.step("b")
    assert not plan.is_done
    plan = plan.with_status("b", "done").with_status("c", "done")
    assert plan.is_done
    assert plan.revision == 0  # progress is not a re-plan


def test_a_step_cannot_start_before_its_dependencies() -> None:
    with pytest.raises(PlanError, match="'b' is running but its dependencies 'a'"):
        chain("a", "b").with_status("b", "running")


def test_done_is_final() -> None:
    plan = chain("a").with_status("a", "done")
    assert plan.with_status("a", "done") is plan
    with pytest.raises(PlanError, match="'a' is done"):
        plan.with_status("a", "pending")


def test_with_status_refuses_structural_changes() -> None:
    with pytest.raises(PlanError, match="cannot change depends_on"):
        chain("a", "b").with_status("b", "pending", depends_on=())


def test_unknown_step_is_named() -> None:
    with pytest.raises(PlanError, match="no step 'zz'"):
        chain("a").can_run("zz")


def test_data_round_trip() -> None:
    plan = chain("a", "b").with_status("a", "done", attempts=2)
    plan = plan.adjust_plan(
        (
            *plan.steps,
            PlanStep("c", action="go_to", target="dock", depends_on=("b",), data={"xy": (1, 2)}),
        )
    )
    again = Plan.from_data(plan.to_data())
    assert again == plan
    assert again.revision == 1


def test_from_data_names_unknown_keys() -> None:
    with pytest.raises(PlanError, match="unknown key"):
        Plan.from_data({"revision": 0, "steps": ({"id": "a", "colour": "red"},)})


# -- adjust_plan -----------------------------------------------------------------------


def test_adjust_plan_keeps_done_steps_and_replaces_failed_ones() -> None:
    plan = chain("a", "b", "c").with_status("a", "done").with_status("b", "running")
    plan = plan.with_status("b", "failed")
    new = plan.adjust_plan(
        (plan.step("a"), PlanStep("b2", depends_on=("a",)), PlanStep("c", depends_on=("b2",)))
    )
    assert new.revision == 1
    assert new.step("a") == plan.step("a")
    assert new.next_runnable() == new.step("b2")


def test_adjust_plan_refuses_to_drop_or_change_done_or_running_steps() -> None:
    plan = chain("a", "b", "c").with_status("a", "done").with_status("b", "running")
    with pytest.raises(PlanError, match="cannot drop step 'a': it is done"):
        plan.adjust_plan((PlanStep("b"), PlanStep("c")))
    with pytest.raises(PlanError, match=r"cannot change step 'a'.*description"):
        plan.adjust_plan((PlanStep("a", "new", status="done"), *plan.steps[1:]))
    with pytest.raises(PlanError, match="cannot drop step 'b': it is running"):
        plan.adjust_plan((plan.step("a"), PlanStep("c", depends_on=("a",))))
    with pytest.raises(PlanError, match="new steps start pending"):
        plan.adjust_plan((*plan.steps, PlanStep("d", depends_on=("a",), status="done")))
    side = plan.adjust_plan((*plan.steps, PlanStep("x", depends_on=("a",))))
    with pytest.raises(PlanError, match=r"make step 'x' running.*use with_status"):
        side.adjust_plan((*plan.steps, PlanStep("x", depends_on=("a",), status="running")))


# -- triggers --------------------------------------------------------------------------


def test_failed_step_trigger() -> None:
    plan = chain("a", "b")
    assert failed_step(plan) is None
    plan = plan.with_status("a", "failed")
    assert failed_step(plan) == ReplanTrigger("step_failed", "a")


def test_overdue_step_trigger_uses_the_steps_limit() -> None:
    plan = chain("a", "b").with_status("a", "running", started_at=10)
    assert overdue_step(plan, 15, limit=5) is None
    trigger = overdue_step(plan, 16, limit=5)
    assert trigger is not None and (trigger.reason, trigger.step) == ("step_timeout", "a")
    assert overdue_step(plan, 16, limit=lambda s: 100.0) is None


def test_repeat_watch_fires_on_the_same_action_twice_without_progress() -> None:
    watch = RepeatWatch()
    assert not watch.observe(("pick", "dock"), 0)
    assert watch.observe(("pick", "dock"), 0)
    assert not watch.observe(("pick", "dock"), 0)  # counting starts afresh after firing
    assert not watch.observe(("pick", "dock"), 1)  # progress was made in between
    assert not watch.observe(("drop", "dock"), 1)  # another action
    assert watch.observe(("drop", "dock"), 1)
    with pytest.raises(ValueError, match="repeats"):
        RepeatWatch(repeats=1)


# -- properties ------------------------------------------------------------------------


@st.composite
def dags(draw: st.DrawFn, *, max_steps: int = 8) -> Plan:
    """A valid plan: a random DAG (edges only to earlier steps), shuffled, with statuses
    reached through legal with_status transitions."""
    n = draw(st.integers(1, max_steps))
    ids = [f"s{i}" for i in range(n)]
    deps = [tuple(draw(st.sets(st.sampled_from(ids[:i]))) if i else ()) for i in range(n)]
    order = draw(st.permutations(range(n)))
    plan = Plan(tuple(PlanStep(ids[i], depends_on=tuple(sorted(deps[i]))) for i in order))
    for _ in range(draw(st.integers(0, 2 * n))):
        runnable = [s.id for s in plan if plan.can_run(s.id)]
        running = [s.id for s in plan if s.status == "running"]
        choices = (
            [(i, "running") for i in runnable]
            + [(i, "done") for i in running]
            + [(i, "failed") for i in running]
        )
        if not choices:
            break
        step_id, status = draw(st.sampled_from(choices))
        plan = plan.with_status(step_id, status)  # type: ignore[arg-type]
    return plan


@given(dags())
def test_can_run_exactly_when_pending_and_every_dependency_done(plan: Plan) -> None:
    for step in plan:
        expected = step.status == "pending" and all(
            plan.step(d).status == "done" for d in step.depends_on
        )
        assert plan.can_run(step.id) is expected


@given(plan=dags(), data=st.data())
def test_adjust_plan_never_changes_a_done_step(plan: Plan, data: st.DataObject) -> None:
    new_steps: list[PlanStep] = []
    for step in plan:
        action = data.draw(st.sampled_from(["keep", "drop", "describe", "reset", "finish"]))
        if action == "keep":
            new_steps.append(step)
        elif action == "describe":
            new_steps.append(
                PlanStep(step.id, "changed", step.action, step.target, step.depends_on, step.status)
            )
        elif action == "reset":
            new_steps.append(PlanStep(step.id, depends_on=step.depends_on))
        elif action == "finish":
            new_steps.append(PlanStep(step.id, depends_on=step.depends_on, status="done"))
    if data.draw(st.booleans()):
        new_steps.append(PlanStep("extra", depends_on=tuple(s.id for s in new_steps[:1])))
    try:
        adjusted = plan.adjust_plan(new_steps)
    except PlanError:
        return
    assert adjusted.revision == plan.revision + 1
    for step in plan:
        if step.status == "done":
            assert adjusted.step(step.id) == step
    done_before = {s.id for s in plan if s.status == "done"}
    assert {s.id for s in adjusted if s.status == "done"} == done_before


@given(plan=dags(), data=st.data())
def test_adjust_plan_refuses_every_change_to_a_done_step(plan: Plan, data: st.DataObject) -> None:
    done = [s for s in plan if s.status == "done"]
    if not done:
        return
    victim = data.draw(st.sampled_from(done))
    how = data.draw(st.sampled_from(["drop", "describe", "attempts"]))
    new_steps: list[PlanStep] = []
    for step in plan:
        if step.id != victim.id:
            new_steps.append(step)
        elif how == "describe":
            new_steps.append(
                PlanStep(
                    step.id,
                    step.description + "!",
                    step.action,
                    step.target,
                    step.depends_on,
                    step.status,
                )
            )
        elif how == "attempts":
            new_steps.append(
                PlanStep(
                    step.id,
                    step.description,
                    step.action,
                    step.target,
                    step.depends_on,
                    step.status,
                    step.attempts + 1,
                )
            )
    with pytest.raises(PlanError, match=repr(victim.id)):
        plan.adjust_plan(new_steps)


@given(n=st.integers(2, 9), data=st.data())
def test_validation_rejects_every_cycle(n: int, data: st.DataObject) -> None:
    ids = [f"s{i}" for i in range(n)]
    deps: dict[str, set[str]] = {i: set() for i in ids}
    for i, step_id in enumerate(ids):  # an acyclic background: edges to earlier steps
        deps[step_id] |= data.draw(st.sets(st.sampled_from(ids[:i]))) if i else set()
    ring = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=n, unique=True))
    for a, b in zip(ring, ring[1:] + ring[:1], strict=True):
        if a != b:
            deps[a].add(b)
    if len(ring) == 1:  # a one-step cycle is a self-dependency, refused by the step
        with pytest.raises(PlanError, match="depends on itself"):
            PlanStep(ring[0], depends_on=(*deps[ring[0]], ring[0]))
        return
    order = data.draw(st.permutations(ids))
    with pytest.raises(PlanError, match="cycle"):
        Plan(tuple(PlanStep(i, depends_on=tuple(sorted(deps[i]))) for i in order))


@given(n=st.integers(1, 9), data=st.data())
def test_validation_accepts_every_acyclic_graph(n: int, data: st.DataObject) -> None:
    ids = [f"s{i}" for i in range(n)]
    order = data.draw(st.permutations(ids))
    steps = tuple(
        PlanStep(
            i, depends_on=tuple(sorted(data.draw(st.sets(st.sampled_from(ids[:k])))) if k else ())
        )
        for k, i in enumerate(ids)
    )
    by_id = {s.id: s for s in steps}
    plan = Plan(tuple(by_id[i] for i in order))
    assert set(plan.ids) == set(ids)
