"""The approach: how the robot gets to the current step's target, and what it does there.

Each tick, for the plan's current step (after the ledger took the plan's revision and any
new action outcome):

- ``go_to``: the robot follows the route (``Course``: the progress along it; ``Pursuit``:
  the command), slowed over the last ``approach_distance`` metres by the retry policy's
  ``approach_speed_factor``; within ``arrive_fraction`` of the dock tolerance of the target
  it has arrived, and the step is done. When no straight way back to the route is clear,
  the step fails with ``off_route``, once per route and plan revision, for the planner to
  route again from where the robot is.
- ``pick``, ``drop``, ``charge``: once the acceptance predicate holds (within the dock
  tolerance, less ``accept_margin``, and slower than its ``max_speed``) the ledger
  commands the action; until then the robot brakes, or drives straight at the target at
  ``approach_speed`` (scaled by the policy) when it is no more than ``max_approach_gap``
  away, else holds for the planner to route it there. Not while the attempts are spent,
  the step is done already, or the policy's back-off runs.

It holds (``HOLD``) while it cannot see the robot's pose or velocity, the plan or its
current step, while the step is over or an outcome is awaited, and once the step was
reported done.
"""

from __future__ import annotations

import math

from cabins.executor.course import Course
from cabins.executor.ledger import StepLedger
from cabins.executor.plan import Step
from cabins.executor.pursuit import HOLD, Pursuit
from cabins.executor.retry import RetryPolicy
from cabins.executor.seen import Seen
from cabins.executor.settings import ExecutorSettings
from cabins.executor.track import Track
from cabins.executor.zones import SpeedZones
from cabins.warehouse.values import Pose
from runtime.cabin import Outbox

__all__ = ["Approach"]


class Approach:
    """Drives the robot to the current step's target and acts there (see the module
    docstring); ``ledger`` keeps the steps' records, ``zones`` the speed zones seen."""

    __slots__ = ("_course", "_ledger", "_pursuit", "_settings")

    def __init__(self, settings: ExecutorSettings, ledger: StepLedger, zones: SpeedZones) -> None:
        self._settings = settings
        self._ledger = ledger
        self._course = Course()
        self._pursuit = Pursuit(settings, zones)

    def drive(self, seen: Seen, out: Outbox, policy: RetryPolicy) -> tuple[float, float]:
        """The (v, w) to command this tick for the plan's current step, under ``policy``."""
        ledger = self._ledger
        plan = seen.plan
        if plan is not None:
            ledger.follow_plan(plan)
        ledger.poll_outcome(seen, out, policy)
        pose, velocity = seen.pose, seen.velocity
        if pose is None or velocity is None or plan is None or plan.step is None:
            ledger.stop_charging()
            return HOLD
        step = plan.step
        if step.status in ("done", "failed") or ledger.waiting:
            return HOLD
        if ledger.reported_done(seen.tick, out, step, plan.revision):
            return HOLD
        if step.action == "go_to":
            return self._go_to(seen, out, step, pose, velocity.v, policy)
        return self._act(seen, out, step, pose, velocity.v, policy)

    def _go_to(
        self,
        seen: Seen,
        out: Outbox,
        step: Step,
        pose: Pose,
        speed: float,
        policy: RetryPolicy,
    ) -> tuple[float, float]:
        """Follow the route to the step's target; done within the arrival tolerance."""
        route = seen.route
        if not route:
            return HOLD
        settings = self._settings
        target = step.target_xy or route[-1]
        tolerance = seen.accept.dock_tolerance * settings.arrive_fraction
        if math.hypot(target[0] - pose.x, target[1] - pose.y) <= tolerance:
            self._ledger.succeed(seen.tick, out, step.key, 1)
            return HOLD
        track, s = self._course.locate(route, pose)
        cap = math.inf
        if track.length - s < settings.approach_distance and policy.approach_speed_factor < 1:
            cap = policy.approach_speed_factor * seen.limits.max_speed
        command = self._pursuit.pursue(seen, track, s, pose, speed, target, tolerance, cap)
        if self._pursuit.cut_off and self._course.first_off(route, self._ledger.revision):
            # No straight way back to the route is clear: the planner must route again
            # from here. Reported once per route.
            self._ledger.fail(seen.tick, out, policy, step.key, "off_route", count=1)
        return command

    def _act(
        self,
        seen: Seen,
        out: Outbox,
        step: Step,
        pose: Pose,
        speed: float,
        policy: RetryPolicy,
    ) -> tuple[float, float]:
        """Pick, drop or charge at the step's target once the acceptance predicate holds;
        until then approach it directly, or brake."""
        ledger = self._ledger
        if ledger.spent(step.key):
            return HOLD  # attempts spent: the planner re-plans
        if ledger.finish_if_done(seen, out, step):
            return HOLD
        if ledger.backing_off(step.key, seen.tick, policy):
            return HOLD  # at least a tick, so that the policy has seen the failure
        target = step.target_xy
        if target is None:
            return HOLD
        settings, accept = self._settings, seen.accept
        gap = math.hypot(target[0] - pose.x, target[1] - pose.y)
        reach = max(accept.dock_tolerance - settings.accept_margin, accept.dock_tolerance / 2)
        if gap <= reach:
            if abs(speed) >= accept.max_speed:
                ledger.stop_charging()
                return HOLD  # brake first
            ledger.command(seen.tick, out, step)
            return HOLD
        ledger.stop_charging()
        if gap > settings.max_approach_gap:
            return HOLD  # too far for a direct approach: the planner must route us there
        track = Track((pose.xy, target))
        cap = settings.approach_speed * policy.approach_speed_factor
        return self._pursuit.pursue(seen, track, 0.0, pose, speed, target, reach / 2, cap)
