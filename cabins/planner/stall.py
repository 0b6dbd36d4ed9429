"""The stall watch: a go-to step that gets no further along its route.

The robot is stalled when the current go-to step has not got ``progress_step`` metres
further along its route for ``stall_ticks`` ticks: it waits in a stand-off, say, each
of it and a mover waiting for the other. Progress is measured along the route the robot
follows; a new route for the same step (a re-plan each time a mover near the way moved
on) carries over the progress made, and the clock runs on.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from shapely.geometry.base import BaseGeometry

from cabins.planner.seen import Seen
from cabins.planner.settings import PlannerSettings
from cabins.warehouse.routing import Route
from cabins.warehouse.shapes import locate, point
from runtime.agent.plan import PlanStep, ReplanTrigger

__all__ = ["StallWatch"]


@dataclass(frozen=True, slots=True)
class _Stall:
    """The robot's progress on a go-to step: it was last ``progress_step`` further on at
    tick ``since``, and has got ``latest - origin`` metres on since then (both measured
    along ``route``, the route it follows now)."""

    step: str
    route: Route | None
    origin: float
    latest: float
    since: int


class StallWatch:
    """Watches the progress of go-to steps (see the module docstring)."""

    def __init__(self, settings: PlannerSettings) -> None:
        self._settings = settings
        self._stall: _Stall | None = None

    def check(
        self, current: PlanStep | None, seen: Seen, route: Route | None, line: BaseGeometry | None
    ) -> ReplanTrigger | None:
        """``no_progress`` when ``current``, a go-to step, is stalled on ``route`` (its
        ``line``); None while it gets on, or when there is nothing to watch."""
        if current is None or current.action != "go_to" or line is None or seen.pose is None:
            self._stall = None
            return None
        along = locate(line, point(*seen.pose))
        stall = self._stall
        tick = seen.tick
        if stall is None or stall.step != current.id:
            self._stall = _Stall(current.id, route, along, along, tick)
            return None
        if stall.route != route:
            # A new route for the same step: the progress made since ``since`` carries
            # over to it, and the clock runs on. Restarting it with every route hid a
            # stand-off for 90 s: two people at the dead end of their aisle, the robot
            # waiting for them in it, re-planning every second or two as they stepped to
            # and fro.
            gained = stall.latest - stall.origin
            stall = _Stall(current.id, route, along - gained, along, stall.since)
        else:
            stall = dataclasses.replace(stall, latest=along)
        if along >= stall.origin + self._settings.progress_step:
            self._stall = _Stall(current.id, route, along, along, tick)
            return None
        self._stall = stall
        stall_ticks = self._settings.stall_ticks
        if tick - stall.since < stall_ticks:
            return None
        self._stall = None
        return ReplanTrigger(
            "no_progress", current.id, f"{stall_ticks} ticks without progress along the route"
        )
