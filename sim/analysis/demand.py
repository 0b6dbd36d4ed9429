"""Worst-case demand: how many items the specs may select at once on a world, against the
capacity of the working memory they share.

Before a run, ``check-spec --scenario`` asks, for each spec, how many items it could
select at one freeze on that world, a bound rather than a prediction:

- **board**: each exact key it reads counts (a cabin may write it), and each key its globs
  match among those the world writes (at the start, and once every task is released);
- **map window**: the most features of its kinds and tags within ``map_radius`` of any
  point of the floor (points on a grid, the radius grown by half a cell's diagonal so that
  every point between them is covered), capped by ``map_limit`` and ``map_share``;
- **corridor**: the most features of its kinds and tags within ``corridor_width`` of the
  routes its tasks make (from the start to each pick-up and charger, each pick-up to its
  drop, each drop to the next pick-up), capped by ``corridor_limit``; a spec's map
  window and corridor together never count more features than the world has of its
  kinds;
- **events**: ``event_limit`` when it has an event window.

The specs share one working memory, so their demand is summed as a union: board keys once
each, the map windows around one centre key as one window per grid point, events once per
event filter (the largest limit), corridors added whole, and the map part never more than
the features any of them can see. Notes are not counted (a pad holds what its cabin
writes). Demand above the capacity means items selected will be lost to capacity at run
time (``capacity_pressure``): the warning names the part to cap first.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from runtime.assembly.maps import window_cap
from runtime.patterns import is_glob, matches

if TYPE_CHECKING:
    from runtime import CabinMap, ContextSpec, Feature
    from sim.world.scenario import Scenario

__all__ = ["GRID_POINTS", "MAX_LEGS", "Demand", "SharedDemand", "demand"]

Route = tuple[tuple[float, float], ...]

GRID_POINTS = 2000
"""About how many floor points the map windows are measured at (the grid's cell grows with
the floor)."""
MAX_LEGS = 24
"""The most task legs routed to measure corridors."""


@dataclass(frozen=True, slots=True)
class Demand:
    """The most items one spec may select at once on a world, by part."""

    spec: str
    board: int
    window: int
    corridor: int
    events: int

    @property
    def map(self) -> int:
        return self.window + self.corridor

    @property
    def total(self) -> int:
        return self.board + self.map + self.events

    def as_json(self) -> dict[str, int | str]:
        return {
            "spec": self.spec,
            "board": self.board,
            "map_window": self.window,
            "corridor": self.corridor,
            "events": self.events,
            "total": self.total,
        }

    def parts(self) -> str:
        return (
            f"board {self.board}, map window {self.window}, corridor {self.corridor}, "
            f"events {self.events}"
        )


@dataclass(frozen=True, slots=True)
class SharedDemand:
    """The specs' demand on one world, each and together, against the capacity."""

    scenario: str
    capacity: int
    specs: tuple[Demand, ...]
    board: int
    map: int
    events: int

    @property
    def total(self) -> int:
        return self.board + self.map + self.events

    @property
    def over(self) -> bool:
        return self.total > self.capacity

    def as_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "capacity": self.capacity,
            "specs": [d.spec for d in self.specs],
            "board": self.board,
            "map": self.map,
            "events": self.events,
            "total": self.total,
            "over": self.over,
        }

    def warnings(self, spec: str) -> list[str]:
        """The warnings for ``spec``'s report: its own demand over the capacity, and, for
        the spec whose map part is largest, the specs' demand together."""
        out: list[str] = []
        mine = next((d for d in self.specs if d.spec == spec), None)
        if mine is None:
            return out
        if mine.total > self.capacity:
            out.append(
                f"{spec} alone may select up to {mine.total} items at once in {self.scenario} "
                f"({mine.parts()}), more than working memory's capacity ({self.capacity}): "
                f"items it selects will be lost to capacity; "
                f"{self._cap(mine, mine.total - self.capacity)}"
            )
        biggest = max(self.specs, key=lambda d: (d.map, d.total, d.spec))
        if self.over and len(self.specs) > 1 and biggest.spec == spec:
            names = ", ".join(d.spec for d in self.specs)
            out.append(
                f"the specs checked together ({names}) share working memory and may select "
                f"up to {self.total} items at once in {self.scenario} (board {self.board}, "
                f"map {self.map}, events {self.events}), more than its capacity "
                f"({self.capacity}): items they select will be lost to capacity "
                f"(capacity_pressure); {spec} has the largest map part: "
                f"{self._cap(biggest, self.total - self.capacity)}"
            )
        return out

    def _cap(self, d: Demand, excess: int) -> str:
        """What to cap first: the larger of ``d``'s map window and corridor, by ``excess``."""
        if d.window >= d.corridor and d.window > 0:
            return (
                f"cap its map window first (map_limit = {max(1, d.window - excess)}, or "
                "map_share, or a smaller map_radius); grow the capacity last"
            )
        if d.corridor > 0:
            return (
                f"cap its corridor first (corridor_limit = {max(1, d.corridor - excess)}); "
                "grow the capacity last"
            )
        return "narrow its board_keys or event window; grow the capacity last"


def demand(specs: Sequence[ContextSpec], scenario: Scenario, capacity: int) -> SharedDemand:
    """The worst-case demand of ``specs`` (sharing one working memory of ``capacity``) on
    ``scenario``'s world (see the module docstring)."""
    from runtime import CabinMap, SimClock, StateBoard
    from sim.world.world import World

    clock = SimClock()
    board = StateBoard(clock=clock)
    cabin_map = CabinMap()
    world = World(scenario, rng=np.random.default_rng(0))
    world.install(board, cabin_map)
    world.sense(board, cabin_map, 0.0)
    keys = set(board.keys("*"))
    clock.sleep_until(scenario.duration)
    world.sense(board, cabin_map, scenario.duration)  # every task released: every goal key
    keys.update(board.keys("*"))
    board_sets = {spec.name: _board_keys(spec, keys) for spec in specs}
    windows = _Windows(cabin_map, scenario, specs, capacity)
    routes = _routes(scenario) if any(s.corridor_width > 0 for s in specs) else []
    corridors = {spec.name: _corridor(spec, cabin_map, routes) for spec in specs}
    each: list[Demand] = []
    for spec in specs:
        seen = _features_of(cabin_map, [spec])
        window = windows.most([spec])
        corridor = min(corridors[spec.name], max(0, seen - window))
        events = spec.event_limit if spec.event_window > 0 else 0
        each.append(Demand(spec.name, len(board_sets[spec.name]), window, corridor, events))
    by_center: dict[str, list[ContextSpec]] = {}
    for spec in specs:
        if spec.map_center is not None and spec.map_radius > 0:
            by_center.setdefault(spec.map_center, []).append(spec)
    shared_map = sum(windows.most(group) for group in by_center.values())
    shared_map += sum(corridors.values())
    shared_map = min(shared_map, _features_of(cabin_map, specs))
    filters: dict[tuple[Any, ...], int] = {}
    for spec in specs:
        if spec.event_window > 0:
            group = (tuple(sorted(spec.event_kinds)), tuple(sorted(spec.event_tags)))
            filters[group] = max(filters.get(group, 0), spec.event_limit)
    union = set().union(*board_sets.values()) if board_sets else set()
    return SharedDemand(
        scenario.name,
        capacity,
        tuple(each),
        len(union),
        shared_map,
        sum(filters.values()),
    )


def _board_keys(spec: ContextSpec, world_keys: Iterable[str]) -> set[str]:
    """The board keys ``spec`` may hold: its exact keys, and the world's keys its globs
    match."""
    exact = {p for p in spec.board_keys if not is_glob(p)}
    globs = [p for p in spec.board_keys if is_glob(p)]
    return exact | {k for k in world_keys if any(matches(k, p) for p in globs)}


def _keeps(spec: ContextSpec, feature: Feature) -> bool:
    return (not spec.map_kinds or feature.kind in spec.map_kinds) and (
        not spec.map_tags or not set(spec.map_tags).isdisjoint(feature.tags)
    )


def _features_of(cabin_map: CabinMap, specs: Iterable[ContextSpec]) -> int:
    """How many of the map's features some spec with a window or corridor can see."""
    looking = [s for s in specs if (s.map_center and s.map_radius > 0) or s.corridor_width > 0]
    return sum(1 for f in cabin_map.features() if any(_keeps(s, f) for s in looking))


class _Windows:
    """The map windows of the specs at grid points over the floor."""

    def __init__(
        self,
        cabin_map: CabinMap,
        scenario: Scenario,
        specs: Sequence[ContextSpec],
        capacity: int,
    ) -> None:
        x0, y0, x1, y1 = scenario.floor.bounds
        cell = max(0.25, math.sqrt((x1 - x0) * (y1 - y0) / GRID_POINTS))
        xs = np.arange(x0, x1 + cell / 2, cell)
        ys = np.arange(y0, y1 + cell / 2, cell)
        self.points = [(float(x), float(y)) for x in xs for y in ys]
        self.margin = cell * math.sqrt(2) / 2
        self.map = cabin_map
        self.capacity = capacity
        radius = max((s.map_radius for s in specs), default=0.0)
        self._near: list[list[tuple[Feature, float]]] = (
            [list(cabin_map.nearby(p, radius + self.margin)) for p in self.points]
            if radius > 0
            else []
        )

    def most(self, specs: Sequence[ContextSpec]) -> int:
        """The most features the windows of ``specs`` (around one centre) hold together at
        any grid point."""
        looking = [s for s in specs if s.map_center is not None and s.map_radius > 0]
        if not looking:
            return 0
        caps = [window_cap(s, self.capacity) for s in looking]
        most = 0
        for near in self._near:
            seen: set[str] = set()
            for spec, cap in zip(looking, caps, strict=True):
                reach = spec.map_radius + self.margin
                mine = [f.id for f, d in near if d <= reach and _keeps(spec, f)]
                seen.update(mine if cap is None else mine[:cap])
            most = max(most, len(seen))
        return most


def _corridor(spec: ContextSpec, cabin_map: CabinMap, routes: Sequence[Route]) -> int:
    """The most features of ``spec``'s kinds and tags within its corridor along ``routes``
    (the scenario's task legs), capped by ``corridor_limit``."""
    if spec.corridor_width <= 0:
        return 0
    most = 0
    kinds = spec.map_kinds or None
    tags = spec.map_tags or None
    for route in routes:
        found = cabin_map.corridor(route, spec.corridor_width, kinds=kinds, tags=tags)
        most = max(most, len(found))
    return most if spec.corridor_limit is None else min(most, spec.corridor_limit)


def _routes(scenario: Scenario) -> list[Route]:
    """The routes of the scenario's task legs (at most ``MAX_LEGS``), planned as the
    planner plans them; a leg without a route is left out."""
    from cabins.warehouse.routing import (
        DEFAULT_CLEARANCE,
        DEFAULT_RESOLUTION,
        RoutePlanner,
        RoutingProblem,
    )

    router = RoutePlanner(
        RoutingProblem(
            bounds=scenario.floor.bounds,
            obstacles=tuple(s.shape for s in scenario.shelves),
            forbidden=tuple(z.shape for z in scenario.forbidden_zones),
            robot_radius=scenario.robot.radius,
            clearance=DEFAULT_CLEARANCE,
            resolution=DEFAULT_RESOLUTION,
        )
    )
    places: Mapping[str, tuple[float, float]] = {
        **{d.id: (d.x, d.y) for d in scenario.docks},
        **{c.id: (c.x, c.y) for c in scenario.chargers},
    }
    start = (scenario.robot.start.x, scenario.robot.start.y)
    legs: list[tuple[tuple[float, float], tuple[float, float]]] = []
    last = start
    for task in scenario.tasks:
        if task.pickup in places and task.drop in places:
            legs += [(last, places[task.pickup]), (places[task.pickup], places[task.drop])]
            last = places[task.drop]
    legs += [(start, (c.x, c.y)) for c in scenario.chargers]
    unique = list(dict.fromkeys(legs))[:MAX_LEGS]
    return [r for a, b in unique if (r := router.plan(a, b)) is not None and len(r) >= 2]
