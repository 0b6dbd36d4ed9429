"""Why the planner holds: no route without goals, pose, safety items, bounds, or any
speed zone while the constraints are missing."""

from __future__ import annotations

from cabins.planner.hold import hold_reason
from tests.cabins.planner.test_layout import layout, seen


def test_no_route_may_be_planned_without_goals_pose_safety_bounds_or_any_constraints() -> None:
    known = layout()
    assert hold_reason(seen(), known) == "no_bounds"  # nothing learned yet
    known.learn(seen())
    assert hold_reason(seen(), known) is None
    assert hold_reason(seen(suppress=["goal:*"]), known) == "no_goal"
    assert hold_reason(seen(pose=None), known) == "no_pose"
    assert hold_reason(seen(suppress=["safety:*"]), known) == "no_safety"
    assert hold_reason(seen(suppress=["constraint:*"]), known) is None  # the zones are known
    fresh = layout()
    fresh.learn(seen(**{"constraint:speed:slow": None}))
    assert hold_reason(seen(suppress=["constraint:*"]), fresh) == "no_constraints"
