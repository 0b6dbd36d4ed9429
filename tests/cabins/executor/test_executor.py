"""The executor cabin on hand-built views: driving, acting at docks, retries, missing items."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from shapely.geometry import Point, box

from cabins.executor import REACTIONS, Executor, ExecutorSettings
from cabins.executor.retry import CONSERVATIVE, NORMAL, RetryChooser, RetryPolicy
from cabins.executor.seen import ViewReader
from cabins.warehouse.values import DEFAULT_LIMITS
from runtime import ContextSpec, Feature, Outbox, load_spec
from runtime.testing import Stale, make_view, run_step
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "executor.toml")
LIMITS = {"radius": 0.35, "max_speed": 1.5, "max_turn_rate": 2.0, "max_accel": 1.0}
ACCEPT = {"dock_tolerance": 0.3, "max_speed": 0.05}
ZONE: dict[str, Any] = {
    "zone": "bay",
    "polygon": ((10.0, -2.0), (14.0, -2.0), (14.0, 2.0), (10.0, 2.0)),
    "max_speed": 0.5,
}
DOCK = (5.0, 0.0)


def step_of(
    action: str,
    target_xy: tuple[float, float] = DOCK,
    *,
    step_id: str | None = None,
    target: str = "inbound",
    status: str = "running",
) -> dict[str, Any]:
    return {
        "id": step_id or f"{action}-1",
        "action": action,
        "target": target,
        "target_xy": target_xy,
        "task": "t1",
        "depends_on": (),
        "status": status,
    }


def plan_of(step: Mapping[str, Any], *, revision: int = 1) -> dict[str, Any]:
    return {"task": "t1", "revision": revision, "current": step["id"], "steps": (step,)}


def board_with(**overrides: Any) -> dict[str, Any]:
    """A robot at the origin facing +x, stopped, told to go to (5, 0) along the x axis."""
    board: dict[str, Any] = {
        "pose": (0.0, 0.0, 0.0),
        "velocity": (0.0, 0.0),
        "plan": plan_of(step_of("go_to")),
        "route": ((0.0, 0.0), DOCK),
        "cargo": None,
        "battery": 0.8,
        "acceptance": ACCEPT,
        "robot:limits": LIMITS,
        "constraint:speed:bay": ZONE,
    }
    for key, value in overrides.items():
        board[key.replace("__", ":")] = value
    return {k: v for k, v in board.items() if v is not _DROP}


_DROP = object()


def tick(
    cabin: Executor,
    board: Mapping[str, Any],
    *,
    tick: int = 0,
    events: Iterable[tuple[str, Any, float]] = (),
    features: Iterable[Feature] = (),
    suppress: Iterable[str] = (),
) -> Outbox:
    view = make_view(
        cabin.spec,
        board=board,
        events=events,
        features=features,
        now=10.0 + tick * 0.05,
        tick=tick,
        suppress=suppress,
    )
    return run_step(cabin, view)


def drive(out: Outbox) -> tuple[float, float]:
    drives = [c for c in out.commands if c.name == "drive"]
    assert len(drives) == 1, out.commands
    return float(drives[0].args["v"]), float(drives[0].args["w"])


def actions(out: Outbox) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, dict(c.args)) for c in out.commands if c.name != "drive"]


def emitted(out: Outbox, kind: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in out.events if e.kind == kind]


def person(x: float, y: float) -> Feature:
    return Feature(
        f"obstacle:p{x}_{y}",
        Point(x, y).buffer(0.3),
        "obstacle",
        frozenset({"moving", "person"}),
        {"kind": "person", "radius": 0.3},
    )


def failure(attempt: int, *, stamp: float = 9.5, final: bool = False) -> tuple[str, Any, float]:
    return (
        "action_failed",
        {
            "action": "pick",
            "task": "t1",
            "step": "pick-1",
            "attempt": attempt,
            "reason": "failed",
            "final": final,
        },
        stamp,
    )


# -- the spec ------------------------------------------------------------------------------


def test_spec_requires_what_the_executor_needs_and_declares_what_it_does() -> None:
    assert {"pose", "plan", "route", "event:action_failed*"} <= set(SPEC.required)
    assert dict(SPEC.on_missing) == {p: r[0] for p, r in REACTIONS.items() if p in SPEC.required}
    assert set(SPEC.on_missing) == set(SPEC.required)
    assert SPEC.map_center == "pose"
    assert {"action_failed", "action_done"} <= set(SPEC.event_kinds)


def test_a_spec_declaring_a_reaction_the_executor_lacks_is_refused() -> None:
    data = SPEC.model_dump()
    data["on_missing"] = {**data["on_missing"], "pose": "alarm:lost"}
    with pytest.raises(ValueError, match=r"'pose' = 'alarm:lost'.*'stop:hold'"):
        Executor(ContextSpec.model_validate(data))
    data["on_missing"] = {"constraint:*": "retry:conservative"}
    with pytest.raises(ValueError, match=r"can do 'slow:speed_limits_unknown' or 'stop:hold'"):
        Executor(ContextSpec.model_validate(data))


def with_reactions(chosen: Mapping[str, str]) -> ContextSpec:
    data = SPEC.model_dump()
    data["on_missing"] = {**data["on_missing"], **chosen}
    return ContextSpec.model_validate(data)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("lookahead", 0.0),
        ("arrive_fraction", 1.5),
        ("charge_until", -1.0),
        ("obstacle_margin", -0.1),
        ("outcome_timeout_ticks", 0),
    ],
)
def test_bad_settings_are_refused_naming_the_setting_and_value(name: str, value: float) -> None:
    with pytest.raises(ValueError, match=rf"{name}: .*, got {value!r}"):
        settings: dict[str, Any] = {name: value}
        Executor(SPEC, ExecutorSettings(**settings))


def test_retry_policies_validate_and_presets_differ() -> None:
    assert CONSERVATIVE.max_attempts < NORMAL.max_attempts
    assert CONSERVATIVE.approach_speed_factor < NORMAL.approach_speed_factor
    assert CONSERVATIVE.backoff_ticks > NORMAL.backoff_ticks
    with pytest.raises(ValueError, match="max_attempts must be an int >= 1, got 0"):
        RetryPolicy("x", max_attempts=0, approach_speed_factor=1.0, backoff_ticks=0)
    with pytest.raises(ValueError, match=r"approach_speed_factor must be in \(0, 1\], got 2"):
        RetryPolicy("x", max_attempts=1, approach_speed_factor=2, backoff_ticks=0)
    assert NORMAL.exhausted(3) and not NORMAL.exhausted(2)


# -- driving -------------------------------------------------------------------------------


def test_pure_pursuit_drives_along_a_straight_route() -> None:
    v, w = drive(tick(Executor(SPEC), board_with()))
    assert 0 < v <= LIMITS["max_speed"]
    assert abs(w) < 1e-6


def test_pure_pursuit_turns_towards_a_bending_route() -> None:
    route = ((0.0, 0.0), (0.3, 0.0), (0.3, 5.0))  # the bend within the lookahead at a crawl
    v, w = drive(
        tick(Executor(SPEC), board_with(route=route, plan=plan_of(step_of("go_to", (0.3, 5.0)))))
    )
    assert v > 0 and w > 0


def test_a_target_behind_is_turned_to_on_the_spot() -> None:
    route = ((0.0, 0.0), (-5.0, 0.0))
    v, w = drive(
        tick(Executor(SPEC), board_with(route=route, plan=plan_of(step_of("go_to", (-5.0, 0.0)))))
    )
    assert v == 0 and abs(w) == LIMITS["max_turn_rate"]


@pytest.mark.parametrize("bad", ["fast", 0.0, -2.0, math.nan, True])
def test_a_limit_that_is_not_a_positive_number_falls_back_to_its_default_alone(bad: Any) -> None:
    route = ((0.0, 0.0), (-5.0, 0.0))
    plan = plan_of(step_of("go_to", (-5.0, 0.0)))
    limits = {**LIMITS, "max_turn_rate": bad}
    v, w = drive(tick(Executor(SPEC), board_with(route=route, plan=plan, robot__limits=limits)))
    assert v == 0 and abs(w) == DEFAULT_LIMITS.max_turn_rate
    limits = {**LIMITS, "max_speed": bad}
    v, w = drive(tick(Executor(SPEC), board_with(route=route, plan=plan, robot__limits=limits)))
    assert abs(w) == LIMITS["max_turn_rate"]  # the other limits are still the board's


def test_the_pose_and_velocity_are_read_by_the_shared_rules() -> None:
    numpy_pose = board_with(pose=np.array([0.0, 0.0, 0.0]), velocity=(np.int64(0), 0.0))
    assert drive(tick(Executor(SPEC), numpy_pose))[0] > 0
    for pose in [(0.0, 0.0), (True, 0.0, 0.0), (0.0, 0.0, math.nan)]:
        assert drive(tick(Executor(SPEC), board_with(pose=pose))) == (0.0, 0.0)


def test_a_target_behind_at_speed_is_braked_for_before_turning() -> None:
    route = ((0.0, 0.0), (-5.0, 0.0))
    board = board_with(
        route=route, velocity=(1.2, 0.0), plan=plan_of(step_of("go_to", (-5.0, 0.0)))
    )
    v, w = drive(tick(Executor(SPEC), board))
    assert v == 0.0 and w > 0  # with nothing in the way it turns while it brakes


def test_at_speed_it_brakes_straight_when_turning_would_bring_it_nearer_a_shelf() -> None:
    route = ((0.0, 0.0), (-5.0, 0.0))
    shelf = Feature("shelf:S", box(-0.5, 0.5, 2.0, 1.0), "shelf")  # on the left, the way
    board = board_with(  # a left turn while braking at 1.2 m/s would sweep into it
        route=route, velocity=(1.2, 0.0), plan=plan_of(step_of("go_to", (-5.0, 0.0)))
    )
    out = tick(Executor(SPEC), board, features=[shelf])
    assert drive(out) == (0.0, 0.0)


coordinate = st.floats(-20, 20, allow_nan=False)


@given(
    pose=st.tuples(coordinate, coordinate, st.floats(-math.pi, math.pi)),
    route=st.lists(st.tuples(coordinate, coordinate), min_size=1, max_size=6),
    speed=st.floats(0, 1.5),
    max_speed=st.floats(0.2, 2.0),
    max_turn=st.floats(0.3, 3.0),
)
def test_commands_stay_within_the_robot_limits(
    pose: tuple[float, float, float],
    route: list[tuple[float, float]],
    speed: float,
    max_speed: float,
    max_turn: float,
) -> None:
    limits = {**LIMITS, "max_speed": max_speed, "max_turn_rate": max_turn}
    out = tick(
        Executor(SPEC),
        board_with(
            pose=pose,
            route=tuple(route),
            velocity=(speed, 0.0),
            robot__limits=limits,
            plan=plan_of(step_of("go_to", route[-1])),
        ),
    )
    v, w = drive(out)
    assert math.isfinite(v) and math.isfinite(w)
    assert 0 <= v <= max_speed + 1e-9
    assert abs(w) <= max_turn + 1e-9


def test_slows_to_the_zone_limit_inside_a_speed_zone() -> None:
    route = ((11.0, 0.0), (20.0, 0.0))
    board = board_with(
        pose=(11.0, 0.0, 0.0),
        velocity=(0.5, 0.0),
        route=route,
        plan=plan_of(step_of("go_to", (20.0, 0.0))),
    )
    v, _ = drive(tick(Executor(SPEC), board))
    assert 0 < v <= ZONE["max_speed"]


def test_slows_before_entering_a_speed_zone_but_not_far_from_it() -> None:
    route = ((0.0, 0.0), (20.0, 0.0))
    plan = plan_of(step_of("go_to", (20.0, 0.0)))
    near = board_with(pose=(9.0, 0.0, 0.0), velocity=(1.2, 0.0), route=route, plan=plan)
    far = board_with(pose=(3.0, 0.0, 0.0), velocity=(1.2, 0.0), route=route, plan=plan)
    assert drive(tick(Executor(SPEC), near))[0] <= ZONE["max_speed"]
    assert drive(tick(Executor(SPEC), far))[0] > ZONE["max_speed"]


def test_stops_for_a_person_on_the_route_ahead() -> None:
    board = board_with(velocity=(0.5, 0.0))
    v, _ = drive(tick(Executor(SPEC), board, features=[person(0.9, 0.0)]))
    assert v == 0


def test_slows_for_a_person_further_along_the_route() -> None:
    board = board_with(
        velocity=(1.0, 0.0),
        route=((0.0, 0.0), (10.0, 0.0)),
        plan=plan_of(step_of("go_to", (10.0, 0.0))),
    )
    clear = drive(tick(Executor(SPEC), board))[0]
    slowed = drive(tick(Executor(SPEC), board, features=[person(2.0, 0.0)]))[0]
    assert 0 < slowed < clear


def test_held_by_a_person_it_faces_turns_on_the_spot_towards_a_route_leading_aside() -> None:
    # It waited facing +x, a person just ahead and to the right; the route now leads off
    # to the left (0.6 rad, not far enough off to turn on the spot for), away from them.
    # Driving would close on them first, so it does not drive; it turns on the spot to
    # face the route, which sweeps no new ground, and facing it, it drives off.
    target = (3.0 * math.cos(0.6), 3.0 * math.sin(0.6))
    aside = ((0.0, 0.0), target)
    board = board_with(route=aside, plan=plan_of(step_of("go_to", target)))
    held = [person(0.31, -0.54)]
    v, w = drive(tick(Executor(SPEC), board, features=held))
    assert v == 0 and w > 0
    facing = board_with(pose=(0.0, 0.0, 0.6), route=aside, plan=plan_of(step_of("go_to", target)))
    assert drive(tick(Executor(SPEC), facing, features=held))[0] > 0
    # with the way straight on into them, nothing turns it: it holds
    assert drive(tick(Executor(SPEC), board_with(), features=[person(0.62, 0.0)])) == (0.0, 0.0)


@pytest.mark.parametrize("where", [(1.5, 1.5), (-0.8, 0.0)], ids=["beside", "behind"])
def test_ignores_a_person_off_the_route_or_behind(where: tuple[float, float]) -> None:
    board = board_with(velocity=(0.5, 0.0))
    assert drive(tick(Executor(SPEC), board, features=[person(*where)]))[0] > 0


def test_the_approach_to_a_dock_is_slower_under_the_conservative_policy() -> None:
    board = board_with(pose=(3.5, 0.0, 0.0), velocity=(1.0, 0.0))
    normal = drive(tick(Executor(SPEC), board))[0]
    slow = drive(tick(Executor(SPEC), board, events=[failure(1)]))[0]
    assert slow <= CONSERVATIVE.approach_speed_factor * LIMITS["max_speed"] + 1e-9
    assert slow < normal


def test_arrival_stops_and_reports_go_to_done_once() -> None:
    cabin = Executor(SPEC)
    board = board_with(pose=(4.9, 0.05, 0.0), velocity=(0.1, 0.0))
    first = tick(cabin, board, tick=0)
    assert drive(first) == (0.0, 0.0)
    assert emitted(first, "action_done") == [
        {"action": "go_to", "task": "t1", "step": "go_to-1", "attempt": 1}
    ]
    again = tick(cabin, board, tick=1)
    assert drive(again) == (0.0, 0.0) and emitted(again, "action_done") == []


def test_a_done_step_the_plan_still_shows_is_reported_again_after_a_while() -> None:
    cabin = Executor(SPEC)
    board = board_with(pose=(4.9, 0.05, 0.0))
    assert len(emitted(tick(cabin, board, tick=0), "action_done")) == 1
    quiet = [emitted(tick(cabin, board, tick=n), "action_done") for n in range(1, 40)]
    assert quiet == [[]] * 39
    assert len(emitted(tick(cabin, board, tick=40), "action_done")) == 1


def test_no_plan_means_hold_without_a_reaction() -> None:
    out = tick(Executor(SPEC), board_with(plan=_DROP))
    assert drive(out) == (0.0, 0.0)
    assert out.reactions == []


# -- acting at a dock ----------------------------------------------------------------------


def at_dock(action: str = "pick", **overrides: Any) -> dict[str, Any]:
    step = step_of(action, step_id=f"{action}-1")
    given: dict[str, Any] = {"pose": (4.95, 0.02, 0.0), "route": (), "plan": plan_of(step)}
    return board_with(**{**given, **overrides})


def test_far_from_the_dock_no_pick_but_an_approach() -> None:
    out = tick(Executor(SPEC), at_dock(pose=(4.0, 0.0, 0.0)))
    assert actions(out) == []
    assert drive(out)[0] > 0


def test_moving_at_the_dock_no_pick_but_braking() -> None:
    out = tick(Executor(SPEC), at_dock(velocity=(0.2, 0.0)))
    assert actions(out) == []
    assert drive(out) == (0.0, 0.0)


def test_at_the_dock_and_stopped_picks_once_then_waits_for_the_outcome() -> None:
    cabin = Executor(SPEC)
    first = tick(cabin, at_dock(), tick=0)
    assert actions(first) == [("pick", {"task": "t1"})]
    assert drive(first) == (0.0, 0.0)
    waiting = tick(cabin, at_dock(), tick=1)
    assert actions(waiting) == [] and waiting.events == []


def test_an_old_outcome_is_not_taken_for_the_answer() -> None:
    cabin = Executor(SPEC)
    old = {"id": 7, "action": "pick", "task": "t1", "ok": True, "reason": "ok", "stamp": 1.0}
    assert actions(tick(cabin, at_dock(action__last=old), tick=0)) == [("pick", {"task": "t1"})]
    assert tick(cabin, at_dock(action__last=old), tick=1).events == []
    new = {**old, "id": 8, "stamp": 10.0}
    out = tick(cabin, at_dock(action__last=new), tick=2)
    assert emitted(out, "action_done") == [
        {"action": "pick", "task": "t1", "step": "pick-1", "attempt": 1}
    ]


def outcome(ident: int, ok: bool, reason: str = "failed", action: str = "pick") -> dict[str, Any]:
    return {
        "id": ident,
        "action": action,
        "task": "t1",
        "ok": ok,
        "reason": "ok" if ok else reason,
        "stamp": 10.0,
    }


def test_an_outcome_that_is_not_well_formed_is_not_taken_for_the_answer() -> None:
    cabin = Executor(SPEC)
    assert actions(tick(cabin, at_dock(), tick=0)) == [("pick", {"task": "t1"})]
    no_stamp = {k: v for k, v in outcome(1, True).items() if k != "stamp"}
    for n, bad in enumerate([no_stamp, {**outcome(1, True), "ok": "yes"}], start=1):
        assert tick(cabin, at_dock(action__last=bad), tick=n).events == []
    out = tick(cabin, at_dock(action__last=outcome(1, True)), tick=3)
    assert [e["step"] for e in emitted(out, "action_done")] == ["pick-1"]


def test_a_failure_is_retried_after_the_back_off_and_is_final_when_attempts_run_out() -> None:
    cabin = Executor(SPEC)
    assert actions(tick(cabin, at_dock(), tick=0)) == [("pick", {"task": "t1"})]
    failed = tick(cabin, at_dock(action__last=outcome(1, False)), tick=1)
    assert actions(failed) == []
    assert emitted(failed, "action_failed") == [
        {
            "action": "pick",
            "task": "t1",
            "step": "pick-1",
            "attempt": 1,
            "reason": "failed",
            "final": False,
        }
    ]
    # From now on the failure is in view: conservative, 20 ticks of back-off.
    seen = [failure(1)]
    for n in (2, 10, 20):
        out = tick(cabin, at_dock(action__last=outcome(1, False)), tick=n, events=seen)
        assert actions(out) == [] and drive(out) == (0.0, 0.0)
        assert cabin.mode == "conservative"
    retry = tick(cabin, at_dock(action__last=outcome(1, False)), tick=21, events=seen)
    assert actions(retry) == [("pick", {"task": "t1"})]
    final = tick(cabin, at_dock(action__last=outcome(2, False)), tick=22, events=seen)
    assert emitted(final, "action_failed") == [
        {
            "action": "pick",
            "task": "t1",
            "step": "pick-1",
            "attempt": 2,
            "reason": "failed",
            "final": True,
        }
    ]
    # Spent: no more tries in this plan revision, a fresh budget in the next one.
    assert actions(tick(cabin, at_dock(action__last=outcome(2, False)), tick=60, events=seen)) == []
    replanned = at_dock(
        action__last=outcome(2, False), plan=plan_of(step_of("pick", step_id="pick-1"), revision=2)
    )
    assert actions(tick(cabin, replanned, tick=61, events=seen)) == [("pick", {"task": "t1"})]


def test_the_normal_policy_gives_three_attempts_without_back_off() -> None:
    cabin = Executor(SPEC, chooser=RetryChooser(conservative=NORMAL))
    finals = []
    for attempt in (1, 2, 3):
        assert actions(tick(cabin, at_dock(), tick=2 * attempt)) == [("pick", {"task": "t1"})]
        out = tick(
            cabin,
            at_dock(action__last=outcome(attempt, False)),
            tick=2 * attempt + 1,
            events=[failure(attempt)],
        )
        (event,) = emitted(out, "action_failed")
        assert event["attempt"] == attempt
        finals.append(event["final"])
    assert finals == [False, False, True]


def test_a_refusal_that_retrying_cannot_fix_is_final_at_once() -> None:
    cabin = Executor(SPEC)
    tick(cabin, at_dock("drop"), tick=0)
    out = tick(cabin, at_dock("drop", action__last=outcome(1, False, "no_cargo", "drop")), tick=1)
    (event,) = emitted(out, "action_failed")
    assert event["reason"] == "no_cargo" and event["final"] is True


def test_no_outcome_in_time_counts_as_a_failed_attempt() -> None:
    cabin = Executor(SPEC, ExecutorSettings(outcome_timeout_ticks=5))
    tick(cabin, at_dock(), tick=0)
    assert tick(cabin, at_dock(), tick=5).events == []
    (event,) = emitted(tick(cabin, at_dock(), tick=6), "action_failed")
    assert event["reason"] == "no_outcome" and event["final"] is False


def test_a_pick_already_carried_is_reported_done_without_a_command() -> None:
    out = tick(Executor(SPEC), at_dock(cargo="t1"))
    assert actions(out) == []
    assert emitted(out, "action_done")[0]["action"] == "pick"


def test_charges_at_the_charger_until_the_battery_is_full_enough() -> None:
    cabin = Executor(SPEC)
    step = step_of("charge", target="charger1", step_id="charge-1")
    board = board_with(pose=(4.95, 0.0, 0.0), route=(), plan=plan_of(step), battery=0.5)
    for n in range(3):
        out = tick(cabin, board, tick=n)
        assert actions(out) == [("charge", {"charger": "charger1"})]
        assert drive(out) == (0.0, 0.0)
    done = tick(cabin, {**board, "battery": 0.95}, tick=3)
    assert actions(done) == []
    assert emitted(done, "action_done") == [
        {"action": "charge", "task": "t1", "step": "charge-1", "attempt": 1}
    ]


def test_a_charge_step_with_a_level_of_its_own_charges_to_it() -> None:
    # the planner charges full a task that came up short after a charge (hard:35): at
    # 0.95 a step to 1.0 is not done, and the robot goes on charging
    cabin = Executor(SPEC)
    step = {**step_of("charge", target="charger1", step_id="charge-1"), "until": 1.0}
    board = board_with(pose=(4.95, 0.0, 0.0), route=(), plan=plan_of(step), battery=0.95)
    out = tick(cabin, board, tick=0)
    assert actions(out) == [("charge", {"charger": "charger1"})]
    assert emitted(out, "action_done") == []
    done = tick(cabin, {**board, "battery": 1.0}, tick=1)
    assert [e["step"] for e in emitted(done, "action_done")] == ["charge-1"]


# -- the retry policy and missing items ----------------------------------------------------


def test_policy_is_normal_without_failures_and_writes_the_mode_once() -> None:
    cabin = Executor(SPEC)
    first = tick(cabin, board_with(), tick=0)
    assert [(w.key, w.value) for w in first.writes] == [("retry:mode", "normal")]
    assert first.reactions == []
    assert tick(cabin, board_with(), tick=1).writes == []


def test_policy_is_conservative_with_failures_in_view() -> None:
    cabin = Executor(SPEC)
    out = tick(cabin, board_with(), events=[failure(1)])
    assert [(w.key, w.value) for w in out.writes] == [("retry:mode", "conservative")]
    assert out.reactions == []
    seen = ViewReader().read(make_view(SPEC, board=board_with(), events=[failure(1)]))
    assert seen.failures == 1
    assert RetryChooser().choose(seen.failures, seen.failures_missing).cause == "recent_failures"


def test_policy_turns_conservative_when_the_failure_records_are_hidden() -> None:
    cabin = Executor(SPEC)
    out = tick(cabin, board_with(), events=[failure(1)], suppress=["event:action_failed*"])
    assert [(w.key, w.value) for w in out.writes] == [("retry:mode", "conservative")]
    assert [(r.pattern, r.reaction, r.detail["reason"]) for r in out.reactions] == [
        ("event:action_failed*", "retry:conservative", "fault")
    ]
    # Once per episode: the next tick of the same fault is not reported again...
    again = tick(cabin, board_with(), tick=1, suppress=["event:action_failed*"])
    assert again.reactions == [] and cabin.mode == "conservative"
    # ...but after the records were back for a while, a new fault is a new episode.
    for n in range(2, 30):
        tick(cabin, board_with(), tick=n)
    assert cabin.mode == "normal"
    late = tick(cabin, board_with(), tick=30, suppress=["event:action_failed*"])
    assert [r.reaction for r in late.reactions] == ["retry:conservative"]


def test_policy_turns_conservative_when_the_failure_records_are_evicted() -> None:
    view = make_view(SPEC, board=board_with(), events=[failure(1)], capacity=8)
    assert view.missing["event:action_failed*"] == "evicted"
    cabin = Executor(SPEC)
    out = run_step(cabin, view)
    assert cabin.mode == "conservative"
    assert [(r.reaction, r.detail["reason"]) for r in out.reactions] == [
        ("retry:conservative", "evicted")
    ]


def test_a_new_missing_reason_is_reported_again_within_an_episode() -> None:
    cabin = Executor(SPEC)
    assert len(tick(cabin, board_with(pose=Stale((0.0, 0.0, 0.0))), tick=0).reactions) == 1
    out = tick(cabin, board_with(), tick=1, suppress=["pose"])
    assert [(r.pattern, r.detail["reason"]) for r in out.reactions] == [("pose", "fault")]


def test_policy_stays_normal_when_the_failure_records_are_merely_absent() -> None:
    cabin = Executor(SPEC)
    view = make_view(SPEC, board=board_with())
    assert view.missing["event:action_failed*"] == "absent"
    out = run_step(cabin, view)
    assert cabin.mode == "normal" and out.reactions == []


def test_conservative_when_hidden_gives_fewer_attempts() -> None:
    cabin = Executor(SPEC)
    hidden = ["event:action_failed*"]
    tick(cabin, at_dock(), tick=0, suppress=hidden)
    out = tick(cabin, at_dock(action__last=outcome(1, False)), tick=1, suppress=hidden)
    assert emitted(out, "action_failed")[0]["final"] is False
    assert (
        actions(tick(cabin, at_dock(action__last=outcome(1, False)), tick=2, suppress=hidden)) == []
    )  # backing off
    assert actions(
        tick(cabin, at_dock(action__last=outcome(1, False)), tick=21, suppress=hidden)
    ) == [("pick", {"task": "t1"})]
    last = tick(cabin, at_dock(action__last=outcome(2, False)), tick=22, suppress=hidden)
    assert emitted(last, "action_failed")[0]["final"] is True


@pytest.mark.parametrize("how", ["stale", "fault"])
def test_without_a_pose_it_holds_and_reports(how: str) -> None:
    cabin = Executor(SPEC)
    if how == "stale":
        out = tick(cabin, board_with(pose=Stale((0.0, 0.0, 0.0))))
    else:
        out = tick(cabin, board_with(), suppress=["pose"])
    assert drive(out) == (0.0, 0.0)
    assert [(r.pattern, r.reaction, r.detail["reason"]) for r in out.reactions] == [
        ("pose", "stop:hold", how)
    ]


def test_without_a_pose_it_does_not_act_at_the_dock() -> None:
    out = tick(Executor(SPEC), at_dock(), suppress=["pose"])
    assert actions(out) == [] and drive(out) == (0.0, 0.0)


def test_a_pose_never_written_holds_without_a_reaction() -> None:
    out = tick(Executor(SPEC), board_with(pose=_DROP))
    assert drive(out) == (0.0, 0.0) and out.reactions == []


@pytest.mark.parametrize("pattern", ["plan", "route", "velocity"])
def test_without_plan_route_or_velocity_it_holds_and_reports(pattern: str) -> None:
    out = tick(Executor(SPEC), board_with(), suppress=[pattern])
    assert drive(out) == (0.0, 0.0)
    assert [(r.pattern, r.reaction) for r in out.reactions] == [(pattern, "stop:hold")]


def test_a_malformed_speed_zone_is_ignored() -> None:
    bad = {"zone": "bay", "polygon": "nonsense", "max_speed": 0.5}
    v, _ = drive(tick(Executor(SPEC), board_with(constraint__speed__bay=bad)))
    assert v > 0


def test_without_speed_limits_it_caps_its_speed_everywhere_and_reports() -> None:
    board = board_with(
        velocity=(1.0, 0.0),
        route=((0.0, 0.0), (20.0, -5.0)),
        plan=plan_of(step_of("go_to", (20.0, -5.0))),
    )
    assert drive(tick(Executor(SPEC), board))[0] > 0.5
    out = tick(Executor(SPEC), board, suppress=["constraint:*"])
    assert 0 < drive(out)[0] <= 0.5
    assert [(r.pattern, r.reaction) for r in out.reactions] == [
        ("constraint:*", "slow:speed_limits_unknown")
    ]


def test_a_spec_may_choose_to_hold_rather_than_slow_without_speed_limits() -> None:
    board = board_with(
        velocity=(1.0, 0.0),
        route=((0.0, 0.0), (20.0, -5.0)),
        plan=plan_of(step_of("go_to", (20.0, -5.0))),
    )
    careful = Executor(with_reactions({"constraint:*": "stop:hold"}))
    assert careful.reactions["constraint:*"] == "stop:hold"
    assert drive(tick(careful, board))[0] > 0.5  # constraints merely absent: it drives
    out = tick(careful, board, tick=1, suppress=["constraint:*"])
    assert drive(out) == (0.0, 0.0)
    assert [(r.pattern, r.reaction) for r in out.reactions] == [("constraint:*", "stop:hold")]


def test_a_spec_may_choose_to_hold_rather_than_retry_blind() -> None:
    board = board_with(
        velocity=(1.0, 0.0),
        route=((0.0, 0.0), (20.0, -5.0)),
        plan=plan_of(step_of("go_to", (20.0, -5.0))),
    )
    careful = Executor(with_reactions({"event:action_failed*": "stop:hold"}))
    out = tick(careful, board, suppress=["event:action_failed*"])
    assert drive(out) == (0.0, 0.0)
    assert [r.reaction for r in out.reactions] == ["stop:hold"]
