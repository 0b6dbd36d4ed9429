"""The executor cabin: carries out the planner's current step on the robot.

Each tick it reads the ``plan`` and ``route`` the planner wrote and does the current
step:

- ``go_to``: follows ``route`` with pure pursuit, within the robot's limits; it slows
  for the end of the route, for speed zones (``constraint:speed:*``, looked for a
  stopping distance ahead along the route), for the final approach to a dock (the
  retry policy's ``approach_speed_factor``) and for obstacles (people, forklifts) on
  the route ahead, before which it stops and waits. Within the arrival tolerance of
  the target it stops and reports ``action_done``.
- ``pick`` / ``drop``: commands the action once, only when the acceptance predicate
  holds (near the dock and nearly stopped; otherwise it creeps closer or brakes
  first), then waits for an ``action:last`` with a newer id to learn the outcome. It
  reports ``action_done`` or ``action_failed`` and retries under the ``RetryPolicy``
  in force (``cabins.executor.retry``), with ``final: true`` once the attempts are spent.
- ``charge``: commands ``charge`` every tick while stopped at the charger until the
  battery reaches ``charge_until``.

It sends exactly one ``drive`` command every tick (``drive(v=0, w=0)`` to hold). When
it cannot see where it is, how fast it goes, its plan or its route, it holds; when the
speed-limit constraints are hidden from it, it caps its speed everywhere; when its
failure records are hidden, its retries turn conservative. Each of these is reported
as a reaction once per episode (an episode ends after ``EPISODE_QUIET_TICKS`` ticks
without the item missing). A spec's ``[on_missing]`` may pick ``stop:hold`` instead
of slowing down or of conservative retries (``REACTIONS`` lists what it can do for
each item); it refuses one it cannot carry out. The board key ``retry:mode`` shows the
policy in force.

The cabin is a facade over its parts, each holding one kind of state: ``ViewReader``
(``seen.py``: the view read once a tick, into a ``Seen`` the parts take),
``MissingItems`` (``missing.py``: the reactions in force and their episodes),
``StepLedger`` (``ledger.py``: attempts, outcomes, steps done), ``Course`` (``course.py``:
the route followed and the progress along it) and ``Pursuit`` (``pursuit.py``, with
``zones.py`` and ``obstacles.py``: the command that follows a track). Its settings are
an ``ExecutorSettings`` (``settings.py``; ``settings``, read-only): each part that is
tuned takes that object, first, and reads its values from it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from cabins.executor.course import Course
from cabins.executor.ledger import StepLedger
from cabins.executor.missing import MissingItems
from cabins.executor.plan import Step
from cabins.executor.pursuit import HOLD, Pursuit
from cabins.executor.retry import RetryChooser, RetryPolicy
from cabins.executor.seen import Seen, ViewReader
from cabins.executor.settings import ExecutorSettings
from cabins.executor.track import Track
from cabins.executor.zones import SpeedZones
from cabins.warehouse.values import Pose
from runtime.cabin import Outbox
from runtime.pack import CabinView
from runtime.spec import ContextSpec

__all__ = ["Executor"]


class Executor:
    """The executor cabin (see the module docstring)."""

    def __init__(
        self,
        spec: ContextSpec,
        settings: ExecutorSettings | None = None,
        *,
        chooser: RetryChooser | None = None,
    ) -> None:
        settings = ExecutorSettings() if settings is None else settings
        if not isinstance(settings, ExecutorSettings):
            raise TypeError(f"settings must be ExecutorSettings, got {type(settings).__name__}")
        self._missing = MissingItems(spec)
        self.spec = spec
        self._settings = settings
        self.chooser = chooser if chooser is not None else RetryChooser()
        self._mode: str | None = None
        self._reader = ViewReader(self.chooser.pattern)
        self._ledger = StepLedger(settings)
        self._course = Course()
        zones = SpeedZones(settings, slow_when_blind=self._missing.slow_when_blind)
        self._pursuit = Pursuit(settings, zones)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def settings(self) -> ExecutorSettings:
        """The executor's tuning values (its parts read them from this one object)."""
        return self._settings

    @property
    def reactions(self) -> Mapping[str, str]:
        """Required pattern -> the reaction in force: the spec's choice, else the default."""
        return self._missing.reactions

    @property
    def mode(self) -> str | None:
        """The name of the retry policy in force at the last step (None before the first)."""
        return self._mode

    # -- the tick -------------------------------------------------------------------------

    def step(self, view: CabinView, out: Outbox) -> None:
        seen = self._reader.read(view)
        choice = self.chooser.choose(seen.failures, seen.failures_missing)
        if choice.policy.name != self._mode:
            self._mode = choice.policy.name
            out.write("retry:mode", choice.policy.name)
        self._missing.report(seen.missing, seen.tick, seen.time, out)
        v, w = self._decide(seen, out, choice.policy)
        if self._missing.hold(seen.missing):
            v, w = HOLD
        out.command("drive", v=v, w=w)

    def _decide(self, seen: Seen, out: Outbox, policy: RetryPolicy) -> tuple[float, float]:
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
