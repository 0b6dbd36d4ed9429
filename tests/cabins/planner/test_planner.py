"""Tests for cabins.planner on hand-built views: plans, routes, re-plans and missing items."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from shapely.geometry import LineString, Point, box
from shapely.geometry.base import BaseGeometry

from cabins.planner import REACTIONS, BlockedSpot, Planner, PlannerSettings
from runtime.agent.memory import LongTermMemory
from runtime.cabin import Outbox
from runtime.cabin_map import Feature
from runtime.errors import SettingError
from runtime.loop import remember
from runtime.spec import load_spec
from runtime.testing import Stale, make_view, run_step
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "planner.toml")
RADIUS = 0.35

# A 20 m x 10 m floor: a shelf wall rising from the south wall at x 8..9, and a forbidden
# zone hanging from the north wall at x 4..6. Going from the start (2, 2) to dock "a"
# (16, 2) needs a detour over the shelf; the way back to dock "b" (2, 8.5) passes under
# the forbidden zone.
SHELF = box(8.0, 0.0, 9.0, 7.0)
ZONE = box(4.0, 4.0, 6.0, 10.0)
SLOW = box(12.0, 7.0, 15.0, 10.0)
DOCKS = {"a": (16.0, 2.0), "b": (2.0, 8.5)}
CHARGERS = {"c1": (18.0, 8.0)}


def polygon(shape: BaseGeometry) -> tuple[tuple[float, float], ...]:
    return tuple((float(x), float(y)) for x, y in shape.exterior.coords[:-1])


def goal(
    task: str = "t1", pickup: str = "a", drop: str = "b", released: float = 0.0
) -> dict[str, Any]:
    return {
        "task": task,
        "pickup": pickup,
        "drop": drop,
        "pickup_xy": DOCKS[pickup],
        "drop_xy": DOCKS[drop],
        "released": released,
    }


def world(**changes: Any) -> dict[str, Any]:
    board: dict[str, Any] = {
        "goal:deliver:t1": goal(),
        "pose": (2.0, 2.0, 0.0),
        "battery": 0.8,
        "cargo": None,
        "world:bounds": (0.0, 0.0, 20.0, 10.0),
        "robot:radius": RADIUS,
        "docks": DOCKS,
        "chargers": CHARGERS,
        "safety:forbidden:hv": {"zone": "hv", "polygon": polygon(ZONE), "description": "hv"},
        "constraint:speed:slow": {"zone": "slow", "polygon": polygon(SLOW), "max_speed": 0.5},
    }
    for key, value in changes.items():
        key = key.replace("__", ":")
        if value is None and key != "cargo":
            board.pop(key, None)
        else:
            board[key] = value
    return board


FEATURES = (
    Feature("shelf:S", SHELF, "shelf", frozenset({"static"})),
    Feature("zone:hv", ZONE, "forbidden", frozenset({"safety"})),
    Feature("zone:slow", SLOW, "speed_zone", frozenset({"constraint"})),
    Feature("dock:a", Point(DOCKS["a"]), "dock", frozenset({"static"})),
    Feature("dock:b", Point(DOCKS["b"]), "dock", frozenset({"static"})),
    Feature("charger:c1", Point(CHARGERS["c1"]), "charger", frozenset({"static"})),
)


def person(x: float, y: float, name: str = "p1") -> Feature:
    return Feature(
        f"obstacle:{name}",
        Point(x, y).buffer(0.3),
        "obstacle",
        frozenset({"moving", "person"}),
        {"id": name},
    )


class Bench:
    """Runs a planner tick after tick on hand-built views, applying its board writes."""

    def __init__(
        self,
        planner: Planner | None = None,
        board: dict[str, Any] | None = None,
        *,
        now: float = 10.0,
    ) -> None:
        self.planner = planner or Planner(SPEC)
        self.board = board if board is not None else world()
        self.features: list[Feature] = list(FEATURES)
        self.events: list[tuple[str, Any, float]] = []
        self.now = now
        self.tick = 0
        self.remembered: list[dict[str, Any]] = []

    def step(self, *, suppress: Iterable[str] = (), stale: Iterable[str] = ()) -> Outbox:
        hidden = set(stale)
        board = {k: Stale(v) if k in hidden else v for k, v in self.board.items()}
        view = make_view(
            SPEC,
            board=board,
            features=self.features,
            now=self.now,
            tick=self.tick,
            suppress=suppress,
            events=[e for e in self.events if e[2] >= self.now - 3.0],
        )
        out = run_step(self.planner, view)
        # what the loop does with the facts the planner asks to keep
        self.remembered = [remember(self.planner.long_term, m) for m in out.memories]
        for write in out.writes:
            if write.delete:
                self.board.pop(write.key, None)
            else:
                self.board[write.key] = write.value
        self.tick += 1
        self.now += 0.05
        return out

    def report(self, kind: str, step: str, **data: Any) -> None:
        """An executor report about ``step`` of the current plan."""
        self.events.append(
            (
                kind,
                {
                    "step": step,
                    "task": self.plan["task"],
                    "attempt": 1,
                    "action": self.step_of(step)["action"],
                    **data,
                },
                self.now,
            )
        )

    def finish(self, step: str) -> Outbox:
        self.report("action_done", step)
        return self.step()

    @property
    def plan(self) -> Mapping[str, Any]:
        return self.board["plan"]  # type: ignore[no-any-return]

    @property
    def route(self) -> tuple[tuple[float, float], ...]:
        return self.board["route"]  # type: ignore[no-any-return]

    def step_of(self, step_id: str) -> Mapping[str, Any]:
        return next(s for s in self.plan["steps"] if s["id"] == step_id)


def kinds(out: Outbox) -> list[str]:
    return [e.kind for e in out.events]


def events_of(out: Outbox, kind: str) -> list[Mapping[str, Any]]:
    return [e.data for e in out.events if e.kind == kind]


def wrote(out: Outbox, key: str) -> bool:
    return any(w.key == key for w in out.writes)


def holding(bench: Bench) -> bool:
    """The planner holds: its route is empty."""
    return bench.route == ()


def footprint(route: Iterable[tuple[float, float]]) -> BaseGeometry:
    return LineString(list(route)).buffer(RADIUS)


# -- the spec ---------------------------------------------------------------------------


def test_spec_declares_what_the_planner_does_when_items_are_missing() -> None:
    assert dict(SPEC.on_missing) == dict(REACTIONS)
    assert set(SPEC.required) >= {"goal:*", "pose", "constraint:*", "safety:*"}
    assert SPEC.map_radius >= 36.0  # sees the whole default warehouse floor
    text = (ROOT / "specs" / "planner.toml").read_text()
    assert text.startswith("#:schema ./context-spec.schema.json")


# -- plans and routes -------------------------------------------------------------------


def test_makes_the_four_step_plan_and_routes_around_the_shelf_and_the_zone() -> None:
    bench = Bench()
    out = bench.step()
    assert events_of(out, "task_started")[0]["task"] == "t1"
    plan = bench.plan
    assert [(s["action"], s["target"]) for s in plan["steps"]] == [
        ("go_to", "a"),
        ("pick", "a"),
        ("go_to", "b"),
        ("drop", "b"),
    ]
    ids = [s["id"] for s in plan["steps"]]
    assert [s["depends_on"] for s in plan["steps"]] == [(), *((i,) for i in ids[:-1])]
    assert plan["current"] == ids[0] and plan["revision"] == 0
    assert [s["status"] for s in plan["steps"]] == ["running", "pending", "pending", "pending"]

    route = bench.route
    assert route[0] == (2.0, 2.0) and route[-1] == DOCKS["a"]
    assert LineString([(2.0, 2.0), DOCKS["a"]]).intersects(SHELF)  # the straight way is shut
    assert not footprint(route).intersects(SHELF)
    assert not footprint(route).intersects(ZONE)

    out = bench.step()  # nothing changed: nothing is written again
    assert not out.writes

    bench.board["pose"] = (*DOCKS["a"], 0.0)
    bench.finish(ids[0])
    assert bench.plan["current"] == ids[1]
    out = bench.finish(ids[1])
    assert bench.plan["current"] == ids[2]
    assert wrote(out, "route")
    back = bench.route
    assert back[0] == DOCKS["a"] and back[-1] == DOCKS["b"]
    assert LineString([DOCKS["a"], DOCKS["b"]]).intersects(ZONE)
    assert not footprint(back).intersects(ZONE)
    assert not footprint(back).intersects(SHELF)


def test_goal_stack_takes_the_oldest_goal_first_and_the_next_when_it_is_delivered() -> None:
    bench = Bench(
        board=world(
            **{
                "goal:deliver:t1": goal("t1", released=5.0),
                "goal:deliver:t0": goal("t0", "b", "a", released=1.0),
            }
        )
    )
    bench.step()
    assert bench.plan["task"] == "t0"
    del bench.board["goal:deliver:t0"]  # delivered: the dispatcher took the goal away
    out = bench.step()
    assert bench.plan["task"] == "t1"
    assert events_of(out, "task_started")[0]["task"] == "t1"
    assert "plan_done" not in kinds(out)


def test_marks_steps_done_from_executor_reports_and_ignores_duplicates() -> None:
    bench = Bench()
    bench.step()
    first, second = (s["id"] for s in bench.plan["steps"][:2])
    bench.finish(first)
    assert bench.step_of(first)["status"] == "done"
    assert bench.step_of(second)["status"] == "running"
    bench.report("action_done", first)  # the executor says it again: nothing changes
    out = bench.step()
    assert not wrote(out, "plan")
    bench.events.append(
        ("action_done", {"step": second, "task": "other", "action": "pick"}, bench.now)
    )  # another task's step of the same id is not ours
    bench.step()
    assert bench.step_of(second)["status"] == "running"


def test_final_failure_replans_keeping_done_steps() -> None:
    bench = Bench()
    bench.step()
    go, pick = (s["id"] for s in bench.plan["steps"][:2])
    bench.board["pose"] = (*DOCKS["a"], 0.0)
    bench.finish(go)
    done_before = bench.step_of(go)
    bench.report("action_failed", pick, reason="failed", final=True)
    out = bench.step()
    [replan] = events_of(out, "replan")
    assert replan["reason"] == "step_failed" and replan["step"] == pick
    assert replan["revision"] == 1 == bench.plan["revision"]
    plan = bench.plan
    assert plan["steps"][0] == done_before  # the done step is kept as it was
    assert [(s["action"], s["target"], s["status"]) for s in plan["steps"]] == [
        ("go_to", "a", "done"),
        ("go_to", "a", "running"),
        ("pick", "a", "pending"),
        ("go_to", "b", "pending"),
        ("drop", "b", "pending"),
    ]
    assert pick not in {s["id"] for s in plan["steps"]}  # the retry is a new step
    assert plan["steps"][1]["depends_on"] == (go,)


def test_same_failure_twice_without_progress_replans() -> None:
    bench = Bench()
    bench.step()
    go, pick = (s["id"] for s in bench.plan["steps"][:2])
    bench.board["pose"] = (*DOCKS["a"], 0.0)
    bench.finish(go)
    bench.report("action_failed", pick, reason="failed", final=False)
    assert "replan" not in kinds(bench.step())
    bench.report("action_failed", pick, reason="failed", final=False, attempt=2)
    out = bench.step()
    [replan] = events_of(out, "replan")
    assert replan["reason"] == "no_progress"
    assert bench.step_of(go)["status"] == "done"
    assert bench.plan["steps"][1]["action"] == "go_to"


def test_after_the_pick_a_failed_drop_without_cargo_plans_the_pick_again() -> None:
    bench = Bench()
    bench.step()
    go, pick, go_drop, drop = (s["id"] for s in bench.plan["steps"])
    bench.finish(go)
    bench.finish(pick)
    bench.finish(go_drop)
    bench.report("action_failed", drop, reason="no_cargo", final=True)
    bench.step()
    assert [(s["action"], s["status"]) for s in bench.plan["steps"]] == [
        ("go_to", "done"),
        ("pick", "done"),
        ("go_to", "done"),
        ("go_to", "running"),
        ("pick", "pending"),
        ("go_to", "pending"),
        ("drop", "pending"),
    ]


def test_step_timeout_replans() -> None:
    bench = Bench(Planner(SPEC, PlannerSettings(replan_after_ticks=5)))
    bench.step()
    first = bench.plan["current"]
    for _ in range(5):
        assert "replan" not in kinds(bench.step())
    out = bench.step()
    [replan] = events_of(out, "replan")
    assert (replan["reason"], replan["step"]) == ("step_timeout", first)
    assert bench.plan["current"] != first
    assert bench.step_of(bench.plan["current"])["action"] == "go_to"


def test_a_robot_that_gets_no_further_along_its_route_replans() -> None:
    bench = open_floor()
    bench.planner = Planner(SPEC, PlannerSettings(stall_ticks=10))
    bench.step()
    for i in range(20):  # moving along the route: progress
        bench.board["pose"] = (2.0 + 0.3 * i, 2.0, 0.0)
        assert "replan" not in kinds(bench.step())
    reasons = [e["reason"] for _ in range(11) for e in events_of(bench.step(), "replan")]
    assert reasons == ["no_progress"]  # stuck where it is for 10 ticks
    assert bench.route[0] == bench.board["pose"][:2]


def test_a_goal_without_positions_is_placed_at_its_docks() -> None:
    placed = {k: v for k, v in goal().items() if not k.endswith("_xy")}
    bench = Bench(board=world(goal__deliver__t1=placed))
    bench.step()
    assert [s["target_xy"] for s in bench.plan["steps"]] == [DOCKS["a"]] * 2 + [DOCKS["b"]] * 2
    assert bench.route[-1] == DOCKS["a"]


def test_a_goal_it_cannot_place_is_ignored() -> None:
    lost = {**{k: v for k, v in goal().items() if k != "drop_xy"}, "drop": "nowhere"}
    bench = Bench(board=world(goal__deliver__t1=lost))
    bench.step()
    assert bench.planner.task is None and holding(bench)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("pose", (2.0, 2.0)),
        ("pose", (2.0, True, 0.0)),
        ("world:bounds", (0.0, 0.0, 20.0)),
        ("world:bounds", (20.0, 0.0, 0.0, 10.0)),
    ],
)
def test_an_unreadable_pose_or_floor_holds(key: str, value: Any) -> None:
    bench = Bench(board=world(**{key.replace(":", "__"): value}))
    bench.step()
    assert bench.planner.task == "t1" and holding(bench)


# -- charging ---------------------------------------------------------------------------


@pytest.mark.parametrize("low", [1.0, 1.5, -0.1, True, "low"])
def test_a_low_battery_threshold_it_cannot_use_is_the_default(low: Any) -> None:
    bench = Bench(board=world(battery=0.5, battery__low=low))
    bench.step()
    assert [s["action"] for s in bench.plan["steps"]] == ["go_to", "pick", "go_to", "drop"]


@pytest.mark.parametrize(("battery", "low"), [(0.1, None), (0.3, 0.35)])
def test_charges_first_when_the_battery_is_low(battery: float, low: float | None) -> None:
    bench = Bench(board=world(battery=battery, battery__low=low))
    bench.step()
    steps = bench.plan["steps"]
    assert [(s["action"], s["target"]) for s in steps] == [
        ("go_to", "c1"),
        ("charge", "c1"),
        ("go_to", "a"),
        ("pick", "a"),
        ("go_to", "b"),
        ("drop", "b"),
    ]
    assert steps[1]["until"] == 0.9
    assert bench.route[-1] == CHARGERS["c1"]

    bench.board["pose"] = (*CHARGERS["c1"], 0.0)
    bench.finish(steps[0]["id"])
    charge = steps[1]["id"]
    assert bench.plan["current"] == charge
    bench.board["battery"] = 0.6
    bench.finish(charge)  # the executor's word alone does not end charging below 0.9
    assert bench.plan["current"] == charge
    bench.board["battery"] = 0.92
    bench.step()
    assert bench.step_of(charge)["status"] == "done"
    assert bench.step_of(bench.plan["current"])["target"] == "a"


def test_a_task_short_again_after_a_charge_charges_full() -> None:
    # hard:35: charged to 0.9, the robot came back to its drop as short as when it turned
    # back, three times over one delivery; the second charge of a task goes to full
    bench = Bench(board=world(battery=0.1))
    bench.step()
    go_charger, charge, go_pickup, pick = (s["id"] for s in bench.plan["steps"][:4])
    bench.board["pose"] = (*CHARGERS["c1"], 0.0)
    bench.finish(go_charger)
    bench.board["battery"] = 0.92
    bench.step()
    assert bench.step_of(charge)["status"] == "done"
    bench.finish(go_pickup)
    bench.board["battery"] = 0.2
    out = bench.finish(pick)
    assert [r["reason"] for r in events_of(out, "replan")] == ["low_battery"]
    again = next(s for s in bench.plan["steps"] if s["action"] == "charge" and s["id"] != charge)
    assert again["until"] == 1.0
    bench.board["pose"] = (*CHARGERS["c1"], 0.0)
    bench.finish(bench.plan["current"])
    assert bench.plan["current"] == again["id"]
    bench.board["battery"] = 0.92
    bench.step()
    assert bench.step_of(again["id"])["status"] == "running"  # 0.9 is not full
    bench.board["battery"] = 1.0
    bench.step()
    assert bench.step_of(again["id"])["status"] == "done"


def test_low_battery_at_the_dock_picks_first_and_charges_before_setting_off() -> None:
    bench = Bench()
    bench.step()
    go, pick = (s["id"] for s in bench.plan["steps"][:2])
    bench.board["battery"] = 0.2
    out = bench.finish(go)
    assert "replan" not in kinds(out)
    assert bench.plan["current"] == pick


def test_low_battery_on_the_way_inserts_charging_before_the_next_step() -> None:
    bench = Bench()
    bench.step()
    go, pick = (s["id"] for s in bench.plan["steps"][:2])
    bench.finish(go)
    bench.board["battery"] = 0.2
    out = bench.finish(pick)
    [replan] = events_of(out, "replan")
    assert replan["reason"] == "low_battery"
    assert [(s["action"], s["status"]) for s in bench.plan["steps"]] == [
        ("go_to", "done"),
        ("pick", "done"),
        ("go_to", "running"),
        ("charge", "pending"),
        ("go_to", "pending"),
        ("drop", "pending"),
    ]
    assert bench.route[-1] == CHARGERS["c1"]


# -- obstacles --------------------------------------------------------------------------


def open_floor(**changes: Any) -> Bench:
    """No shelf, no zones near the way from (2, 2) to dock a (16, 2): a straight route."""
    bench = Bench(board=world(**changes))
    bench.features = [f for f in FEATURES if f.kind not in ("shelf",)]
    return bench


def test_replans_when_an_obstacle_enters_the_corridor_ahead() -> None:
    bench = open_floor()
    bench.step()
    assert bench.route == ((2.0, 2.0), DOCKS["a"])
    bench.features.append(person(9.0, 2.2))
    out = bench.step()
    [replan] = events_of(out, "replan")
    assert replan["reason"] == "obstacle_in_corridor"
    assert bench.plan["revision"] == 1
    assert bench.plan["steps"][0]["status"] == "running"  # the go_to step goes on
    detour = bench.route
    assert detour[0] == (2.0, 2.0) and detour[-1] == DOCKS["a"]
    assert LineString(detour).distance(Point(9.0, 2.2)) > 0.3 + RADIUS

    # a person who keeps walking into the way is re-planned for at most once a second
    fired = []
    for i in range(40):  # two seconds
        (x0, y0), (x1, y1) = bench.route[:2]
        bench.features[-1] = person((x0 + x1) / 2, (y0 + y1) / 2)
        if "replan" in kinds(bench.step()):
            fired.append(i)
    assert len(fired) == 2
    assert fired[0] >= 18 and fired[1] - fired[0] >= 20


def test_an_obstacle_behind_the_robot_or_off_the_route_is_ignored() -> None:
    bench = open_floor()
    bench.step()
    bench.board["pose"] = (10.0, 2.0, 0.0)
    bench.features.append(person(6.0, 2.0, "behind"))
    bench.features.append(person(12.0, 3.4, "beside"))  # in the corridor, clear of the route
    assert "replan" not in kinds(bench.step())


# -- missing items ----------------------------------------------------------------------


def test_missing_constraints_raise_one_alarm_and_route_around_the_last_known_zone() -> None:
    bench = open_floor(
        pose=(7.0, 8.5, 0.0), **{"goal:deliver:t1": {**goal(), "pickup_xy": (18.0, 8.5)}}
    )
    bench.step()
    assert bench.route == ((7.0, 8.5), (18.0, 8.5))  # straight through the speed zone
    out = bench.step(suppress=["constraint:*"])
    assert [(r.pattern, r.reaction, dict(r.detail)) for r in out.reactions] == [
        ("constraint:*", "alarm:constraint_check", {"reason": "fault"})
    ]
    [alarm] = events_of(out, "alarm")
    assert alarm["kind"] == "constraint_check" and alarm["reason"] == "fault"
    route = bench.route
    assert route[0] == (7.0, 8.5) and route[-1] == (18.0, 8.5)
    assert not footprint(route).intersects(SLOW)
    for _ in range(3):  # once per episode, not every tick
        out = bench.step(suppress=["constraint:*"])
        assert not out.reactions and "alarm" not in kinds(out)
    bench.step()  # the constraints are back: the straight route again
    assert bench.route == ((7.0, 8.5), (18.0, 8.5))
    out = bench.step(suppress=["constraint:*"])  # a new episode
    assert [r.reaction for r in out.reactions] == ["alarm:constraint_check"]


def test_missing_constraints_never_seen_hold() -> None:
    bench = Bench()
    bench.features = [f for f in FEATURES if f.kind != "speed_zone"]
    out = bench.step(suppress=["constraint:*"])
    assert [r.reaction for r in out.reactions] == ["alarm:constraint_check"]
    assert holding(bench)
    assert bench.plan["task"] == "t1"


def test_absent_constraints_are_no_alarm() -> None:
    bench = Bench(board=world(**{"constraint:speed:slow": None}))
    bench.features = [f for f in FEATURES if f.kind != "speed_zone"]
    out = bench.step()
    assert not out.reactions and "alarm" not in kinds(out)
    assert len(bench.route) >= 2


def test_missing_safety_holds_and_keeps_the_plan() -> None:
    bench = Bench()
    bench.step()
    plan = bench.plan
    out = bench.step(suppress=["safety:*"])
    assert [(r.pattern, r.reaction) for r in out.reactions] == [("safety:*", "hold:no_plan")]
    assert holding(bench)
    assert not wrote(out, "plan") and bench.plan == plan
    out = bench.step(suppress=["safety:*"])
    assert not out.writes and not out.reactions
    bench.step()
    again = bench.route
    assert again[0] == (2.0, 2.0) and again[-1] == DOCKS["a"]


def test_stale_pose_holds_and_keeps_the_plan() -> None:
    bench = Bench()
    bench.step()
    plan = bench.plan
    out = bench.step(stale=["pose"])
    assert [(r.pattern, r.reaction, r.detail["reason"]) for r in out.reactions] == [
        ("pose", "hold:no_plan", "stale")
    ]
    assert holding(bench) and bench.plan == plan
    bench.board["pose"] = (3.0, 2.5, 0.0)
    bench.step()
    again = bench.route
    assert again[0] == (3.0, 2.5)  # a new route from where the robot is now


def test_hidden_goals_idle_and_keep_the_plan() -> None:
    bench = Bench()
    bench.step()
    plan = bench.plan
    out = bench.step(suppress=["goal:*"])
    assert [(r.pattern, r.reaction) for r in out.reactions] == [("goal:*", "idle:no_goal")]
    assert holding(bench) and bench.plan == plan
    assert "plan_done" not in kinds(out)


def test_no_goals_idles_without_a_route() -> None:
    bench = Bench(board=world(**{"goal:deliver:t1": None}))
    out = bench.step()
    assert not out.reactions  # no goals is "absent", not a fault
    assert holding(bench)
    assert bench.plan["task"] is None and bench.plan["steps"] == ()
    assert "plan_done" not in kinds(out)
    assert not bench.step().writes


def test_plan_done_is_emitted_once_when_all_goals_are_done() -> None:
    bench = Bench()
    bench.step()
    for step in [s["id"] for s in bench.plan["steps"]]:
        bench.finish(step)
    assert all(s["status"] == "done" for s in bench.plan["steps"])
    assert holding(bench)
    del bench.board["goal:deliver:t1"]
    out = bench.step()
    assert events_of(out, "plan_done") == [{"tasks_done": 1}]
    assert bench.plan["task"] is None
    for _ in range(3):
        assert "plan_done" not in kinds(bench.step())


def test_a_done_plan_whose_goal_stays_is_planned_again() -> None:
    bench = Bench(Planner(SPEC, PlannerSettings(goal_clear_ticks=3)))
    bench.step()
    for step in [s["id"] for s in bench.plan["steps"]]:
        bench.finish(step)
    reasons = [e["reason"] for _ in range(4) for e in events_of(bench.step(), "replan")]
    assert reasons == ["goal_not_cleared"]
    assert bench.plan["current"] is not None


def test_bad_settings_are_refused_with_the_value() -> None:
    with pytest.raises(SettingError, match=r"replan_after_ticks: .*equal to 1, got 0"):
        PlannerSettings(replan_after_ticks=0)
    with pytest.raises(SettingError, match="charge_until"):
        PlannerSettings(low_battery=0.5, charge_until=0.4)


# -- long-term memory -------------------------------------------------------------------


def remembering(memory: LongTermMemory, scope: str = "s1", **settings: Any) -> Bench:
    """The open floor, planned by a planner that remembers in ``memory`` under ``scope``."""
    bench = open_floor()
    bench.planner = Planner(
        SPEC, PlannerSettings(**settings), long_term=memory, memory_scope={"scenario": scope}
    )
    return bench


def blocked_fact(x: float, y: float, **extra: Any) -> dict[str, Any]:
    return {
        "fact": "blocked",
        "x": x,
        "y": y,
        "radius": 1.0,
        "kind": "person",
        "time": 5.0,
        **extra,
    }


def test_an_obstacle_in_the_way_is_remembered_once_with_where_and_when() -> None:
    memory = LongTermMemory(":memory:")
    bench = remembering(memory)
    bench.step()
    bench.features.append(person(9.0, 2.2))
    out = bench.step()
    assert [e["reason"] for e in events_of(out, "replan")] == ["obstacle_in_corridor"]
    [asked] = out.memories  # through the outbox: the step itself writes nothing
    assert asked.scope == {"scenario": "s1"} and asked.metadata["fact"] == "blocked"
    [note] = bench.remembered
    assert note["stored"] and note["why"] == "stored" and note["kind"] == "person"
    [record] = memory.records(scope={"scenario": "s1"})
    assert record.content == "a person blocked the way near (9, 2)"
    meta = record.metadata
    assert (meta["fact"], meta["kind"], meta["reason"], meta["obstacle"], meta["task"]) == (
        "blocked",
        "person",
        "obstacle_in_corridor",
        "obstacle:p1",
        "t1",
    )
    assert meta["x"] == pytest.approx(9.0, abs=1e-3) and meta["y"] == pytest.approx(2.2, abs=1e-3)
    assert meta["time"] == pytest.approx(10.05) and record.stamp == pytest.approx(10.05)
    assert memory.count() == 1


def test_a_second_planner_routes_around_the_remembered_spot_and_another_scope_does_not() -> None:
    memory = LongTermMemory(":memory:")
    memory.remember(
        "a person blocked the way near (9, 2)",
        scope={"scenario": "s1"},
        metadata=blocked_fact(9.0, 2.2),
    )
    straight = ((2.0, 2.0), DOCKS["a"])

    bench = remembering(memory, "s1")
    assert [(s.x, s.y, s.kind) for s in bench.planner.blocked_spots] == [(9.0, 2.2, "person")]
    out = bench.step()
    [recalled] = events_of(out, "recalled")
    assert recalled["spots"] == 1 and recalled["length"] <= 1.5 * recalled["shortest"]
    assert bench.route[0] == (2.0, 2.0) and bench.route[-1] == DOCKS["a"]
    assert LineString(bench.route).distance(Point(9.0, 2.2)) > 1.0 + RADIUS
    assert not events_of(out, "replan")  # a recalled spot is no re-plan

    other = remembering(memory, "s2")
    assert other.planner.blocked_spots == ()
    assert not events_of(other.step(), "recalled")
    assert other.route == straight


def test_a_remembered_spot_is_expensive_not_forbidden() -> None:
    memory = LongTermMemory(":memory:")
    memory.remember(
        "a person blocked the way near (9, 2)",
        scope={"scenario": "s1"},
        metadata=blocked_fact(9.0, 2.2),
    )
    straight = ((2.0, 2.0), DOCKS["a"])
    # any detour is too long: the shortest route it is, through the spot
    strict = remembering(memory, memory_detour=1.0)
    out = strict.step()
    assert strict.route == straight and not events_of(out, "recalled")
    # a spot at the robot's own position never strands it
    memory.remember(
        "a person blocked the way near (9, 2)",
        scope={"scenario": "s3"},
        metadata=blocked_fact(2.2, 2.0),
    )
    here = remembering(memory, "s3")
    here.step()
    assert here.route == straight


def test_a_recalled_spot_blocked_again_supersedes_and_a_copy_is_refused() -> None:
    memory = LongTermMemory(":memory:")
    # two runs that start before either has learned anything (parallel runs of a campaign)
    first, second = remembering(memory), remembering(memory)
    for bench in (first, second):
        bench.step()
        bench.features.append(person(9.0, 2.2))
    first.step()
    second.step()
    [stored], [refused] = first.remembered, second.remembered
    assert stored["stored"] and (refused["stored"], refused["why"]) == (False, "duplicate")
    assert memory.count() == 1

    # a planner that recalled the spot and meets the obstacle there again remembers it
    # once more, with the new time: the newer fact supersedes, the old one is history
    third = remembering(memory, memory_detour=1.0)
    third.now = 60.0  # a later run
    third.step()
    third.features.append(person(9.0, 2.2))
    out = third.step()
    assert events_of(out, "replan") and len(out.memories) == 1
    [again] = third.remembered
    assert (again["stored"], again["why"]) == (True, "superseded")
    [current] = memory.records(scope={"scenario": "s1"})
    history = memory.history(scope={"scenario": "s1"}, subject="blocked_spot:person@9,2")
    assert [r.status for r in history] == ["superseded", "current"] and history[-1] == current
    assert [r.id for r in memory.recall("person blocked", scope={"scenario": "s1"})] == [current.id]
    # and only once per run
    third.features[-1] = person(9.1, 2.3)
    assert not third.step().memories


def test_a_spot_the_robot_stands_in_with_nothing_near_is_clear_now_and_retired() -> None:
    memory = LongTermMemory(":memory:")
    spot = BlockedSpot(2.2, 2.0, 1.0, "person", 5.0)  # where the robot stands
    content, metadata = spot.fact((2.0, 2.0))
    memory.remember(content, scope={"scenario": "s1"}, metadata=metadata, stamp=5.0)
    # a person near it: not clear yet
    crowded = remembering(memory)
    crowded.features.append(person(2.5, 2.4))
    assert not crowded.step().memories and len(crowded.planner.blocked_spots) == 1
    bench = remembering(memory)
    out = bench.step()
    [asked] = out.memories
    assert asked.metadata["memory"] == {"subject": "blocked_spot:person@2,2", "holds": False}
    assert asked.content == "the way near (2, 2) is clear of the person now"
    [note] = bench.remembered
    assert (note["stored"], note["why"]) == (True, "retired")
    assert bench.planner.blocked_spots == () and memory.records(scope={"scenario": "s1"}) == ()
    assert not bench.step().memories  # retired once
    [old, clear] = memory.history(scope={"scenario": "s1"}, subject="blocked_spot:person@2,2")
    assert (old.status, clear.status) == ("retired", "retraction")


def test_other_records_of_the_scope_are_no_spots() -> None:
    memory = LongTermMemory(":memory:")
    memory.remember("the west aisle is narrow", scope={"scenario": "s1"})
    memory.remember(
        "a bad fact",
        scope={"scenario": "s1"},
        metadata={"fact": "blocked", "x": "nine", "y": 2.0, "radius": 1.0},
    )
    assert remembering(memory).planner.blocked_spots == ()


@given(
    written=st.sampled_from(["warehouse", "narrow_aisles", "Warehouse", "w"]),
    asked=st.sampled_from(["warehouse", "narrow_aisles", "Warehouse", "w"]),
)
def test_spots_never_cross_scopes(written: str, asked: str) -> None:
    with LongTermMemory(":memory:") as memory:
        memory.remember(
            "a person blocked the way near (9, 2)",
            scope={"scenario": written},
            metadata=blocked_fact(9.0, 2.2),
        )
        planner = Planner(SPEC, long_term=memory, memory_scope={"scenario": asked})
        assert len(planner.blocked_spots) == (1 if written == asked else 0)


def test_a_restored_planner_keeps_its_spots_and_remembers_in_the_memory_it_is_given(
    tmp_path: Path,
) -> None:
    from runtime.testing import round_trip_state
    from sim.run.runstate import records

    path = str(tmp_path / "memory.sqlite")
    with LongTermMemory(path) as memory:
        bench = remembering(memory)
        bench.step()
        bench.features.append(person(9.0, 2.2))
        bench.step()
        with LongTermMemory(str(tmp_path / "other.sqlite")) as other:
            fresh = remembering(other).planner
            copy = round_trip_state(bench.planner, fresh, records=records())
            assert copy.blocked_spots == bench.planner.blocked_spots
            assert copy.long_term is other  # the file the resumed run names, not the old one


def test_bad_memory_settings_are_refused_with_the_value() -> None:
    with pytest.raises(SettingError, match=r"memory_detour: .*equal to 1, got 0\.5"):
        PlannerSettings(memory_detour=0.5)
    with pytest.raises(SettingError, match=r"memory_cell: .*greater than 0, got 0"):
        PlannerSettings(memory_cell=0)
    with pytest.raises(TypeError, match="long_term must be a LongTermMemory, got str"):
        Planner(SPEC, long_term="memory.sqlite")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="memory_scope must map strings to strings"):
        Planner(SPEC, memory_scope={"scenario": 1})  # type: ignore[dict-item]
