"""Traits: what makes a warehouse hard for liveness, measured on the scenario itself.

Issue 29 found liveness failing on worlds with these traits; ``traits(scenario)`` says
which ones a scenario has, by measuring its geometry and numbers (not by asking the
generator what it meant to draw), so that tests can check the ``hard:N`` family draws
them all and a table of runs can say what each world holds:

- ``dead_end_dock``: a dock with a shelf or wall within 1.5 m on three sides of four and
  open ground on the fourth (the closed end of a bay);
- ``mover_at_dead_end``: and a mover whose loop turns within 1.5 m of that dock;
- ``rotated_rows``: four shelves or more turned 5 degrees or more off the walls;
- ``fishbone_rows``: turned shelves both ways (rows mirrored about a spine);
- ``single_lane``: a mover walks 20 m or more of a passage too narrow (3 m or less
  between shelves and walls) for the robot to pass it;
- ``large_floor``: 4,000 m² of floor or more (80 x 50 m);
- ``many_shelves``: 45 shelves or more;
- ``mid_task_charge``: a delivery whose round from the charger (to its pick-up, its drop,
  and back) costs more than the battery holds charged to 90 % (``sim.world.hard.routes``);
- ``many_movers``: five movers or more, people and forklifts both.
"""

from __future__ import annotations

import itertools
import math

import shapely
from shapely.geometry import LineString, Point, Polygon, box
from shapely.geometry.base import BaseGeometry

from sim.world.hard.routes import Routes, energy
from sim.world.scenario import Scenario

__all__ = ["TRAITS", "bay_width", "traits"]

TRAITS = (
    "dead_end_dock",
    "mover_at_dead_end",
    "rotated_rows",
    "fishbone_rows",
    "single_lane",
    "large_floor",
    "many_shelves",
    "mid_task_charge",
    "many_movers",
)

_NEAR = 1.5  # m: a side closed this near
_OPEN = 3.0  # m: a side open this far
_LANE = 3.0  # m: a passage this narrow or less is single-lane
_LANE_RUN = 20.0  # m of single lane a mover walks
_PROBE = 0.3  # m: gaps narrower than twice this (flues between racks) count as closed
_CHARGE_UNTIL = 0.9


def _blocks(scenario: Scenario) -> BaseGeometry:
    minx, miny, maxx, maxy = scenario.floor.bounds
    walls = box(minx - 5, miny - 5, maxx + 5, maxy + 5).difference(box(minx, miny, maxx, maxy))
    return shapely.union_all([walls, *(s.shape for s in scenario.shelves)])


def _ray(blocks: BaseGeometry, p: Point, dx: float, dy: float, reach: float) -> float:
    """How far from ``p`` along (dx, dy) the first block is, up to ``reach``."""
    hit = LineString([(p.x, p.y), (p.x + dx * reach, p.y + dy * reach)]).intersection(blocks)
    return reach if hit.is_empty else float(hit.distance(p))


def _dead_ends(scenario: Scenario, blocks: BaseGeometry) -> list[Point]:
    found = []
    for dock in scenario.docks:
        p = Point(dock.x, dock.y)
        sides = [_ray(blocks, p, dx, dy, 10.0) for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))]
        if sum(s <= _NEAR for s in sides) == 3 and max(sides) >= _OPEN:
            found.append(p)
    return found


def bay_width(scenario: Scenario, dock_id: str) -> float:
    """The free width across a dead-end dock's bay (m): across its open direction."""
    dock = scenario.dock(dock_id)
    blocks = _blocks(scenario)
    p = Point(dock.x, dock.y)
    right, left, up, down = (
        _ray(blocks, p, dx, dy, 10.0) for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1))
    )
    return left + right if max(up, down) >= max(left, right) else up + down


def _turn(shape: Polygon) -> float | None:
    """The angle (degrees in [0, 180)) of a shelf's long side when it is turned 5 degrees
    or more off the walls and 2 m long or more; None otherwise."""
    rect = shape.minimum_rotated_rectangle
    corners = list(rect.exterior.coords)[:3]
    sides = [(corners[1][0] - corners[0][0], corners[1][1] - corners[0][1])]
    sides.append((corners[2][0] - corners[1][0], corners[2][1] - corners[1][1]))
    dx, dy = max(sides, key=lambda s: math.hypot(*s))
    if math.hypot(dx, dy) < 2.0:
        return None
    angle = math.degrees(math.atan2(dy, dx)) % 180.0
    return angle if 5.0 <= angle % 90.0 <= 85.0 else None


def _single_lane_run(scenario: Scenario, blocks: BaseGeometry) -> float:
    """The longest stretch (m) of a mover's loop through a passage 3 m wide or less,
    sampled every metre."""
    probe = blocks.buffer(_PROBE)
    reach = _LANE - 2 * _PROBE + 0.1  # past the widest single lane: the rays stop here
    best = 0.0
    for mover in scenario.moving_obstacles:
        pts = [*mover.waypoints, mover.waypoints[0]]
        for a, b in itertools.pairwise(pts):
            length = math.dist(a, b)
            if length < _LANE_RUN:
                continue
            nx, ny = -(b[1] - a[1]) / length, (b[0] - a[0]) / length
            near = probe.intersection(LineString([a, b]).buffer(reach + 0.5))  # what rays hit
            run = 0.0
            steps = int(length)
            for k in range(steps + 1):
                p = Point(a[0] + (b[0] - a[0]) * k / steps, a[1] + (b[1] - a[1]) * k / steps)
                across = _ray(near, p, nx, ny, reach) + _ray(near, p, -nx, -ny, reach)
                run = run + 1.0 if across + 2 * _PROBE <= _LANE else 0.0
                best = max(best, run)
    return best


def _mid_task_charge(scenario: Scenario) -> bool:
    if not scenario.chargers or not scenario.tasks:
        return False
    robot = scenario.robot
    routes = Routes(
        scenario.floor.bounds,
        [s.shape for s in scenario.shelves],
        [z.shape for z in scenario.forbidden_zones],
        robot.radius,
    )
    charger = (scenario.chargers[0].x, scenario.chargers[0].y)
    full = robot.battery_wh * _CHARGE_UNTIL
    for task in scenario.tasks:
        pick, drop = scenario.dock(task.pickup), scenario.dock(task.drop)
        a, b = (pick.x, pick.y), (drop.x, drop.y)
        metres = routes.length(charger, a) + routes.length(a, b) + routes.length(b, charger)
        if math.isfinite(metres):
            wh = energy(metres, per_m=robot.drain_wh_per_m, per_s=robot.drain_wh_per_s)
            if wh > full:
                return True
    return False


def traits(scenario: Scenario) -> frozenset[str]:
    """The traits of ``TRAITS`` that ``scenario`` has (see the module docstring)."""
    found: set[str] = set()
    blocks = _blocks(scenario)
    ends = _dead_ends(scenario, blocks)
    if ends:
        found.add("dead_end_dock")
        turns = [Point(p) for m in scenario.moving_obstacles for p in m.waypoints]
        if any(t.distance(e) <= _NEAR for t in turns for e in ends):
            found.add("mover_at_dead_end")
    angles = [a for a in (_turn(s.shape) for s in scenario.shelves) if a is not None]
    if len(angles) >= 4:
        found.add("rotated_rows")
        if any(a < 90 for a in angles) and any(a > 90 for a in angles):
            found.add("fishbone_rows")
    if _single_lane_run(scenario, blocks) >= _LANE_RUN:
        found.add("single_lane")
    minx, miny, maxx, maxy = scenario.floor.bounds
    if (maxx - minx) * (maxy - miny) >= 4000.0:
        found.add("large_floor")
    if len(scenario.shelves) >= 45:
        found.add("many_shelves")
    if _mid_task_charge(scenario):
        found.add("mid_task_charge")
    kinds = {m.kind for m in scenario.moving_obstacles}
    if len(scenario.moving_obstacles) >= 5 and kinds == {"person", "forklift"}:
        found.add("many_movers")
    return frozenset(found)
