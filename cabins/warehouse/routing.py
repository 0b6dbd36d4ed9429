"""Route planning on the warehouse floor: a collision-free polyline for a disc robot.

A ``RoutePlanner`` turns a ``RoutingProblem`` (floor bounds, solid obstacles, forbidden
zones, robot radius) into routes between two points. It is pure geometry, with no
dependency on the runtime, so the planner cabin can call it every tick.

How a route is found:

1. **Occupancy grid, built once.** Every cell centre is tested with a vectorised shapely
   query (an ``STRtree`` of the centres queried with the ``dwithin`` predicate, which
   measures exact distances instead of testing against a polygonal buffer). A cell is
   free only if its centre is farther than ``robot_radius + clearance`` plus half a cell
   diagonal from every obstacle and forbidden zone, and that far inside the floor shrunk
   by ``robot_radius``; so a free cell is free at every one of its points, and moving
   between the centres of two neighbouring free cells (diagonals included) is safe.
   ``blocked`` geometries passed to ``plan`` are rasterised the same way, per call.
2. **A\\*** over the 8-connected grid with the octile heuristic. The open list is a
   ``heapq`` of ``(f, h, cell)``: ties go to the cell nearer the goal, then to the lower
   cell index, so the same inputs always give the same route.
3. **Line-of-sight shortcutting.** The cell path is reduced to its turning points, then
   each kept segment is extended as far along the path as it stays clear. Every segment
   of the final polyline is checked exactly with shapely: it must stay inside the floor
   shrunk by ``robot_radius`` and farther than ``robot_radius + clearance`` from every
   obstacle, forbidden zone and blocked geometry. The returned polyline is therefore
   collision-free for the whole disc, not only on grid cells.

The route starts exactly at ``start`` and ends exactly at ``goal``; they are joined to
their nearest free cells by checked segments (or to each other directly when the
straight segment is clear).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
import shapely
import structlog
from shapely.geometry import LineString, Point
from shapely.geometry.base import BaseGeometry

from runtime.errors import SettingError

__all__ = [
    "DEFAULT_CLEARANCE",
    "DEFAULT_RESOLUTION",
    "Point2",
    "Route",
    "RoutePlanner",
    "RoutingProblem",
    "min_aisle_width",
]

Point2 = tuple[float, float]
Route = tuple[Point2, ...]

# Distances in the exact checks get this much extra, so that "clear" never rests on a
# floating-point tie between a computed distance and a limit (or a buffer's vertices).
_EPS = 1e-9
_SQRT2 = math.sqrt(2.0)

_log = structlog.get_logger(__name__)

_SegmentCheck = Callable[[Point2, Point2], bool]

DEFAULT_CLEARANCE = 0.25
"""Metres the planner keeps between the robot's disc and shelves or zones, by default."""

DEFAULT_RESOLUTION = 0.25
"""The planner's grid cell size (m), by default."""


def min_aisle_width(
    robot_radius: float,
    *,
    clearance: float = DEFAULT_CLEARANCE,
    resolution: float = DEFAULT_RESOLUTION,
) -> float:
    """The narrowest passage between two walls that a route always finds, whatever the
    grid's alignment: a free cell centre must be ``robot_radius + clearance`` plus half a
    cell diagonal from either side, and one cell centre must fall in that band."""
    return 2.0 * (robot_radius + clearance) + resolution * (1.0 + _SQRT2)


def _finite(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise SettingError(f"{name} must be finite, got {value!r}")
    return number


def _as_point(value: Any, name: str) -> Point2:
    if isinstance(value, Point):
        if value.is_empty:
            raise SettingError(f"{name} must not be an empty Point")
        value = (value.x, value.y)
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be an (x, y) pair, got {value!r}")
    if len(value) != 2:
        raise SettingError(f"{name} must be an (x, y) pair, got {len(value)} values: {value!r}")
    return (_finite(value[0], f"{name}[0]"), _finite(value[1], f"{name}[1]"))


def _geometries(values: Any, name: str) -> tuple[BaseGeometry, ...]:
    if isinstance(values, BaseGeometry) or not isinstance(values, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a sequence of shapely geometries, got {values!r}")
    checked = tuple(values)
    for index, geometry in enumerate(checked):
        if not isinstance(geometry, BaseGeometry):
            raise TypeError(f"{name}[{index}] must be a shapely geometry, got {geometry!r}")
        if not geometry.is_empty and not shapely.is_valid(geometry):
            reason = shapely.is_valid_reason(geometry)
            raise SettingError(
                f"{name}[{index}] is not a valid geometry ({reason}): {geometry.wkt}"
            )
    return checked


@dataclass(frozen=True, slots=True, kw_only=True)
class RoutingProblem:
    """The static part of route planning: the floor, what to keep clear of, the robot.

    ``obstacles`` (shelves and other solid things) and ``forbidden`` zones are both kept
    ``robot_radius + clearance`` away from the robot's centre; they differ only for a
    start that is already inside that margin (see ``RoutePlanner.plan``).
    """

    bounds: tuple[float, float, float, float]
    obstacles: tuple[BaseGeometry, ...]
    forbidden: tuple[BaseGeometry, ...]
    robot_radius: float
    clearance: float = 0.05
    resolution: float = 0.25

    def __post_init__(self) -> None:
        if isinstance(self.bounds, (str, bytes)) or not isinstance(
            self.bounds, (Sequence, np.ndarray)
        ):
            raise TypeError(f"bounds must be (minx, miny, maxx, maxy), got {self.bounds!r}")
        if len(self.bounds) != 4:
            raise SettingError(f"bounds must be (minx, miny, maxx, maxy), got {self.bounds!r}")
        minx, miny, maxx, maxy = (_finite(v, f"bounds[{i}]") for i, v in enumerate(self.bounds))
        if not (minx < maxx and miny < maxy):
            raise SettingError(f"bounds must have minx < maxx and miny < maxy, got {self.bounds!r}")
        radius = _finite(self.robot_radius, "robot_radius")
        clearance = _finite(self.clearance, "clearance")
        resolution = _finite(self.resolution, "resolution")
        if radius < 0:
            raise SettingError(f"robot_radius must be >= 0, got {self.robot_radius!r}")
        if clearance < 0:
            raise SettingError(f"clearance must be >= 0, got {self.clearance!r}")
        if resolution <= 0:
            raise SettingError(f"resolution must be > 0, got {self.resolution!r}")
        if 2 * radius >= min(maxx - minx, maxy - miny):
            raise SettingError(
                f"the floor {self.bounds!r} is too small for a robot of radius {radius!r}"
            )
        set_field = object.__setattr__
        set_field(self, "bounds", (minx, miny, maxx, maxy))
        set_field(self, "obstacles", _geometries(self.obstacles, "obstacles"))
        set_field(self, "forbidden", _geometries(self.forbidden, "forbidden"))
        set_field(self, "robot_radius", radius)
        set_field(self, "clearance", clearance)
        set_field(self, "resolution", resolution)


class RoutePlanner:
    """Plans routes for one ``RoutingProblem``; the static occupancy grid is built once.

    A planner holds no state that changes between calls, so ``plan`` may be called as
    often as needed and always gives the same answer to the same question.
    """

    def __init__(self, problem: RoutingProblem) -> None:
        if not isinstance(problem, RoutingProblem):
            raise TypeError(f"problem must be a RoutingProblem, got {problem!r}")
        self._problem = problem
        minx, miny, maxx, maxy = problem.bounds
        res = problem.resolution
        radius = problem.robot_radius
        self._origin = (minx, miny)
        self._res = res
        self._radius_reach = radius + _EPS
        self._reach = radius + problem.clearance + _EPS
        half_diag = res * _SQRT2 / 2.0
        self._cell_reach = self._reach + half_diag
        # The closed box the robot's centre must stay in for its disc to stay on the floor.
        self._floor = (
            minx + radius + _EPS,
            miny + radius + _EPS,
            maxx - radius - _EPS,
            maxy - radius - _EPS,
        )

        nx = max(1, math.ceil((maxx - minx) / res - 1e-9))
        ny = max(1, math.ceil((maxy - miny) / res - 1e-9))
        self._nx, self._ny = nx, ny
        self._width = nx + 2  # the padded grid has a ring of blocked cells around it
        xs = minx + (np.arange(nx) + 0.5) * res
        ys = miny + (np.arange(ny) + 0.5) * res
        cx, cy = np.meshgrid(xs, ys)
        self._centres_x = xs
        self._centres_y = ys
        self._centre_tree = shapely.STRtree(shapely.points(cx.ravel(), cy.ravel()))

        solids = (*problem.obstacles, *problem.forbidden)
        self._solids = np.array(solids, dtype=object)
        self._solid_is_forbidden = np.array(
            [False] * len(problem.obstacles) + [True] * len(problem.forbidden), dtype=bool
        )
        self._solid_tree = shapely.STRtree(self._solids)

        fx0, fy0, fx1, fy1 = self._floor
        inside = (
            ((cx - half_diag) >= fx0)
            & ((cx + half_diag) <= fx1)
            & ((cy - half_diag) >= fy0)
            & ((cy + half_diag) <= fy1)
        )
        free = inside.ravel()
        free[self._cells_near(self._solids)] = False
        grid = free.reshape(ny, nx)
        grid.flags.writeable = False
        self._grid: npt.NDArray[np.bool_] = grid
        self._passable = np.pad(grid, 1).astype(np.uint8).tobytes()

    @property
    def problem(self) -> RoutingProblem:
        """The problem this planner was built for."""
        return self._problem

    @property
    def grid(self) -> npt.NDArray[np.bool_]:
        """The static occupancy grid (read-only): ``grid[row, col]`` is True where free.

        Row 0 is the lowest ``y``; the cell ``(row, col)`` is centred on
        ``(minx + (col + 0.5) * resolution, miny + (row + 0.5) * resolution)``.
        """
        return self._grid

    def is_free(self, point: Point2, *, blocked: Sequence[BaseGeometry] = ()) -> bool:
        """True when the robot may stand at ``point`` with the full clearance kept."""
        p = _as_point(point, "point")
        return self._clear(p, p, self._blocked_array(blocked))

    def segment_is_free(
        self, a: Point2, b: Point2, *, blocked: Sequence[BaseGeometry] = ()
    ) -> bool:
        """True when the robot may move straight from ``a`` to ``b`` with full clearance."""
        pa, pb = _as_point(a, "a"), _as_point(b, "b")
        return self._clear(pa, pb, self._blocked_array(blocked))

    def plan(
        self,
        start: Point2,
        goal: Point2,
        *,
        blocked: Sequence[BaseGeometry] = (),
    ) -> Route | None:
        """A collision-free polyline from ``start`` to ``goal``, or None if there is none.

        The first point is ``start`` and the last is ``goal``, exactly. Every segment keeps
        the robot's centre farther than ``robot_radius + clearance`` from obstacles,
        forbidden zones and ``blocked`` geometries, and its disc on the floor.

        A ``goal`` that is not free gives None. So does a ``start`` that is not free, with
        one exception: a start inside an *obstacle's* clearance margin, whose disc does not
        touch the obstacle, is allowed and joined to the nearest free cell by a segment that
        keeps the disc off every obstacle and the full margin from forbidden zones and
        ``blocked`` geometries. A robot ends up in that margin by drift or by being stopped
        close to a shelf; refusing to plan would strand it beside the shelf for good, while
        leaving the margin is safe. Forbidden zones and blocked (moving) geometries get no
        such allowance: a start within their margin gives None, so the robot stays put
        rather than move along a forbidden zone or towards something that moves.
        """
        p_start = _as_point(start, "start")
        p_goal = _as_point(goal, "goal")
        blocked_arr = self._blocked_array(blocked)
        clear: _SegmentCheck = partial(self._clear, blocked_arr=blocked_arr)

        if not clear(p_goal, p_goal):
            return None
        escaping = not clear(p_start, p_start)
        if escaping:
            if not self._escape_clear(p_start, p_start, blocked_arr):
                return None
        elif clear(p_start, p_goal):
            return (p_start, p_goal)

        passable = self._passable_with(blocked_arr)
        start_check: _SegmentCheck = (
            partial(self._escape_clear, blocked_arr=blocked_arr) if escaping else clear
        )
        start_cell = self._nearest_cell(p_start, passable, start_check)
        goal_cell = self._nearest_cell(p_goal, passable, clear)
        if start_cell is None or goal_cell is None:
            return None
        cells = self._astar(passable, start_cell, goal_cell)
        if cells is None:
            return None
        waypoints = [p_start, *(self._centre(c) for c in _turning_points(cells)), p_goal]
        return self._shortcut(waypoints, clear, keep_first=escaping)

    def reachable(
        self,
        start: Point2,
        goals: Sequence[Point2],
        *,
        blocked: Sequence[BaseGeometry] = (),
    ) -> tuple[bool, ...]:
        """For each of ``goals``, whether ``plan(start, goal, blocked=blocked)`` finds a
        route (by default ignoring moving obstacles): one flood fill of the grid from
        ``start``, so asking about many goals costs about one search."""
        p_start = _as_point(start, "start")
        points = [_as_point(g, f"goals[{i}]") for i, g in enumerate(goals)]
        origin = self._origin_cell(p_start, blocked)
        if origin is None:
            return tuple(False for _ in points)
        clear, passable, start_cell, start_clear = origin
        component = self._flood(start_cell, passable) if start_cell is not None else None
        found = []
        for goal in points:
            if not clear(goal, goal):
                found.append(False)
            elif start_clear and clear(p_start, goal):
                found.append(True)
            else:
                cell = self._nearest_cell(goal, passable, clear)
                found.append(cell is not None and component is not None and bool(component[cell]))
        return tuple(found)

    def ways(
        self,
        start: Point2,
        goals: Sequence[Point2],
        *,
        blocked: Sequence[BaseGeometry] = (),
        within: float = math.inf,
    ) -> tuple[float, ...]:
        """For each of ``goals``, about how long a route there past ``blocked`` is: the
        straight way when ``plan`` takes it, else the 8-connected grid's shortest way
        between the cells ``plan`` starts and ends on, with the ends joined straight.
        That is never shorter than the route ``plan(start, goal, blocked=blocked)``
        finds (the route cuts the grid's corners): longer by the grid's steps (8 % at most)
        and by the half-diagonal of a cell more the grid keeps off each corner it goes
        round. ``math.inf`` where the grid has no way (``plan`` finds no route) and where
        the way is longer than ``within``. One search of the grid, stopped at ``within``
        or once every goal's cell is found, answers every goal."""
        p_start = _as_point(start, "start")
        points = [_as_point(g, f"goals[{i}]") for i, g in enumerate(goals)]
        ways = [math.inf] * len(points)
        origin = self._origin_cell(p_start, blocked)
        if origin is None:
            return tuple(ways)
        clear, passable, start_cell, start_clear = origin
        ends: dict[int, list[int]] = {}  # the cell a route to each goal ends on
        for i, goal in enumerate(points):
            if not clear(goal, goal):
                continue
            if start_clear and clear(p_start, goal):
                ways[i] = math.dist(p_start, goal)
                continue
            cell = None if start_cell is None else self._nearest_cell(goal, passable, clear)
            if cell is not None:
                ends.setdefault(cell, []).append(i)
        if start_cell is None:
            return tuple(ways)
        base = math.dist(p_start, self._centre(start_cell))
        far = self._spread(start_cell, passable, set(ends), (within - base) / self._res)
        for cell, cells in far.items():
            for i in ends[cell]:
                ways[i] = base + cells * self._res + math.dist(self._centre(cell), points[i])
        return tuple(way if way <= within else math.inf for way in ways)

    def _origin_cell(
        self, p_start: Point2, blocked: Sequence[BaseGeometry]
    ) -> tuple[_SegmentCheck, bytes | bytearray, int | None, bool] | None:
        """What a search from ``p_start`` past ``blocked`` starts from, as ``plan`` does: the
        exact check, the passable cells, the start's cell (None when no cell is in reach)
        and whether the start is clear (else it escapes an obstacle's margin); None when
        ``plan`` would refuse the start."""
        blocked_arr = self._blocked_array(blocked)
        clear: _SegmentCheck = partial(self._clear, blocked_arr=blocked_arr)
        start_clear = clear(p_start, p_start)
        if not start_clear and not self._escape_clear(p_start, p_start, blocked_arr):
            return None
        start_check: _SegmentCheck = (
            clear if start_clear else partial(self._escape_clear, blocked_arr=blocked_arr)
        )
        passable = self._passable_with(blocked_arr)
        start_cell = self._nearest_cell(p_start, passable, start_check)
        return clear, passable, start_cell, start_clear

    def _spread(
        self, start: int, passable: bytes | bytearray, targets: set[int], limit: float
    ) -> dict[int, float]:
        """The grid's shortest ways, in cells, from ``start`` to those of ``targets`` it
        reaches within ``limit`` cells (Dijkstra, stopped there or once all are found)."""
        cost = [math.inf] * len(passable)
        cost[start] = 0.0
        heap = [(0.0, start)]
        done = bytearray(len(passable))
        left, found = set(targets), {}
        push, pop = heapq.heappush, heapq.heappop
        steps = self._steps()
        while heap and left:
            base, cell = pop(heap)
            if base > limit:
                break
            if done[cell]:
                continue
            done[cell] = 1
            if cell in left:
                left.discard(cell)
                found[cell] = base
            for step, step_cost in steps:
                nxt = cell + step
                if passable[nxt] and base + step_cost < cost[nxt]:
                    cost[nxt] = base + step_cost
                    push(heap, (cost[nxt], nxt))
        return found

    def _steps(self) -> tuple[tuple[int, float], ...]:
        """The eight moves to a neighbouring cell (padded index offset, length in cells)."""
        width = self._width
        return (
            (1, 1.0),
            (-1, 1.0),
            (width, 1.0),
            (-width, 1.0),
            (width + 1, _SQRT2),
            (width - 1, _SQRT2),
            (1 - width, _SQRT2),
            (-1 - width, _SQRT2),
        )

    def _flood(self, start: int, passable: bytes | bytearray) -> bytearray:
        """The cells (padded indices) 8-connected to ``start`` through ``passable`` cells."""
        seen = bytearray(len(passable))
        seen[start] = 1
        todo = [start]
        steps = [step for step, _ in self._steps()]
        while todo:
            cell = todo.pop()
            for step in steps:
                nxt = cell + step
                if passable[nxt] and not seen[nxt]:
                    seen[nxt] = 1
                    todo.append(nxt)
        return seen

    # -- exact checks -------------------------------------------------------------------

    def _blocked_array(self, blocked: Sequence[BaseGeometry]) -> npt.NDArray[np.object_]:
        return np.array(_geometries(blocked, "blocked"), dtype=object)

    def _on_floor(self, p: Point2) -> bool:
        fx0, fy0, fx1, fy1 = self._floor
        return fx0 <= p[0] <= fx1 and fy0 <= p[1] <= fy1

    @staticmethod
    def _path(a: Point2, b: Point2) -> BaseGeometry:
        return Point(a) if a == b else LineString((a, b))

    def _clear(self, a: Point2, b: Point2, blocked_arr: npt.NDArray[np.object_]) -> bool:
        # The floor box is convex, so both ends on it means the whole segment is.
        if not (self._on_floor(a) and self._on_floor(b)):
            return False
        path = self._path(a, b)
        if self._solid_tree.query(path, predicate="dwithin", distance=self._reach).size:
            return False
        return not (blocked_arr.size and shapely.dwithin(blocked_arr, path, self._reach).any())

    def _escape_clear(self, a: Point2, b: Point2, blocked_arr: npt.NDArray[np.object_]) -> bool:
        """Like ``_clear``, but obstacles need only be kept off the robot's disc."""
        if not (self._on_floor(a) and self._on_floor(b)):
            return False
        path = self._path(a, b)
        near = self._solid_tree.query(path, predicate="dwithin", distance=self._reach)
        if self._solid_is_forbidden[near].any():
            return False
        if shapely.dwithin(self._solids[near], path, self._radius_reach).any():
            return False
        return not (blocked_arr.size and shapely.dwithin(blocked_arr, path, self._reach).any())

    # -- grid ---------------------------------------------------------------------------

    def _cells_near(self, geometries: npt.NDArray[np.object_]) -> npt.NDArray[np.intp]:
        """Unpadded flat indices of the cells that some geometry makes unsafe."""
        if not geometries.size:
            return np.empty(0, dtype=np.intp)
        pairs = self._centre_tree.query(geometries, predicate="dwithin", distance=self._cell_reach)
        return np.asarray(pairs[1], dtype=np.intp)

    def _passable_with(self, blocked_arr: npt.NDArray[np.object_]) -> bytes | bytearray:
        cells = self._cells_near(blocked_arr)
        if not cells.size:
            return self._passable
        passable = bytearray(self._passable)
        rows, cols = np.divmod(cells, self._nx)
        for index in ((rows + 1) * self._width + cols + 1).tolist():
            passable[index] = 0
        return passable

    def _centre(self, cell: int) -> Point2:
        row, col = divmod(cell, self._width)
        return (float(self._centres_x[col - 1]), float(self._centres_y[row - 1]))

    def _nearest_cell(
        self, p: Point2, passable: bytes | bytearray, check: _SegmentCheck
    ) -> int | None:
        """The nearest passable cell (padded index) that ``check(p, centre)`` accepts."""
        res = self._res
        span = math.ceil(self._cell_reach / res) + 2
        col = min(max(int((p[0] - self._origin[0]) // res), 0), self._nx - 1)
        row = min(max(int((p[1] - self._origin[1]) // res), 0), self._ny - 1)
        cols = np.arange(max(col - span, 0), min(col + span, self._nx - 1) + 1)
        rows = np.arange(max(row - span, 0), min(row + span, self._ny - 1) + 1)
        cc, rr = np.meshgrid(cols, rows)
        cells = ((rr + 1) * self._width + cc + 1).ravel()
        ok = np.frombuffer(passable, dtype=np.uint8)[cells].astype(bool)
        cells = cells[ok]
        dist2 = (self._centres_x[cc.ravel()[ok]] - p[0]) ** 2 + (
            self._centres_y[rr.ravel()[ok]] - p[1]
        ) ** 2
        for index in np.lexsort((cells, dist2)).tolist():
            cell = int(cells[index])
            if check(p, self._centre(cell)):
                return cell
        return None

    def _astar(self, passable: bytes | bytearray, start: int, goal: int) -> list[int] | None:
        """Cells (padded indices) of a shortest 8-connected path, or None."""
        width = self._width
        goal_row, goal_col = divmod(goal, width)
        steps = self._steps()
        diag_gain = _SQRT2 - 2.0
        cost = [math.inf] * len(passable)
        parent: dict[int, int] = {}
        closed = bytearray(len(passable))
        cost[start] = 0.0
        heap: list[tuple[float, float, int]] = [(0.0, 0.0, start)]
        push, pop = heapq.heappush, heapq.heappop
        while heap:
            _, _, cell = pop(heap)
            if cell == goal:
                path = [cell]
                while cell != start:
                    cell = parent[cell]
                    path.append(cell)
                path.reverse()
                return path
            if closed[cell]:
                continue
            closed[cell] = 1
            base = cost[cell]
            for step, step_cost in steps:
                nxt = cell + step
                if not passable[nxt] or closed[nxt]:
                    continue
                new_cost = base + step_cost
                if new_cost < cost[nxt]:
                    cost[nxt] = new_cost
                    parent[nxt] = cell
                    row, col = divmod(nxt, width)
                    dr = abs(row - goal_row)
                    dc = abs(col - goal_col)
                    h = dr + dc + diag_gain * (dr if dr < dc else dc)
                    push(heap, (new_cost + h, h, nxt))
        return None

    def _shortcut(
        self, waypoints: list[Point2], clear: _SegmentCheck, *, keep_first: bool
    ) -> Route | None:
        """Greedy line-of-sight smoothing; every output segment is checked exactly."""
        route = [waypoints[0]]
        i = 0
        if keep_first:  # the escape segment was checked by its own rule
            route.append(waypoints[1])
            i = 1
        last = len(waypoints) - 1
        while i < last:
            j = i + 1
            if not clear(waypoints[i], waypoints[j]):
                # The grid's margins make this unreachable; refuse rather than risk a hit.
                _log.warning("routing.unsafe_grid_segment", a=waypoints[i], b=waypoints[j])
                return None
            while j < last and clear(waypoints[i], waypoints[j + 1]):
                j += 1
            route.append(waypoints[j])
            i = j
        deduped = [route[0]]
        for point in route[1:]:
            if point != deduped[-1]:
                deduped.append(point)
        if len(deduped) == 1:
            deduped.append(route[-1])
        return tuple(deduped)


def _turning_points(cells: list[int]) -> list[int]:
    """The cells of a grid path where its direction changes, plus its two ends."""
    if len(cells) <= 2:
        return list(cells)
    kept = [cells[0]]
    for before, here, after in zip(cells, cells[1:], cells[2:], strict=False):
        if here - before != after - here:
            kept.append(here)
    kept.append(cells[-1])
    return kept
