"""The approach on its own: holding when it cannot see, arriving, acting at a dock only
once the acceptance predicate holds, braking or holding before it."""

from __future__ import annotations

from typing import Any

from cabins.executor.approach import Approach
from cabins.executor.ledger import StepLedger
from cabins.executor.pursuit import HOLD
from cabins.executor.retry import CONSERVATIVE, NORMAL
from cabins.executor.seen import Seen, ViewReader
from cabins.executor.settings import ExecutorSettings
from cabins.executor.zones import SpeedZones
from runtime import Outbox, load_spec
from runtime.testing import make_view
from tests.cabins.executor.test_executor import DOCK, board_with, plan_of, step_of
from tests.support.paths import SPECS

SPEC = load_spec(SPECS / "executor.toml")


def approach() -> Approach:
    settings = ExecutorSettings()
    return Approach(settings, StepLedger(settings), SpeedZones(settings, slow_when_blind=True))


def seen(**board: Any) -> Seen:
    return ViewReader().read(make_view(SPEC, board=board_with(**board)))


def test_it_holds_while_it_cannot_see_the_robot_or_its_step() -> None:
    for board in ({"pose": None}, {"velocity": None}, {"plan": None}):
        out = Outbox("executor")
        assert approach().drive(seen(**board), out, NORMAL) == HOLD
        assert out.events == [] and out.commands == []


def test_a_go_to_drives_along_the_route_and_is_done_on_arrival() -> None:
    v, _ = approach().drive(seen(), Outbox("executor"), NORMAL)
    assert v > 0
    out = Outbox("executor")
    assert approach().drive(seen(pose=(*DOCK, 0.0)), out, NORMAL) == HOLD
    assert [(e.kind, e.data["step"]) for e in out.events] == [("action_done", "go_to-1")]


def test_an_action_is_commanded_only_near_the_dock_and_nearly_stopped() -> None:
    pick = plan_of(step_of("pick"))
    near, out = approach(), Outbox("executor")
    assert near.drive(seen(plan=pick, pose=(4.9, 0.0, 0.0)), out, NORMAL) == HOLD
    assert [c.name for c in out.commands] == ["pick"]
    moving, out = approach(), Outbox("executor")
    fast = seen(plan=pick, pose=(4.9, 0.0, 0.0), velocity=(0.5, 0.0))
    assert moving.drive(fast, out, NORMAL) == HOLD and out.commands == []  # brakes first
    closing, out = approach(), Outbox("executor")
    v, _ = closing.drive(seen(plan=pick, pose=(4.0, 0.0, 0.0)), out, CONSERVATIVE)
    assert 0 < v <= ExecutorSettings().approach_speed * CONSERVATIVE.approach_speed_factor
    far, out = approach(), Outbox("executor")
    assert far.drive(seen(plan=pick, pose=(1.0, 0.0, 0.0)), out, NORMAL) == HOLD
    assert out.commands == []  # too far for a direct approach: the planner routes it
