"""The route: to the current go-to step's target, past the movers or waiting for them.

``RouteKeeper`` decides each tick which route the robot follows, and writes ``route``
when it changes:

- none while the planner holds (no goal, pose, safety items, bounds, or constraints
  with none ever seen) or has no plan; the route it has while the robot acts at a
  target (pick, drop, charge);
- a route is planned once per step, plan revision and layout, keeping the robot's
  radius and clearance from shelves and forbidden zones (and from the speed zones last
  seen while the constraints are missing); a step no route was found for is tried
  again after ``route_retry_interval`` s (with a ``no_route`` alarm the first time);
- it re-plans (rate limited) when an obstacle comes into the corridor near the route
  ahead; one the route was planned around counts again only once it moved;
- a route starts where the robot can depart from at its speed (``departure``) and
  keeps clear of remembered blocked spots when that is not much longer
  (``BlockedSpots.route``);
- it passes moving obstacles (people, forklifts) or waits for them: the route keeps
  clear of where they stand only when that is a pass, at most ``pass_detour`` times
  the way plus ``pass_slack`` metres; a longer way round, or none, is not taken, and
  the route keeps to the way (the shortest clear of shelves and zones), before them on
  which the executor stops and waits (a ``wait_for_obstacles`` event). Treating each
  re-plan's snapshot of the movers as walls sent the robot round the other end of a
  shelf after every re-plan, for ever, when they walked the aisle through its dock;
- round a single lane a mover contests it takes the other way when that is not much
  longer and the battery covers it (``Energy.covers``), else waits at the lane's entry
  (``lanes``) while the battery covers the way on and a charger after it: then a robot
  going to charge goes on, and one going elsewhere charges first (a
  ``lane_wait_drained`` re-plan); the other way is a re-route on purpose, and the
  watchdog measures the way left afresh along it (``take_rerouted``: on hard:31 the
  100 m other way round a 25 m lane was 80 s of driving no nearer than the lane's way,
  and ended in a ``stalled`` alarm);
- in a stand-off it gives way (``StandOff``; a ``give_way`` event), then goes round the
  movers however long the way, until the next step is done, when the battery covers it
  and a charger after it (on its way to a charger, without the reserve:
  ``Energy.covers``); when the battery does not
  cover the way aside, back to the step's target and a charger after it
  (``Energy.covers_detour``), it charges first instead (a ``give_way_drained`` re-plan),
  but on its way to a charger it gives way.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

import shapely
from shapely.geometry import LineString, Point
from shapely.geometry.base import BaseGeometry

from cabins.planner.blocked_spots import BlockedSpots
from cabins.planner.departure import departure
from cabins.planner.energy import Energy
from cabins.planner.lanes import LaneGuard, LaneKey
from cabins.planner.layout import Layout
from cabins.planner.seen import Seen
from cabins.planner.settings import PlannerSettings
from cabins.planner.shrink import shrunk
from cabins.planner.standoff import StandOff
from cabins.planner.steps import Replan
from cabins.planner.tracks import Tracks
from cabins.warehouse.routing import Point2, Route, RoutePlanner
from cabins.warehouse.values import ROUTE
from runtime.agent.plan import Plan, PlanStep, ReplanTrigger
from runtime.cabin import Outbox
from runtime.position import read_xy

__all__ = ["RouteKeeper"]

_AT_TARGET: Final = frozenset({"pick", "drop", "charge"})
_EMPTY_ROUTE: Route = ()
_OTHER_WAY: Final = 1.0  # m longer than the way at least that the other way round a lane is
_ENERGY_CHECK_S: Final = 2.0  # s between two checks that the battery affords a lane wait

_Found = tuple[Route | None, dict[str, Any] | None]  # a route, and what memory changed in it


@dataclass(frozen=True, slots=True)
class _Leg:
    """A go-to step routed this tick: by ``router``, from where ``seen`` shows the robot,
    to ``target``, clear of ``fixed`` (the speed zones while the constraints are
    missing); ``progress`` counts the steps done."""

    router: RoutePlanner
    seen: Seen
    task: str | None
    step: PlanStep
    target: Point2
    fixed: list[BaseGeometry]
    progress: int


class RouteKeeper:
    """The route the robot follows (see the module docstring), planned on ``layout``,
    clear of ``spots`` where it can be, giving way in a ``standoff``; ``energy`` checks
    that a long way round is affordable (None: any is)."""

    def __init__(
        self,
        settings: PlannerSettings,
        *,
        layout: Layout,
        spots: BlockedSpots,
        standoff: StandOff,
        energy: Energy | None = None,
        tracks: Tracks | None = None,
    ) -> None:
        self._settings = settings
        self._energy = energy
        self._layout = layout
        self._spots = spots
        self._standoff = standoff
        self._route: Route | None = None  # as written
        self._line: BaseGeometry | None = None  # the written route as a line
        self._key: tuple[Any, ...] | None = None  # what the route was planned for
        self._failed_at: float | None = None  # when no route was found for the key
        self._last_obstacle_replan = -math.inf
        self._planned_obstacles: dict[str, BaseGeometry] = {}  # id -> centre when routed
        self._waiting = False  # the route keeps to the way through moving obstacles
        self._lanes = LaneGuard(settings, tracks)
        self._energy_checked = -math.inf  # when the battery was last checked in a lane wait
        self._rerouted = False  # took the other way round a lane, since take_rerouted
        self._give_way_short: str | None = None  # why the battery does not afford a give-way

    @property
    def route(self) -> Route | None:
        """The route written last (None before the first)."""
        return self._route

    @property
    def line(self) -> BaseGeometry | None:
        """The route written last, as a line (None for fewer than two points)."""
        return self._line

    @property
    def waiting(self) -> bool:
        """Whether the route keeps to the way through moving obstacles, to wait for them."""
        return self._waiting

    def lane_held(self, seen: Seen) -> bool:
        """Whether the robot waits for a single lane at its entry or beside it (not on its
        way there: ``LaneGuard.approaching``)."""
        return self._lanes.waiting and not self._lanes.approaching(seen)

    def take_rerouted(self) -> bool:
        """Whether the route took the other way round a single lane since the last call
        (once): the way left to the target is measured afresh along it (the watchdog's
        ``rebase``), as after a re-route the watchdog asked for."""
        rerouted, self._rerouted = self._rerouted, False
        return rerouted

    def take_lane_blocked(self) -> tuple[str, ...] | None:
        """The movers of a dead end waited for ``lane_wait_s`` already, once
        (``LaneGuard.take_blocked``)."""
        return self._lanes.take_blocked()

    @property
    def lane_excused(self) -> bool:
        """Whether the robot waits for a single lane and the watchdog should not count it
        (``LaneGuard.excused``)."""
        return self._lanes.excused

    def forget(self) -> None:
        """The plan changed: route again."""
        self._key = None

    def desired(
        self,
        seen: Seen,
        hold: str | None,
        *,
        plan: Plan | None,
        task: str | None,
        progress: int,
        replan: Replan,
        out: Outbox,
    ) -> Route:
        """The route for this tick: kept, planned again, or none (see the module
        docstring); ``progress`` counts the steps done, ``replan`` re-plans the task."""
        if hold is not None or plan is None or plan.is_done:
            self._key = None
            return _EMPTY_ROUTE
        current = plan.current
        if current is None or current.action in _AT_TARGET:
            return self._route or _EMPTY_ROUTE
        again = partial(self.desired, seen, hold, task=task, progress=progress, replan=replan)
        router = self._layout.router()
        lanes = (task, current.target)  # lanes are kept by the target, not the step
        held = self._lanes.hold(seen, lanes, router, self._layout.reach)
        self._say_wait(task, current, out)
        if held is not None and self._lanes.waiting:
            ended, replanned = self._drained_wait(seen, current, lanes, replan, out)
            if replanned is not None:  # charging first
                return again(plan=replanned, out=out)
            held = None if ended else held
        if isinstance(held, tuple) and not (
            self._standoff.giving_way is not None and self._lanes.approaching(seen)
        ):
            return held  # waiting at a single lane's entry, or beside it
        # (held up on its way to the spot beside the entry: it gives way first, below)
        if held is None:
            self._key = None  # the wait is over: route again
        blocking = "constraint:*" in seen.missing
        if self._standoff.ends(seen, progress):
            self._key = None
        key = (task, current.id, plan.revision, self._layout.router_key, blocking)
        if key == self._key:
            if self._failed_at is not None:
                if seen.time - self._failed_at < self._settings.route_retry_interval:
                    return _EMPTY_ROUTE
            elif (trigger := self._obstacle_ahead(seen)) is not None:
                plan = replan(trigger, seen, out)
                assert plan is not None
                key = (task, current.id, plan.revision, self._layout.router_key, blocking)
            else:
                return self._route or _EMPTY_ROUTE
        target = read_xy(current.data.get("target_xy"))
        if target is None or router is None:
            return _EMPTY_ROUTE
        fixed = list(self._layout.constraints.values()) if blocking else []
        fixed += self._lanes.avoided(lanes)
        route = self._plan(_Leg(router, seen, task, current, target, fixed, progress), key, out)
        replanned = self._drained_give_way(seen, current, replan, out)
        return route if replanned is None else again(plan=replanned, out=out)

    def _plan(self, leg: _Leg, key: tuple[Any, ...], out: Outbox) -> Route:
        """Plan the route of ``leg`` (for ``key``): aside in a stand-off, else past the
        movers or up to them, and from where the robot can depart."""
        seen, step = leg.seen, leg.step
        assert seen.pose is not None
        if self._standoff.giving_way is not None:
            aside = self._aside(leg, out)
            if aside is not None:
                self._key = key
                self._failed_at = None
                return aside
            if self._give_way_short is not None:
                return _EMPTY_ROUTE  # charging first instead (``desired`` re-plans)
        reach = self._layout.reach
        movers = [shrunk(f.geometry, (seen.pose, leg.target), reach) for f in seen.obstacles]
        around = [*leg.fixed, *(g for g in movers if g is not None)]
        start, prefix = departure(leg.router, seen, around, self._line)
        route, recalled = self._route_from(leg, start, prefix, around)
        self._waiting = False
        if len(around) > len(leg.fixed):
            route, recalled = self._pass_or_wait(leg, start, prefix, (route, recalled), out)
        elif route is not None and self._lanes.ghosts(seen):
            # no mover in sight, but one out of sight may be in a lane of the way
            lane = self._single_lane(leg, start, prefix, (route, recalled), out)
            if lane is not None:
                route, recalled = lane
        if recalled is not None:
            out.emit("recalled", {"task": leg.task, "step": step.id, **recalled}, tags=("memory",))
        self._planned_obstacles = {f.id: f.geometry.centroid for f in seen.obstacles}
        self._key = key
        if route is None and len(leg.fixed) > len(self._fixed_zones(leg)):
            # the lanes kept off for this target shut every way to it: keep off them no more
            self._lanes.forget()
            return self._plan(dataclasses.replace(leg, fixed=self._fixed_zones(leg)), key, out)
        if route is None:
            if self._failed_at is None:
                out.emit(
                    "alarm",
                    {
                        "kind": "no_route",
                        "level": "warn",
                        "task": leg.task,
                        "step": step.id,
                        "target": step.target,
                        "from": seen.pose,
                    },
                    tags=("alarm",),
                )
            self._failed_at = seen.time
            return _EMPTY_ROUTE
        self._failed_at = None
        return route

    def _say_wait(self, task: str | None, current: PlanStep, out: Outbox) -> None:
        """What the lane wait this tick has to say: a ``long_lane_wait`` warning, once per
        target, when the robot has waited for its lanes as long as the watchdog allows
        anything else (``LaneGuard.take_long``); a ``let_pass`` event for each mover
        coming at the way in that a through lane's wait, out of patience, began to let
        pass first (``LaneGuard.take_let_pass``), with the seconds waited by then: the
        wait lasts up to ``_PASSING_S`` longer than ``lane_wait_s``, and this says why."""
        long = self._lanes.take_long(self._settings.watchdog_s)
        if long is not None:
            out.emit(
                "alarm",
                {
                    "kind": "long_lane_wait",
                    "level": "warn",
                    "task": task,
                    "step": current.id,
                    "target": current.target,
                    "movers": long.movers,
                    "seconds": round(long.seconds, 3),
                    "dead_end": long.dead_end,
                },
                tags=("alarm",),
            )
        for let_pass in self._lanes.take_let_pass():
            lane = let_pass.lane
            out.emit(
                "let_pass",
                {
                    "task": task,
                    "step": current.id,
                    "mover": let_pass.mover,
                    "lane": [round(lane.start, 3), round(lane.end, 3)],
                    "waited": round(let_pass.seconds, 3),
                    "movers": list(lane.movers),
                },
                tags=("plan",),
            )

    def _drained_wait(
        self, seen: Seen, current: PlanStep, lanes: LaneKey, replan: Replan, out: Outbox
    ) -> tuple[bool, Plan | None]:
        """End the lane wait on ``lanes`` when the battery cannot afford it
        (``_short_in_wait``): whether it ended, and the plan re-planned to charge first
        (None: going to a charger already, it goes on behind the mover)."""
        short = self._short_in_wait(seen, current)
        if short is None:
            return False, None
        self._lanes.stop_waiting(lanes)
        if current.target in seen.charger_places():
            return True, None
        self._key = None  # charging first: route to the charger
        return True, replan(ReplanTrigger("lane_wait_drained", current.id, short), seen, out)

    def _drained_give_way(
        self, seen: Seen, current: PlanStep, replan: Replan, out: Outbox
    ) -> Plan | None:
        """The plan re-planned to charge first when the battery did not cover the give-way
        the route wanted this tick (``_aside``), once; else None."""
        short, self._give_way_short = self._give_way_short, None
        if short is None:
            return None
        self._key = None  # charging first: route to the charger
        return replan(ReplanTrigger("give_way_drained", current.id, short), seen, out)

    def _short_in_wait(self, seen: Seen, current: PlanStep) -> str | None:
        """Why the battery no longer affords waiting at a lane (checked every
        ``_ENERGY_CHECK_S``), or None: waiting drains it too, and on a tight battery the
        robot waited at a lane on its way to the charger until the battery was flat
        (hard:0). On the way to a charger: the battery does not cover the way on to it (it
        waits no more, and goes on behind the mover); elsewhere: it does not cover the way
        on and a charger after it (``Energy.short``: it charges first)."""
        if self._energy is None or seen.time - self._energy_checked < _ENERGY_CHECK_S:
            return None
        self._energy_checked = seen.time
        target, metres = read_xy(current.data.get("target_xy")), self._lanes.way_left(seen)
        if target is None or metres is None:
            return None
        if current.target in seen.charger_places():
            if self._energy.covers(seen, metres, target):
                return None
            return f"battery {seen.battery} short of the {metres:.0f} m on to the charger"
        return self._energy.short(seen, [target])

    def _fixed_zones(self, leg: _Leg) -> list[BaseGeometry]:
        """What a leg keeps clear of but the lanes kept off: the speed zones last seen,
        while the constraints are missing."""
        blocking = "constraint:*" in leg.seen.missing
        return list(self._layout.constraints.values()) if blocking else []

    def _aside(self, leg: _Leg, out: Outbox) -> Route | None:
        """The route out of the way of the mover the robot gives way to (a ``give_way``
        event says where), or None (and no more giving way) when there is none."""
        mover = self._standoff.giving_way
        layout = self._layout
        route = self._standoff.aside(
            leg.router, leg.seen, leg.fixed, radius=layout.radius, clearance=layout.clearance
        )
        if route is None:
            return None
        if self._give_way_unaffordable(leg, route):
            self._give_way_short = (
                f"battery {leg.seen.battery:.2f} short of giving way to {mover} "
                f"({LineString(route).length:.0f} m aside), the way back and a charger after it"
            )
            self._standoff.reset()
            return None
        self._planned_obstacles = {f.id: f.geometry.centroid for f in leg.seen.obstacles}
        self._waiting = False
        assert leg.seen.pose is not None
        to = route[-1] if route else leg.seen.pose  # no route: out of its way already
        out.emit(
            "give_way",
            {
                "task": leg.task,
                "step": leg.step.id,
                "obstacle": mover,
                "to": [round(to[0], 3), round(to[1], 3)],
            },
            tags=("plan",),
        )
        return route

    def _give_way_unaffordable(self, leg: _Leg, route: Route) -> bool:
        """Whether the battery does not cover the way aside (``route``), back to the
        step's target and on to a charger (``Energy.covers_detour``); never on the way to
        a charger, where there is nothing to charge first for, nor when the battery is
        charged already (a charge would end at once, and the robot come back as short)."""
        energy = self._energy
        if energy is None or leg.step.target in leg.seen.charger_places():
            return False
        return not energy.charged(leg.seen) and not energy.covers_detour(
            leg.seen, route, leg.target
        )

    def _route_from(
        self, leg: _Leg, start: Point2, prefix: Route, blocked: list[BaseGeometry]
    ) -> _Found:
        """The route from the departure ``start`` (after its braking ``prefix``), else
        from where the robot is; and what memory changed about it (None: nothing)."""
        reach = self._layout.reach
        route, recalled = self._spots.route(leg.router, start, leg.target, blocked, reach)
        if route is not None and prefix:
            return (*prefix, *route[1:]), recalled
        if route is None and prefix:
            assert leg.seen.pose is not None
            return self._spots.route(leg.router, leg.seen.pose, leg.target, blocked, reach)
        return route, recalled

    def _pass_or_wait(
        self, leg: _Leg, start: Point2, prefix: Route, around: _Found, out: Outbox
    ) -> _Found:
        """Go round the moving obstacles (``around``: the route that keeps clear of where
        they stand now) when that is a pass, not a long way round; else keep to the way
        they stand in and wait for them.

        People and forklifts move on: a route that treats where they stand now as a
        wall can be many times as long as the way, and it points elsewhere after every
        re-plan, so a robot that took it would turn back and forth between two ways
        round and never arrive (with movers on the way to a dock, it did). The way
        (the shortest route clear of the shelves and zones) is taken instead when the
        route round is longer than ``pass_detour`` times it plus ``pass_slack`` metres,
        or when the movers shut every way: the executor stops before an obstacle on its
        route and waits, as it does for one that steps in. After a stand-off the way round
        is taken however long, but only when the battery covers it and the way from its
        end to a charger: on a tight battery, a 110 m way round by the other of two 54 m
        corridors ran it flat 60 s later (hard:26). On its way to a charger, without the
        reserve (``energy``: gen 116 ran flat 1 m from the charger for want of it).
        """
        route, recalled = around
        if (
            route is not None
            and self._standoff.gone_round(leg.progress)
            and self._affords_way_round(leg, route)
        ):  # waited for them without getting further: go round, when the battery covers it
            return route, recalled
        way, way_recalled = self._route_from(leg, start, prefix, leg.fixed)
        if way is None:
            return route, recalled
        length = float(LineString(way).length) if len(way) >= 2 else 0.0
        detour: float | None = None
        if route is not None:
            detour = float(LineString(route).length) if len(route) >= 2 else 0.0
            if detour <= self._settings.pass_detour * length + self._settings.pass_slack:
                return route, recalled
        lane = self._single_lane(leg, start, prefix, (way, way_recalled), out)
        if lane is not None:
            return lane
        out.emit(
            "wait_for_obstacles",
            {
                "task": leg.task,
                "step": leg.step.id,
                "obstacles": sorted(f.id for f in leg.seen.obstacles),
                "way": round(length, 3),
                "around": None if detour is None else round(detour, 3),
                "reason": "no_pass",
            },
            tags=("plan",),
        )
        self._waiting = True
        return way, way_recalled

    def _single_lane(
        self, leg: _Leg, start: Point2, prefix: Route, found: _Found, out: Outbox
    ) -> _Found | None:
        """The movers cannot be passed: when one contests a single lane of the way
        (``found``), the other way round it, or the way with a wait at the lane's entry
        (``lanes``); None when no lane is contested, or no wait can be made there."""
        way, _ = found
        assert way is not None and leg.seen.pose is not None
        reach, step, settings = self._layout.reach, leg.step, self._settings
        lane = self._lanes.contested(leg.router, leg.seen, way, reach)
        if lane is None:
            return None
        key = (leg.task, step.target)
        length = float(LineString(way).length)
        data = {"task": leg.task, "step": step.id, "obstacles": list(lane.movers)}
        other = self._route_from(leg, start, prefix, [*leg.fixed, lane.ground])
        if other[0] is not None and len(other[0]) >= 2:
            around = float(LineString(other[0]).length)
            if (
                length + _OTHER_WAY <= around <= settings.lane_detour * length + settings.pass_slack
                and (self._energy is None or self._energy.covers(leg.seen, around, leg.target))
            ):
                self._lanes.avoid(key, lane)
                self._waiting = False
                self._rerouted = True
                out.emit(
                    "single_lane",
                    {
                        **data,
                        "choice": "other_way",
                        "way": round(length, 3),
                        "other": round(around, 3),
                    },
                    tags=("plan",),
                )
                return other
        blocked = [*leg.fixed, *self._movers(leg)]
        patient = lane.dead_end or self._lanes.may_wait(key)  # (a dead end: always)
        if not patient or not self._lanes.wait(
            leg.seen, key, way, lane, reach, router=leg.router, blocked=blocked
        ):
            return None
        out.emit(
            "wait_for_obstacles",
            {
                **data,
                "way": round(length, 3),
                "around": None,
                "reason": "single_lane",
                "lane": [round(lane.start, 3), round(lane.end, 3)],
            },
            tags=("plan",),
        )
        self._waiting = True
        aside = self._lanes.aside
        return found if aside is None else (aside, None)

    def _affords_way_round(self, leg: _Leg, route: Route) -> bool:
        """Whether the battery covers the way round the movers after a stand-off
        (``route``) and a charger after it; on the way to a charger, without the reserve
        (``Energy.covers``: it is what the robot would arrive with)."""
        if self._energy is None or len(route) < 2:
            return True
        length = float(LineString(route).length)
        to_charger = leg.step.target in leg.seen.charger_places()
        return self._energy.covers(leg.seen, length, leg.target, keep_reserve=not to_charger)

    def _movers(self, leg: _Leg) -> list[BaseGeometry]:
        """The movers in view, shrunk so that none covers the robot (``shrunk``)."""
        assert leg.seen.pose is not None
        reach = self._layout.reach
        movers = [shrunk(f.geometry, (leg.seen.pose,), reach) for f in leg.seen.obstacles]
        return [g for g in movers if g is not None]

    def _obstacle_ahead(self, seen: Seen) -> ReplanTrigger | None:
        """An ``obstacle_in_corridor`` trigger (rate limited) when an obstacle in the
        corridor comes near the route ahead.

        Near: within the robot radius plus clearance of the route; ahead: the nearest
        route point is not behind the robot's projection on the route. An obstacle the
        route was planned around counts again only once it has moved ``obstacle_moved``.
        """
        line = self._line
        pose = seen.pose
        if line is None or pose is None:
            return None
        obstacles = seen.corridor_obstacles
        interval = self._settings.obstacle_replan_interval
        if not obstacles or seen.time - self._last_obstacle_replan < interval:
            return None
        reach = self._layout.reach
        along: float | None = None
        for feature in obstacles:
            if float(line.distance(feature.geometry)) > reach:
                continue
            planned_at = self._planned_obstacles.get(feature.id)
            if (
                planned_at is not None
                and planned_at.distance(feature.geometry.centroid) < self._settings.obstacle_moved
            ):
                continue  # the route was planned with it there already
            if along is None:
                along = float(line.project(Point(pose)))
            nearest = shapely.shortest_line(line, feature.geometry)
            if float(line.project(Point(nearest.coords[0]))) < along - reach:
                continue  # behind the robot
            self._last_obstacle_replan = seen.time
            return ReplanTrigger("obstacle_in_corridor", None, feature.id)
        return None

    def publish(self, route: Route, out: Outbox) -> None:
        """Write ``route`` when it is not the route written last."""
        if route != self._route:
            self._route = route
            self._line = LineString(route) if len(route) >= 2 else None
            out.write(ROUTE, route)
