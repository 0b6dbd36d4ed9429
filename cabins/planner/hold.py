"""Holding: why the planner plans no route this tick.

The planner cannot route safely while its goals are missing, while it does not know
where the robot is, while the safety items are missing, while the constraints are
missing and it never saw a speed zone to route round, or before it saw the floor's
bounds. It holds then: no route (the route written is cleared), and the plan is kept as
it is, not advanced. The reason is the first of those that holds, in that order.
"""

from __future__ import annotations

from cabins.planner.layout import Layout
from cabins.planner.seen import Seen

__all__ = ["hold_reason"]


def hold_reason(seen: Seen, layout: Layout) -> str | None:
    """Why no route may be planned this tick, given what ``layout`` knows, or None."""
    if "goal:*" in seen.missing:
        return "no_goal"
    if seen.pose is None:
        return "no_pose"
    if "safety:*" in seen.missing:
        return "no_safety"
    if "constraint:*" in seen.missing and not layout.constraints:
        return "no_constraints"
    if layout.bounds is None:
        return "no_bounds"
    return None
