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
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

import numpy as np
import shapely
import shapely.affinity
import structlog
from shapely.geometry.base import BaseGeometry

from cabins.executor.retry import FAILURE_PATTERN, RetryChooser, RetryPolicy
from cabins.warehouse.clearance import Solids, braking_path, path_geometry, walls_of
from cabins.warehouse.shapes import point, polyline
from cabins.warehouse.shapes import points as points_of
from cabins.warehouse.values import (
    ACCEPTANCE,
    ACTION_LAST,
    BATTERY,
    CARGO,
    DEFAULT_ACCEPTANCE,
    DEFAULT_LIMITS,
    PLAN,
    POSE,
    ROBOT_LIMITS,
    ROBOT_RADIUS,
    ROUTE,
    SPEED_ZONE_PREFIX,
    VELOCITY,
    WORLD_BOUNDS,
    Acceptance,
    ActionOutcome,
    KeysOf,
    LastRead,
    Point2,
    Pose,
    RobotLimits,
    Velocity,
    Zone,
    read_battery,
    read_bounds,
    route_points,
)
from runtime.cabin import Outbox
from runtime.cabin_map import Feature
from runtime.errors import SettingError
from runtime.pack import CabinView
from runtime.position import read_xy
from runtime.spec import ContextSpec

__all__ = [
    "EPISODE_QUIET_TICKS",
    "REACTIONS",
    "REANNOUNCE_TICKS",
    "RETRYABLE_REASONS",
    "Executor",
    "Step",
]

_log = structlog.get_logger(__name__)

StepKey = tuple[str, str, str]
"""(task, step id, action): the identity of a step across plan revisions."""

HOLD: Final = "stop:hold"
REACTIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "pose": (HOLD,),
    "velocity": (HOLD,),
    "plan": (HOLD,),
    "route": (HOLD,),
    "constraint:*": ("slow:speed_limits_unknown", HOLD),
    FAILURE_PATTERN: ("retry:conservative", HOLD),
}
"""Required pattern -> what the executor can do when it is missing (not merely absent): the
first unless the spec's ``[on_missing]`` picks another. Holding is always one of them."""

EPISODE_QUIET_TICKS: Final = 20
"""Ticks an item must stay visible (or merely absent) before a new episode is reported."""

REANNOUNCE_TICKS: Final = 40
"""Ticks after which a step reported done, still current in the plan, is reported again
(the event may have been lost, or missed by the planner)."""

RETRYABLE_REASONS: Final = frozenset(
    {"failed", "not_at_dock", "moving", "not_at_charger", "no_outcome"}
)
"""Outcome reasons worth another attempt; any other refusal is final at once."""

_ACTIONS: Final = frozenset({"go_to", "pick", "drop", "charge"})
_HOLD: Final = (0.0, 0.0)
_ROTATE_THRESHOLD: Final = 0.8  # rad: turn on the spot when the target is further off
_TURN_GAIN: Final = 2.0  # rad/s per rad of heading error when turning on the spot
_SPIN_SPEED: Final = 0.25  # m/s: turn on the spot only once slower than this
_FACE_ANGLE: Final = 0.2  # rad: held by an obstacle, turn to face a route further off
_BRAKE_FRACTION: Final = 0.8  # plan braking with this share of max_accel
_CREEP_SPEED: Final = 0.08  # m/s: the least speed while short of the target
_BACKTRACK: Final = 1.0  # m: how far back along the route the projection may jump
_SAMPLE_SPACING: Final = 0.1  # m between route samples checked against obstacles
_ZONE_MARGIN: Final = 0.3  # m looked ahead beyond the stopping distance for speed zones
_ZONE_SPEED_FACTOR: Final = 0.9  # drive at this share of a zone's limit
_OBSTACLE_GAP: Final = 0.3  # m of route left free before the point where it would touch
_CONTACT_MARGIN: Final = 0.03  # m: a route passing closer than this to an obstacle is blocked
_PASS_SPEED: Final = 0.3  # m/s when the route passes within obstacle_margin of an obstacle
_PREDICT_S: Final = 1.0  # s: a moving obstacle is taken to cover where it goes meanwhile
_REACTION_DT: Final = 0.1  # s: a command's delay, added to stopping distances
_MIN_LOOKAHEAD: Final = 0.4  # m: the pursuit's lookahead at a crawl (it grows with speed)
_CHORD_CLEARANCE: Final = 0.12  # m the disc keeps from solids on the way to its pursuit point
_CORNER_CUT: Final = 0.1  # m an arc through a route corner may cut inside it
_CORNER_SPEED: Final = 0.2  # m/s at a corner too sharp to take on an arc
_FULL_CLEARANCE: Final = 0.2  # m of clearance beyond which the route is driven at full speed
_NEAR_MARGIN: Final = 1e-6  # m: measured exactly a little beyond _FULL_CLEARANCE
_CLEAR_SPEED: Final = 0.3  # m/s: the least speed a narrow stretch is driven at
_PATH_SPACING: Final = 0.2  # m between route samples checked for clearance
_DT: Final = 0.05  # s: the tick the braking prediction steps by (20 Hz)
_TOUCH_GAP: Final = 0.02  # m: a straight way back to the route closer than this is cut off


Limits = RobotLimits
"""The robot's physical limits: ``RobotLimits`` of the warehouse contract (an old name)."""


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the planner's plan, as the executor reads it."""

    id: str
    action: str
    target: str | None
    target_xy: Point2 | None
    task: str | None
    status: str

    @property
    def key(self) -> StepKey:
        return (self.task or "", self.id, self.action)

    @classmethod
    def parse(cls, value: Any) -> Step | None:
        """A step from a plan entry, or None when it is not a well-formed step."""
        if not isinstance(value, Mapping):
            return None
        step_id, action = value.get("id"), value.get("action")
        if not isinstance(step_id, str) or action not in _ACTIONS:
            return None
        target = value.get("target")
        task = value.get("task")
        status = value.get("status", "pending")
        return cls(
            id=step_id,
            action=str(action),
            target=target if isinstance(target, str) else None,
            target_xy=read_xy(value.get("target_xy")),
            task=task if isinstance(task, str) else None,
            status=status if isinstance(status, str) else "pending",
        )


@dataclass(frozen=True, slots=True)
class _Plan:
    revision: int
    task: str | None
    step: Step | None


def _read_plan(value: Any) -> _Plan | None:
    """The plan's revision, task and current step (None when the plan is malformed)."""
    if not isinstance(value, Mapping):
        return None
    revision = value.get("revision", 0)
    steps = value.get("steps", ())
    if (
        isinstance(revision, bool)
        or not isinstance(revision, int)
        or not isinstance(steps, Sequence)
    ):
        return None
    task = value.get("task")
    task = task if isinstance(task, str) else None
    parsed = [s for s in (Step.parse(v) for v in steps) if s is not None]
    current = value.get("current")
    step: Step | None = None
    if isinstance(current, str):
        step = next((s for s in parsed if s.id == current), None)
    elif current is None and "current" not in value:
        step = next((s for s in parsed if s.status == "running"), None) or next(
            (s for s in parsed if s.status == "pending"), None
        )
    return _Plan(revision, task, step)


class _Track:
    """A polyline with arc length: projection, points at a distance, samples."""

    __slots__ = ("cum", "length", "points")

    def __init__(self, points: Sequence[Point2]) -> None:
        self.points = tuple(points)
        cum = [0.0]
        for (ax, ay), (bx, by) in zip(self.points, self.points[1:], strict=False):
            cum.append(cum[-1] + math.hypot(bx - ax, by - ay))
        self.cum = cum
        self.length = cum[-1]

    def project(self, x: float, y: float, s_min: float = -math.inf) -> float:
        """Arc length of the point of the track nearest (x, y), at or after ``s_min``."""
        best_d2, best_s = math.inf, 0.0
        pts, cum = self.points, self.cum
        for i in range(len(pts) - 1):
            if cum[i + 1] < s_min:
                continue
            (ax, ay), (bx, by) = pts[i], pts[i + 1]
            seg = cum[i + 1] - cum[i]
            t = 0.0
            if seg * seg > 0:  # a segment too short to square is a point
                t = ((x - ax) * (bx - ax) + (y - ay) * (by - ay)) / (seg * seg)
                t = min(1.0, max(0.0, t))
            px, py = ax + t * (bx - ax), ay + t * (by - ay)
            d2 = (x - px) ** 2 + (y - py) ** 2
            if d2 < best_d2:
                best_d2, best_s = d2, cum[i] + t * seg
        return best_s

    def point_at(self, s: float) -> Point2:
        pts, cum = self.points, self.cum
        if s <= 0 or len(pts) == 1:
            return pts[0]
        if s >= self.length:
            return pts[-1]
        i = min(bisect.bisect_right(cum, s) - 1, len(pts) - 2)
        seg = cum[i + 1] - cum[i]
        t = (s - cum[i]) / seg if seg > 0 else 0.0
        (ax, ay), (bx, by) = pts[i], pts[i + 1]
        return ax + t * (bx - ax), ay + t * (by - ay)

    def polyline(self, s0: float, s1: float) -> list[Point2]:
        """The track between arc lengths ``s0`` and ``s1`` (its vertices in between kept)."""
        out = [self.point_at(s0)]
        cum = self.cum  # non-decreasing: the vertices strictly between are one slice
        out.extend(self.points[bisect.bisect_right(cum, s0) : bisect.bisect_left(cum, s1)])
        out.append(self.point_at(s1))
        return out

    def samples(self, s0: float, s1: float, spacing: float) -> tuple[list[float], list[Point2]]:
        """Points every ``spacing`` metres from ``s0`` to ``s1`` (both ends included)."""
        count = max(1, math.ceil((s1 - s0) / spacing))
        arcs = [s0 + (s1 - s0) * k / count for k in range(count + 1)]
        return arcs, [self.point_at(s) for s in arcs]


@dataclass(slots=True)
class _Attempts:
    count: int = 0
    failed_tick: int | None = None
    final_revision: int | None = None


@dataclass(frozen=True, slots=True)
class _Done:
    """A step reported done: under which plan revision, when, at which attempt."""

    revision: int
    tick: int
    attempt: int


@dataclass(frozen=True, slots=True)
class _Pending:
    """A pick or drop commanded and not yet answered."""

    key: StepKey
    step: str
    action: str
    task: str | None
    attempt: int
    baseline: int
    tick: int


class Executor:
    """The executor cabin (see the module docstring)."""

    def __init__(
        self,
        spec: ContextSpec,
        *,
        lookahead: float = 0.8,
        arrive_fraction: float = 0.5,
        approach_distance: float = 2.0,
        approach_speed: float = 0.3,
        max_approach_gap: float = 1.5,
        obstacle_margin: float = 0.25,
        accept_margin: float = 0.05,
        blind_max_speed: float = 0.5,
        charge_until: float = 0.9,
        outcome_timeout_ticks: int = 40,
        chooser: RetryChooser | None = None,
    ) -> None:
        for name, value in (
            ("lookahead", lookahead),
            ("approach_distance", approach_distance),
            ("approach_speed", approach_speed),
            ("max_approach_gap", max_approach_gap),
            ("blind_max_speed", blind_max_speed),
        ):
            _require(name, value, lambda v: v > 0, "a number > 0")
        for name, value in (("obstacle_margin", obstacle_margin), ("accept_margin", accept_margin)):
            _require(name, value, lambda v: v >= 0, "a number >= 0")
        _require("arrive_fraction", arrive_fraction, lambda v: 0 < v <= 1, "in (0, 1]")
        _require("charge_until", charge_until, lambda v: 0 < v <= 1, "in (0, 1]")
        if (
            isinstance(outcome_timeout_ticks, bool)
            or not isinstance(outcome_timeout_ticks, int)
            or outcome_timeout_ticks < 1
        ):
            raise SettingError(
                f"outcome_timeout_ticks must be an int >= 1, got {outcome_timeout_ticks!r}"
            )
        _check_declared(spec)
        self.spec = spec
        self.reactions: Mapping[str, str] = {
            pattern: spec.on_missing.get(pattern, allowed[0])
            for pattern, allowed in REACTIONS.items()
        }
        """Required pattern -> the reaction in force: the spec's choice, else the default."""
        self.lookahead = float(lookahead)
        self.arrive_fraction = float(arrive_fraction)
        self.approach_distance = float(approach_distance)
        self.approach_speed = float(approach_speed)
        self.max_approach_gap = float(max_approach_gap)
        self.obstacle_margin = float(obstacle_margin)
        self.accept_margin = float(accept_margin)
        self.blind_max_speed = float(blind_max_speed)
        self.charge_until = float(charge_until)
        self.outcome_timeout_ticks = outcome_timeout_ticks
        self.chooser = chooser if chooser is not None else RetryChooser()
        # private state between ticks
        self._mode: str | None = None
        self._episodes: dict[str, tuple[str, int]] = {}  # pattern -> (reason, last tick)
        self._last_action_id = -1
        self._pending: _Pending | None = None
        self._charging: StepKey | None = None
        self._attempts: dict[StepKey, _Attempts] = {}
        self._done: dict[StepKey, _Done] = {}
        self._dropped: list[str] = []
        self._task: str | None = None
        self._revision = 0
        self._route: tuple[Point2, ...] | None = None
        self._track: _Track | None = None
        self._progress = 0.0
        self._zones: dict[str, tuple[int, Zone | None]] = {}  # key -> (seq, zone or bad)
        self._plan_value: Any = None
        self._plan: _Plan | None = None
        self._route_value: Any = None
        self._route_points: tuple[Point2, ...] | None = None
        self._limits = DEFAULT_LIMITS
        self._accept = DEFAULT_ACCEPTANCE
        self._lowest_limit = math.inf
        self._solids = Solids.of(())
        self._bounds_value: Any = None
        self._walls: tuple[tuple[str, BaseGeometry], ...] = ()
        self._cut_off = False
        self._off_route: tuple[tuple[Point2, ...], int] | None = None
        self._here_gap = 0.0
        self._here_xy: Point2 = (0.0, 0.0)
        self._limits_read: LastRead[RobotLimits] = LastRead()
        self._accept_read: LastRead[Acceptance] = LastRead()
        self._outcome_read: LastRead[ActionOutcome | None] = LastRead()
        self._keys_of = KeysOf()
        # shape id -> (shape, its bounds): the shape is held, so its id is not reused
        self._zone_boxes: dict[int, tuple[BaseGeometry, tuple[float, float, float, float]]] = {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        # an executor pickled before it saw solids (an older checkpoint) sees none yet
        self._solids = Solids.of(())
        self._bounds_value = None
        self._walls = ()
        self._cut_off = False
        self._off_route = None
        self._here_gap = 0.0
        self._here_xy = (0.0, 0.0)
        self._limits_read = LastRead()
        self._accept_read = LastRead()
        self._outcome_read = LastRead()
        self._zone_boxes = {}
        self._keys_of = KeysOf()
        for slot, value in state.items():
            setattr(self, slot, value)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def mode(self) -> str | None:
        """The name of the retry policy in force at the last step (None before the first)."""
        return self._mode

    # -- the tick -----------------------------------------------------------------------

    def step(self, view: CabinView, out: Outbox) -> None:
        choice = self.chooser.choose(view)
        if choice.policy.name != self._mode:
            self._mode = choice.policy.name
            out.write("retry:mode", choice.policy.name)
        self._report_missing(view, out)
        v, w = self._decide(view, out, choice.policy)
        if self._told_to_hold(view):
            v, w = _HOLD
        out.command("drive", v=v, w=w)

    def _told_to_hold(self, view: CabinView) -> bool:
        """Whether an item the spec says to hold for is missing (for a reason but absence)."""
        return any(
            reaction == HOLD and view.missing.get(pattern) not in (None, "absent")
            for pattern, reaction in self.reactions.items()
        )

    def _report_missing(self, view: CabinView, out: Outbox) -> None:
        episodes = self._episodes
        for pattern, reaction in self.reactions.items():
            reason = view.missing.get(pattern)
            if reason is not None and reason != "absent":
                episode = episodes.get(pattern)
                if episode is None or episode[0] != reason:
                    out.react(pattern, reaction, reason=reason, tick=view.tick)
                episodes[pattern] = (reason, view.tick)
            elif pattern in episodes and view.tick - episodes[pattern][1] > EPISODE_QUIET_TICKS:
                del episodes[pattern]

    def _decide(self, view: CabinView, out: Outbox, policy: RetryPolicy) -> tuple[float, float]:
        self._limits = self._limits_read.get(
            (view.get(ROBOT_LIMITS), view.get(ROBOT_RADIUS)), partial(RobotLimits.in_view, view)
        )
        self._accept = self._accept_read.get(
            (view.get(ACCEPTANCE),), partial(Acceptance.in_view, view)
        )
        self._solids = Solids.of(view.nearby_map, self._walls_in(view), last=self._solids)
        plan = self._read_plan(view.get(PLAN))
        if plan is not None:
            self._follow_plan(plan)
        self._poll_outcome(view, out, policy)
        pose = Pose.read(view.get(POSE))
        velocity = Velocity.read(view.get(VELOCITY))
        if pose is None or velocity is None or plan is None or plan.step is None:
            self._charging = None
            return _HOLD
        step = plan.step
        if step.status in ("done", "failed") or self._pending is not None:
            return _HOLD
        done = self._done.get(step.key)
        if done is not None:
            if plan.revision <= done.revision:
                if view.tick - done.tick >= REANNOUNCE_TICKS:
                    self._succeed(view, out, step.key, done.attempt)  # not heard: say again
                return _HOLD
            del self._done[step.key]  # a newer plan wants it again
        if step.action == "go_to":
            return self._go_to(view, out, step, pose, velocity.v, policy)
        return self._act(view, out, step, pose, velocity.v, policy)

    def _follow_plan(self, plan: _Plan) -> None:
        self._revision = plan.revision
        if plan.task != self._task:
            self._task = plan.task
            keep = plan.task or ""
            self._attempts = {k: a for k, a in self._attempts.items() if k[0] == keep}
            self._done = {k: r for k, r in self._done.items() if k[0] == keep}

    # -- outcomes -----------------------------------------------------------------------

    def _poll_outcome(self, view: CabinView, out: Outbox, policy: RetryPolicy) -> None:
        value = view.get(ACTION_LAST)
        last = self._outcome_read.get((value,), partial(ActionOutcome.read, value))
        if last is not None and last.id > self._last_action_id:
            self._last_action_id = last.id
            self._outcome(view, out, policy, last)
        pending = self._pending
        if pending is not None and view.tick - pending.tick > self.outcome_timeout_ticks:
            self._resolve(view, out, policy, pending, ok=False, reason="no_outcome")

    def _outcome(
        self, view: CabinView, out: Outbox, policy: RetryPolicy, last: ActionOutcome
    ) -> None:
        action, ok, reason = last.action, last.ok, last.reason
        pending = self._pending
        if (
            pending is not None
            and action == pending.action
            and last.id > pending.baseline
            and last.task == pending.task
        ):
            self._resolve(view, out, policy, pending, ok=ok, reason=reason)
        elif action == "charge" and self._charging is not None and not ok:
            key = self._charging
            self._charging = None
            record = self._attempts.setdefault(key, _Attempts())
            self._fail(view, out, policy, key, record, reason)

    def _resolve(
        self,
        view: CabinView,
        out: Outbox,
        policy: RetryPolicy,
        pending: _Pending,
        *,
        ok: bool,
        reason: str,
    ) -> None:
        self._pending = None
        if ok or (pending.action == "pick" and reason == "already_carrying"):
            if pending.action == "drop" and pending.task is not None:
                self._remember_drop(pending.task)
            self._succeed(view, out, pending.key, pending.attempt)
            return
        record = self._attempts.setdefault(pending.key, _Attempts(count=pending.attempt))
        self._fail(view, out, policy, pending.key, record, reason)

    def _succeed(self, view: CabinView, out: Outbox, key: StepKey, attempt: int) -> None:
        task, step, action = key
        out.emit(
            "action_done",
            {"action": action, "task": task or None, "step": step, "attempt": attempt},
        )
        self._done[key] = _Done(self._revision, view.tick, attempt)
        self._attempts.pop(key, None)

    def _fail(
        self,
        view: CabinView,
        out: Outbox,
        policy: RetryPolicy,
        key: StepKey,
        record: _Attempts,
        reason: str,
    ) -> None:
        task, step, action = key
        final = reason not in RETRYABLE_REASONS or policy.exhausted(record.count)
        out.emit(
            "action_failed",
            {
                "action": action,
                "task": task or None,
                "step": step,
                "attempt": record.count,
                "reason": reason,
                "final": final,
            },
        )
        record.failed_tick = view.tick
        if final:
            record.final_revision = self._revision

    def _remember_drop(self, task: str) -> None:
        if task not in self._dropped:
            self._dropped.append(task)
            del self._dropped[:-32]

    # -- steps --------------------------------------------------------------------------

    def _go_to(
        self,
        view: CabinView,
        out: Outbox,
        step: Step,
        pose: Pose,
        speed: float,
        policy: RetryPolicy,
    ) -> tuple[float, float]:
        route = self._read_route(view.get(ROUTE))
        if not route:
            return _HOLD
        target = step.target_xy or route[-1]
        tolerance = self._accept.dock_tolerance * self.arrive_fraction
        if math.hypot(target[0] - pose.x, target[1] - pose.y) <= tolerance:
            self._succeed(view, out, step.key, 1)
            return _HOLD
        track = self._track_for(route)
        s = track.project(pose.x, pose.y, self._progress - _BACKTRACK)
        self._progress = s
        cap = math.inf
        if track.length - s < self.approach_distance and policy.approach_speed_factor < 1:
            cap = policy.approach_speed_factor * self._limits.max_speed
        self._cut_off = False
        command = self._pursue(view, track, s, pose, speed, target, tolerance, cap)
        if self._cut_off and self._off_route != (route, self._revision):
            # No straight way back to the route is clear: the planner must route again
            # from here. Reported once per route.
            self._off_route = (route, self._revision)
            record = self._attempts.setdefault(step.key, _Attempts(count=1))
            self._fail(view, out, policy, step.key, record, "off_route")
        return command

    def _act(
        self,
        view: CabinView,
        out: Outbox,
        step: Step,
        pose: Pose,
        speed: float,
        policy: RetryPolicy,
    ) -> tuple[float, float]:
        key = step.key
        record = self._attempts.get(key)
        if record is not None and record.final_revision is not None:
            if self._revision <= record.final_revision:
                return _HOLD  # attempts spent: the planner re-plans
            record = self._attempts[key] = _Attempts()
        if self._already_done(view, step):
            self._charging = None
            self._succeed(
                view, out, key, record.count if record is not None and record.count else 1
            )
            return _HOLD
        if (
            record is not None
            and record.failed_tick is not None
            and view.tick < record.failed_tick + max(1, policy.backoff_ticks)
        ):
            return _HOLD  # at least a tick, so that the policy has seen the failure
        target = step.target_xy
        if target is None:
            return _HOLD
        accept = self._accept
        gap = math.hypot(target[0] - pose.x, target[1] - pose.y)
        reach = max(accept.dock_tolerance - self.accept_margin, accept.dock_tolerance / 2)
        if gap <= reach:
            if abs(speed) >= accept.max_speed:
                self._charging = None
                return _HOLD  # brake first
            self._command(view, out, step, key, record)
            return _HOLD
        self._charging = None
        if gap > self.max_approach_gap:
            return _HOLD  # too far for a direct approach: the planner must route us there
        track = _Track((pose.xy, target))
        cap = self.approach_speed * policy.approach_speed_factor
        return self._pursue(view, track, 0.0, pose, speed, target, reach / 2, cap)

    def _already_done(self, view: CabinView, step: Step) -> bool:
        if step.action == "pick":
            return step.task is not None and view.get(CARGO) == step.task
        if step.action == "drop":
            return step.task is not None and step.task in self._dropped
        battery = read_battery(view.get(BATTERY))
        return battery is not None and battery >= self.charge_until

    def _command(
        self, view: CabinView, out: Outbox, step: Step, key: StepKey, record: _Attempts | None
    ) -> None:
        if record is None:
            record = self._attempts[key] = _Attempts()
        if step.action == "charge":
            if self._charging != key:
                self._charging = key
                record.count += 1
            out.command("charge", charger=step.target)
            return
        record.count += 1
        out.command(step.action, task=step.task)
        self._pending = _Pending(
            key, step.id, step.action, step.task, record.count, self._last_action_id, view.tick
        )

    # -- driving ------------------------------------------------------------------------

    def _walls_in(self, view: CabinView) -> tuple[tuple[str, BaseGeometry], ...]:
        value = view.get(WORLD_BOUNDS)
        if value is not self._bounds_value:
            self._bounds_value, self._walls = value, walls_of(read_bounds(value))
        return self._walls

    def _read_plan(self, value: Any) -> _Plan | None:
        if value is not self._plan_value:  # values are frozen: the same object, the same plan
            self._plan_value, self._plan = value, _read_plan(value)
        return self._plan

    def _read_route(self, value: Any) -> tuple[Point2, ...] | None:
        if value is not self._route_value:
            self._route_value, self._route_points = value, route_points(value)
        return self._route_points

    def _track_for(self, route: tuple[Point2, ...]) -> _Track:
        if self._track is None or route != self._route:
            self._route = route
            self._track = _Track(route)
            self._progress = -math.inf
        return self._track

    def _pursue(
        self,
        view: CabinView,
        track: _Track,
        s: float,
        pose: Pose,
        speed: float,
        target: Point2,
        tolerance: float,
        cap: float,
    ) -> tuple[float, float]:
        """Pure pursuit along ``track`` from arc length ``s``: the (v, w) to command."""
        limits = self._limits
        x, y, theta = pose.x, pose.y, pose.theta
        (gx, gy), chord_gap = self._pursuit_point(track, s, pose, speed)
        if chord_gap < _TOUCH_GAP:
            self._cut_off = True
            dx, dy = gx - x, gy - y
            heading = math.atan2(dy, dx)
            alpha = (heading - theta + math.pi) % (2 * math.pi) - math.pi
            return self._brake(pose, speed, alpha) if abs(speed) > _SPIN_SPEED else _HOLD
        dx, dy = gx - x, gy - y
        cos_t, sin_t = math.cos(theta), math.sin(theta)
        lx, ly = cos_t * dx + sin_t * dy, -sin_t * dx + cos_t * dy
        alpha = math.atan2(ly, lx)
        if abs(alpha) > _ROTATE_THRESHOLD:
            if abs(speed) > _SPIN_SPEED:
                return self._brake(pose, speed, alpha)
            return 0.0, _clamp(_TURN_GAIN * alpha, limits.max_turn_rate)
        d2 = lx * lx + ly * ly
        kappa = 2.0 * ly / d2 if d2 > 1e-12 else 0.0
        brake = _BRAKE_FRACTION * limits.max_accel
        remaining = max(track.length - s, math.hypot(target[0] - x, target[1] - y))
        v = min(
            limits.max_speed,
            cap,
            max(_CREEP_SPEED, math.sqrt(2.0 * brake * max(0.0, remaining - tolerance / 2))),
        )
        v *= math.cos(alpha)
        if abs(kappa) * v > limits.max_turn_rate:
            v = limits.max_turn_rate / abs(kappa)
        moving = max(abs(speed), v)
        stopping = moving * moving / (2.0 * brake) + moving * _REACTION_DT
        v = min(v, self._zone_cap(view, track, s, (x, y), stopping))
        obstacle_cap = self._obstacle_cap(view, track, s, pose, stopping, limits.radius, brake)
        v = min(v, obstacle_cap, self._path_cap(track, s, brake))
        v = max(0.0, v)
        if (
            v == 0.0
            and obstacle_cap == 0.0
            and abs(alpha) > _FACE_ANGLE
            and abs(speed) <= _SPIN_SPEED
        ):
            # Stopped for an obstacle its heading points at, while the route leads off to
            # the side (away from a mover it waited beside, say): turn on the spot to face
            # the route, which sweeps no new ground; ahead along the route may be clear.
            return 0.0, _clamp(_TURN_GAIN * alpha, limits.max_turn_rate)
        return v, _clamp(v * kappa, limits.max_turn_rate)

    def _pursuit_point(
        self, track: _Track, s: float, pose: Pose, speed: float
    ) -> tuple[Point2, float]:
        """The point of ``track`` to steer for, and the clearance of the straight way to it:
        ``lookahead`` ahead at speed, less at a crawl, and nearer still while the straight
        way to it would bring the disc closer than ``_CHORD_CLEARANCE`` to a solid (so that
        a corner is never cut)."""
        look = max(_MIN_LOOKAHEAD, min(self.lookahead, 0.3 + 0.4 * abs(speed)))
        solids = self._solids
        here = pose.xy
        if not solids:
            return track.point_at(s + look), math.inf
        radius = self._limits.radius
        now = solids.gap(point(*here)) - radius
        self._here_gap = now
        self._here_xy = here
        need = min(_CHORD_CLEARANCE, now - 0.01)
        target = track.point_at(s + look)
        reach = math.dist(here, target)
        if now - reach >= need:  # no solid near enough to come within need of the way there
            return target, now - reach
        best, best_gap = track.point_at(s), -math.inf
        for fraction in (1.0, 0.5, 0.25, 0.1):
            target = track.point_at(s + look * fraction)
            gap = solids.gap(path_geometry([here, target])) - radius
            if gap >= need:
                return target, gap
            if gap > best_gap:
                best, best_gap = target, gap
        return best, best_gap

    def _brake(self, pose: Pose, speed: float, alpha: float) -> tuple[float, float]:
        """Brake for a target far off the heading: turning towards it on the way when that
        path keeps clear of solids at least as well as braking straight, else straight."""
        limits = self._limits
        turn = _clamp(_TURN_GAIN * alpha, limits.max_turn_rate)
        if not self._solids:
            return 0.0, turn
        gaps = []
        for w in (turn, 0.0):
            path = braking_path(
                pose.x, pose.y, pose.theta, speed, w, accel=limits.max_accel, dt=_DT, extra_ticks=0
            )
            gaps.append(self._solids.gap(path_geometry(path)) - limits.radius)
        turning, straight = gaps
        return (0.0, turn) if turning >= min(_CHORD_CLEARANCE, straight) else _HOLD

    def _path_cap(self, track: _Track, s: float, brake: float) -> float:
        """The speed from which the robot can still slow down in time for each sharp
        corner of the route ahead and for each stretch that passes close to a solid."""
        limits = self._limits
        horizon = limits.max_speed**2 / (2.0 * brake) + 0.5
        end = min(track.length, s + horizon)
        cap = math.inf
        pts, cum = track.points, track.cum
        for i in range(1, len(pts) - 1):
            if cum[i] <= s or cum[i] > end:
                continue
            corner = _corner_speed(_turn_angle(pts[i - 1], pts[i], pts[i + 1]), limits)
            cap = min(cap, math.sqrt(corner * corner + 2.0 * brake * max(0.0, cum[i] - s - 0.1)))
        # every sample is within ``end - s`` (plus the robot's offset from the route) of
        # the robot: when the robot is far enough from every solid, none is near one
        offset = math.dist(track.point_at(s), self._here_xy)
        if self._solids and end > s and self._here_gap - (end - s) - offset < _FULL_CLEARANCE:
            arcs, points = track.samples(s, end, _PATH_SPACING)
            # a sample _FULL_CLEARANCE or more from every solid allows full speed: only
            # the nearer ones need their exact gap (the margin covers the rounding of
            # ``gap - radius``)
            near = _FULL_CLEARANCE + limits.radius + _NEAR_MARGIN
            gaps = self._solids.gaps_within(points, near) - limits.radius
            for arc, gap in zip(arcs, gaps.tolist(), strict=True):
                allowed = max(_CLEAR_SPEED, limits.max_speed * min(1.0, gap / _FULL_CLEARANCE))
                if allowed < limits.max_speed:
                    cap = min(cap, math.sqrt(allowed * allowed + 2.0 * brake * (arc - s)))
        return cap

    def _zone_cap(
        self, view: CabinView, track: _Track, s: float, here: Point2, stopping: float
    ) -> float:
        """The speed limit of the zones the robot is in or enters within a stopping distance."""
        zones = self._read_zones(view)
        cap = math.inf
        reason = view.missing.get("constraint:*")
        if (
            reason is not None
            and reason != "absent"
            and self.reactions["constraint:*"] == "slow:speed_limits_unknown"
        ):
            cap = min(self.blind_max_speed, self._lowest_limit)
        if not zones:
            return cap
        ahead = [here, *track.polyline(s, min(track.length, s + stopping + _ZONE_MARGIN))]
        xs, ys = [p[0] for p in ahead], [p[1] for p in ahead]
        low_x, low_y, high_x, high_y = min(xs), min(ys), max(xs), max(ys)
        path: BaseGeometry | None = None
        for shape, limit in zones:
            if limit * _ZONE_SPEED_FACTOR >= cap:
                continue
            minx, miny, maxx, maxy = self._bounds_of(shape)
            if high_x < minx or low_x > maxx or high_y < miny or low_y > maxy:
                continue  # the boxes do not meet, so neither do the path and the zone
            if path is None:
                path = polyline(ahead)
            if shape.intersects(path):
                cap = limit * _ZONE_SPEED_FACTOR
        return cap

    def _bounds_of(self, shape: BaseGeometry) -> tuple[float, float, float, float]:
        """A zone's bounding box, kept while the zone is the same shape object."""
        known = self._zone_boxes.get(id(shape))
        if known is None or known[0] is not shape:
            if len(self._zone_boxes) >= 256:
                self._zone_boxes.clear()
            known = self._zone_boxes[id(shape)] = (shape, tuple(shape.bounds))
        return known[1]

    def _read_zones(self, view: CabinView) -> list[tuple[BaseGeometry, float]]:
        """The speed zones in view, (shape, limit); each value is parsed once."""
        found: list[tuple[BaseGeometry, float]] = []
        for key in self._keys_of(view, SPEED_ZONE_PREFIX):
            item = view.provenance[key]
            cached = self._zones.get(key)
            if cached is not None and cached[0] == item.seq:
                zone = cached[1]
            else:
                zone = _speed_zone(key, item.value)
                self._zones[key] = (item.seq, zone)
                if zone is not None and zone.max_speed is not None:
                    limit = zone.max_speed * _ZONE_SPEED_FACTOR
                    self._lowest_limit = min(self._lowest_limit, limit)
            if zone is not None and zone.max_speed is not None:
                found.append((zone.shape, zone.max_speed))
        return found

    def _obstacle_cap(
        self,
        view: CabinView,
        track: _Track,
        s: float,
        pose: Pose,
        stopping: float,
        radius: float,
        brake: float,
    ) -> float:
        """The speed that stops short of the first obstacle the route ahead runs into.

        An obstacle counts with the ground it covers in the next ``_PREDICT_S`` seconds
        at its sensed velocity, either way along it (it may turn back). A route that would
        bring the robot's disc within ``_CONTACT_MARGIN`` of that is a conflict: stop before
        it. One that only passes within ``obstacle_margin`` of it is passed at
        ``_PASS_SPEED``. Only stretches where the route closes in on the obstacle count,
        unless the obstacle is ahead of the robot: driving away from something behind
        cannot hit it.
        """
        obstacles = [f for f in view.nearby_map if f.kind == "obstacle"]
        if not obstacles:
            return math.inf
        x, y, theta = pose.x, pose.y, pose.theta
        end = min(track.length, s + stopping + radius + self.obstacle_margin + _OBSTACLE_GAP)
        arcs, points = track.samples(s, end, _SAMPLE_SPACING)
        arcs.insert(0, s)
        points.insert(0, (x, y))
        grid = points_of(np.asarray(points, dtype=float))
        hard, soft = radius + _CONTACT_MARGIN, radius + self.obstacle_margin
        cap = math.inf
        cos_t, sin_t = math.cos(theta), math.sin(theta)
        for feature in obstacles:
            centre = feature.geometry.centroid
            gaps = shapely.distance(grid, _swept(feature))
            closing = gaps <= gaps[0] + 1e-9
            if cos_t * (centre.x - x) + sin_t * (centre.y - y) < 0:
                closing[0] = False
                closing &= gaps < gaps[0]
            hits = np.flatnonzero(closing & (gaps < hard))
            if hits.size:
                free = arcs[int(hits[0])] - s - _OBSTACLE_GAP
                cap = min(cap, math.sqrt(2.0 * brake * free) if free > 0 else 0.0)
            elif np.any(closing & (gaps < soft)):
                cap = min(cap, _PASS_SPEED)
        return cap


# -- helpers -------------------------------------------------------------------------------


def _check_declared(spec: ContextSpec) -> None:
    """Refuse a spec that declares a reaction this cabin cannot carry out."""
    wrong = []
    for pattern, reaction in spec.on_missing.items():
        allowed = REACTIONS.get(pattern)
        if allowed is None:
            wrong.append(
                f"{pattern!r} = {reaction!r} (the executor has no reaction for "
                f"{pattern!r}; it has them for {', '.join(map(repr, REACTIONS))})"
            )
        elif reaction not in allowed:
            wrong.append(
                f"{pattern!r} = {reaction!r} (for {pattern!r} it can do "
                f"{' or '.join(map(repr, allowed))})"
            )
    if wrong:
        raise SettingError(
            f"spec {spec.name!r} declares reactions the executor does not have: " + "; ".join(wrong)
        )


def _require(name: str, value: object, ok: Any, what: str) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not ok(value)
    ):
        raise SettingError(f"{name} must be {what}, got {value!r}")


def _speed_zone(key: str, value: Any) -> Zone | None:
    """The speed zone of a ``constraint:speed:*`` value (None, logged, if malformed)."""
    zone = Zone.read(key, value)
    if zone is None:
        _log.warning("executor.bad_speed_zone", key=key, value=repr(value))
    return zone


def _swept(feature: Feature) -> BaseGeometry:
    """The obstacle's geometry, swept along its sensed velocity for ``_PREDICT_S`` and as
    far the other way, in case it turns back."""
    props = feature.props
    vx, vy = props.get("vx", 0.0), props.get("vy", 0.0)
    if (
        not all(isinstance(c, (int, float)) and math.isfinite(c) for c in (vx, vy))
        or math.hypot(vx, vy) < 0.05
    ):
        return feature.geometry
    # both ways: a forklift the robot follows down an aisle may turn back at its loop's end
    moved = shapely.affinity.translate(feature.geometry, vx * _PREDICT_S, vy * _PREDICT_S)
    back = shapely.affinity.translate(feature.geometry, -vx * _PREDICT_S, -vy * _PREDICT_S)
    return shapely.convex_hull(shapely.GeometryCollection([feature.geometry, moved, back]))


def _clamp(value: float, limit: float) -> float:
    return max(-limit, min(limit, value))


def _turn_angle(a: Point2, b: Point2, c: Point2) -> float:
    """How sharply a route turns at ``b`` (0: straight on, pi: straight back)."""
    h1 = math.atan2(b[1] - a[1], b[0] - a[0])
    h2 = math.atan2(c[1] - b[1], c[0] - b[0])
    return abs((h2 - h1 + math.pi) % (2 * math.pi) - math.pi)


def _corner_speed(angle: float, limits: RobotLimits) -> float:
    """The speed a corner of ``angle`` can be taken at: on an arc that cuts it by at most
    ``_CORNER_CUT``, turning at 80% of the turn rate; slowly enough to turn on the spot
    when it is sharper than the pursuit turns on an arc."""
    if angle >= _ROTATE_THRESHOLD:
        return _CORNER_SPEED
    if angle < 1e-3:
        return limits.max_speed
    radius = _CORNER_CUT / (1.0 / math.cos(angle / 2.0) - 1.0)
    return max(_CORNER_SPEED, min(limits.max_speed, 0.8 * limits.max_turn_rate * radius))
