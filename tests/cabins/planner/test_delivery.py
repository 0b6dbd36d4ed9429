"""The steps of a delivery: what is left to do, charging first, ids never used twice."""

from __future__ import annotations

from typing import Any

from cabins.planner.delivery import chain, charging_planned, needed_steps
from cabins.planner.seen import Seen, ViewReader
from cabins.planner.settings import PlannerSettings
from cabins.warehouse.values import DeliverGoal
from runtime.agent.plan import Plan, PlanStep
from runtime.spec import load_spec
from runtime.testing import make_view
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "planner.toml")
GOAL = DeliverGoal("t1", "a", "b", (1.0, 1.0), (5.0, 1.0), 0.0)
CHARGERS = {"c2": (9.0, 9.0), "c1": (2.0, 1.0)}


def seen(**board: Any) -> Seen:
    values = {"pose": (0.0, 0.0, 0.0), "battery": 0.8, "chargers": CHARGERS, **board}
    return ViewReader(PlannerSettings()).read(make_view(SPEC, board=values))


def plan_of(steps: list[PlanStep]) -> list[tuple[str, str, str | None]]:
    return [(s.id, s.action, s.target) for s in steps]


def test_a_delivery_is_go_pick_go_drop_each_after_the_one_before() -> None:
    steps = chain((), needed_steps(GOAL, seen(cargo=None), (), burned=set(), charge_until=0.9))
    assert plan_of(list(steps)) == [
        ("t1:go_pickup", "go_to", "a"),
        ("t1:pick", "pick", "a"),
        ("t1:go_drop", "go_to", "b"),
        ("t1:drop", "drop", "b"),
    ]
    assert [s.depends_on for s in steps] == [(), ("t1:go_pickup",), ("t1:pick",), ("t1:go_drop",)]
    assert steps[0].data["target_xy"] == (1.0, 1.0) and steps[0].data["task"] == "t1"
    Plan(steps)  # a valid plan


def test_carrying_the_load_leaves_the_pick_up_out() -> None:
    steps = needed_steps(GOAL, seen(cargo="t1"), (), burned=set(), charge_until=0.9)
    assert [s.action for s in steps] == ["go_to", "drop"]
    # without a cargo reading, the kept steps say whether it was picked
    picked = PlanStep("t1:pick", action="pick", target="a", status="done")
    steps = needed_steps(GOAL, seen(), (picked,), burned=set(), charge_until=0.9)
    assert [s.action for s in steps] == ["go_to", "drop"]


def test_a_low_battery_charges_first_at_the_nearest_charger() -> None:
    steps = needed_steps(GOAL, seen(battery=0.1), (), burned=set(), charge_until=0.8)
    assert plan_of(steps)[:2] == [("t1:go_charger", "go_to", "c1"), ("t1:charge", "charge", "c1")]
    assert steps[1].data["until"] == 0.8 and steps[1].description == "charge at c1 to 0.8"
    assert charging_planned(Plan(chain((), steps)))
    # no charger in view: no charging steps
    none = needed_steps(GOAL, seen(battery=0.1, chargers={}), (), burned=set(), charge_until=0.8)
    assert [s.action for s in none] == ["go_to", "pick", "go_to", "drop"]


def test_ids_the_task_used_before_get_a_number() -> None:
    burned = {"t1:go_pickup", "t1:go_pickup.1", "t1:pick"}
    steps = needed_steps(GOAL, seen(cargo=None), (), burned=burned, charge_until=0.9)
    assert [s.id for s in steps] == ["t1:go_pickup.2", "t1:pick.1", "t1:go_drop", "t1:drop"]
    assert burned == {"t1:go_pickup", "t1:go_pickup.1", "t1:pick"}  # not changed


def test_chain_puts_the_tail_after_the_kept_steps() -> None:
    kept = (PlanStep("k", status="done"),)
    tail = [PlanStep("x", depends_on=("k",)), PlanStep("y")]
    chained = chain(kept, tail)
    assert [(s.id, s.depends_on) for s in chained] == [("k", ()), ("x", ("k",)), ("y", ("x",))]
    assert chained[1] is tail[0]  # already right: the same step
