"""Single lanes: stretches of a route too narrow to pass a mover in, and waiting for them.

On a floor whose two 2.6 m corridors met only at their ends, the robot followed a
forklift into one, met it coming back at the end of its loop, and shuttled to and fro
behind it for minutes. Where a route runs through a lane that a mover blocks, the
planner does not follow the mover in (``LaneGuard``, used by ``route``):

- **A lane** is a stretch of the route where the free width across it, measured on the
  route planner's grid (the ground the robot's centre may take), is less than twice the
  robot's reach (radius plus clearance) plus the mover's diameter: a mover walking down
  its middle cannot be passed (``narrow_stretches``), for ``_MIN_LENGTH`` or more.
  Measured once per route planned, with numpy over the static grid: no per-tick work.
  Its ground is the route there widened to the lane's walls, cut square to the lane's
  run at its ends (``lane_ground``): not round a turn the route takes at its mouth.
- **Contested**: a mover (in view; for a dead end, also one out of sight where it was
  last seen, ``tracks``: a picker is not seen 15 m up its bay) is in the lane ahead of
  the robot (whichever way it goes: one
  walking away may turn back at the end of its loop, inside the lane), or heads into it
  against the robot (where it will be in ``lane_lookahead_s`` is in the lane), or heads
  into a lane the route ends in (a dead end: a bay with the dock at its closed end; not
  a corner where an aisle opens into a cross aisle, the floor's edge straight on: open
  across for ``_OPEN`` metres),
  whichever way: a robot that followed a picker into its bay met it at the closed end,
  where the picker turned back. The dead end starts at the bay's mouth
  (``dead_end_mouth``): a narrow main lane up to it goes on past the bay and is a lane
  of its own, contested only as such (taken for part of the dead end, every mover
  walking the main lane, or last seen there, kept the robot out of the bay, hard:20).
- **The other way**: the route that keeps off the contested lane, when it is at most
  ``lane_detour`` times the way through it plus ``pass_slack`` metres; taken and kept
  while the task goes to the same target (``LaneKey``), so that the route does not flip
  back when the mover is out of sight (a ``single_lane`` event says so). Kept by the
  target, not by the plan step: a go-to step that runs too long is re-planned as a new
  step, and a robot that forgot the lane it had turned away from with the step turned
  back to it after every re-plan, flip-flopping between two corridors until its battery
  was flat (hard:1).
- **Else it waits at the entry**: the robot follows the way up to the lane and stops
  short of its entry (an empty route, written once it is within its braking distance of
  the stopping point; a ``wait_for_obstacles`` event with the reason ``single_lane``),
  or, when that point is on ground a mover was seen to walk (``tracks``), at a spot
  beside the entry out of every mover's way (``wait_spot``; near a dead end with no such
  spot, out of the ways of the dead end's own movers, when each was seen to come out and
  walk on, or came out and stood waiting for the robot (the side it turns to); else off
  the ways known of them, straight out at least: ``_ways_of_its_movers``); it looks again
  every ``obstacle_replan_interval`` seconds and goes on once the lane is no longer contested
  (and, for a dead end, none of its movers come out of it is on the robot's way to the
  mouth coming nearer: ``_on_approach``), or after ``lane_wait_s`` (then as before: it
  follows the way and the executor keeps back from the mover; but not while a mover in
  view, of the lane or not, walks towards it ahead on its way to the entry, for
  ``_PASSING_S`` more at most, ``_passing``: out of patience, it came out of a bay mouth
  in front of a forklift on cheap hard draw 10 seed 1; each mover it lets pass is said
  once a wait, ``take_let_pass``), but never into a dead end: a mover in there turns
  back at its closed end, and a robot that followed it in is stuck; after
  ``lane_wait_s`` at a dead end the planner sets the task aside when it can serve
  another (``take_blocked``). The watchdog does not count a wait, up to
  ``_EXCUSED_S`` in all for a task's target; past that it does, and a bay that never
  clears ends in a ``stalled`` alarm and the task set aside. A wait the watchdog does not
  count is said all the same once it has lasted ``watchdog_s`` in all for the target: a
  ``long_lane_wait`` warning (``take_long``; a charger taken for a bay's closed end kept
  the robot waiting 360 s of a 409 s run, one of two tasks undelivered, and no alarm).
  The way to where it waits is watched by the stall watch as any route is
  (``approaching``; the watchdog counts it as part of the wait, within ``_EXCUSED_S``):
  held up on it, the robot gives way to the mover beside it (``route``), and then goes
  on to where it waits; the wait is kept (dropped, it let a robot that had given way
  drift into a bay behind its picker and be shut in at the closed end, hard:30).
  A robot already in a lane when the mover is seen has no entry to wait at: it takes the
  other way, or keeps to the way as before; but a robot that finds a mover ahead of it in
  a dead end backs out of it to wait (in it also when it stands where the dead end is
  narrow across its run, though its way sets off sideways first: ``_stands_in``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial
from typing import Final

import numpy as np
import numpy.typing as npt
import shapely
import shapely.ops
from shapely.geometry import LineString, Point, Polygon
from shapely.geometry.base import BaseGeometry

from cabins.planner.give_way import travel_direction
from cabins.planner.seen import Seen
from cabins.planner.settings import PlannerSettings
from cabins.planner.tracks import Tracks, mover_radius
from cabins.planner.wait_spot import wait_route
from cabins.warehouse.motion import BRAKE_FRACTION, REACTION_S
from cabins.warehouse.routing import Point2, Route, RoutePlanner
from runtime.cabin_map import Feature

__all__ = [
    "Lane",
    "LaneGuard",
    "LaneKey",
    "LetPass",
    "LongWait",
    "lane_ground",
    "narrow_stretches",
]

_STEP: Final = 0.25  # m between the route's samples
_SNAP: Final = 3  # half cells across a route within which a sample finds its free run
_MIN_LENGTH: Final = 3.0  # m: a narrow stretch shorter than this is no lane
# (between two bay mouths along a lane, say: the mouths are passing places; taken for
# lanes, the robot waited for every person walking the lane, and spent its patience there)
_STOP_SHORT: Final = 0.5  # m kept between the robot's disc and a lane's entry when it waits
_BEHIND: Final = 0.5  # m: a mover this far behind the robot along the route is not ahead
_NEAR: Final = 3.0  # m from a dead end's ground within which a mover that walks into it may
_BEYOND: Final = 1.5  # m past a route's end within which a lane it ends in must close
_OPEN: Final = 6.0  # m across a route's end, open, that make it a cross aisle, not a bay
_OUT: Final = 1.5  # m out of a dead end's mouth where a mover coming out turns
_ACROSS: Final = 8.0  # m either way across the mouth a mover coming out may walk
_WAY_OUT_RADIUS: Final = 0.3  # m: a person's radius, the ground about those ways
_LEADS_ON: Final = 4.0  # m beyond the turn out of a dead end a track shows the way it goes
_RUN_OUT: Final = 1.0  # m of a way from a lane's start that give the way out of it
_RUN: Final = 1.0  # m of a lane's route from either end that gives the way the lane runs
_FACING: Final = 0.6  # m between a standing mover's disc and the robot's: it waits for the robot
_YIELD_GAP: Final = 0.3  # m a walking person keeps from the robot's disc: nearer, it stops
_AT_SPOT: Final = 0.5  # m from the spot beside a lane's entry within which the robot is at it
_EXCUSED_S: Final = 600.0  # s of waiting per task target the watchdog does not count
# (a picker in a bay 27 m deep, walking 0.5 m/s, is back out in 108 s; on a busy lane the
# robot waits for it several times, and for the lane's own traffic on the way there)
_PASSING_S: Final = 10.0  # s past lane_wait_s a wait lasts while a mover passes its way in


LaneKey = tuple[str | None, str | None]
"""What lanes are avoided and waited at for: the task, and the target of its go-to step."""


def narrow_stretches(
    router: RoutePlanner, line: LineString, width: float
) -> list[tuple[float, float, float]]:
    """``(start, end, widest)`` in metres along ``line`` for each stretch where the free width
    across it on ``router``'s grid (the width its centre may take, plus a cell diagonal for
    the grid's margin) is less than ``width``, for ``_MIN_LENGTH`` or more (or from the
    line's start: the robot is in one, and it goes on behind); ``widest`` is the stretch's
    widest such width. A sample whose own cell is not free is measured from the nearest
    free cell across the line within ``_SNAP`` half cells, and with none (a dock in a
    shelf's margin) counts as wide."""
    length = float(line.length)
    if length <= 0.0:
        return []
    along = np.arange(0.0, length + 1e-9, _STEP)
    found, free_width = _free_widths(router, _at(line, along), _normals(line, along), width)
    narrow = found & (free_width < width)
    stretches: list[tuple[float, float, float]] = []
    start: int | None = None
    for i, flag in enumerate([*narrow.tolist(), False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            a, b = float(along[start]), float(along[i - 1])
            if b - a >= _MIN_LENGTH or start == 0:  # (in one already: it goes on behind)
                stretches.append((a, b, float(free_width[start:i].max())))
            start = None
    return stretches


def _normals(line: LineString, along: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The unit normals of ``line`` at the points ``along`` metres along it, (n, 2)."""
    length = float(line.length)
    heading = _at(line, np.minimum(along + 0.05, length)) - _at(line, np.maximum(along - 0.05, 0.0))
    norm = np.hypot(heading[:, 0], heading[:, 1])
    norm[norm == 0.0] = 1.0
    normals: npt.NDArray[np.float64] = (
        np.stack([-heading[:, 1], heading[:, 0]], axis=1) / norm[:, None]
    )
    return normals


def _free_widths(
    router: RoutePlanner,
    xy: npt.NDArray[np.float64],
    normal: npt.NDArray[np.float64],
    width: float,
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
    """For each point of ``xy``: whether it finds free ground on ``router``'s grid (its own
    cell, else the nearest free one across within ``_SNAP`` half cells), and the free width
    across it along its ``normal`` (measured out to ``width`` either way, plus a cell
    diagonal for the grid's margin)."""
    problem, grid = router.problem, router.grid
    res = problem.resolution
    minx, miny = problem.bounds[0], problem.bounds[1]
    step = res / 2.0
    count = math.ceil(width / step) + 1
    offsets = np.arange(-count, count + 1) * step
    cross = xy[:, None, :] + offsets[None, :, None] * normal[:, None, :]
    cols = np.floor((cross[..., 0] - minx) / res).astype(int)
    rows = np.floor((cross[..., 1] - miny) / res).astype(int)
    inside = (cols >= 0) & (rows >= 0) & (cols < grid.shape[1]) & (rows < grid.shape[0])
    free = np.zeros(cols.shape, dtype=bool)
    free[inside] = grid[rows[inside], cols[inside]]
    # the free run across each sample: from its own cell, or the nearest free one within
    # _SNAP (a route hugging the edge of a bay's free band samples cells just off it)
    centre = np.full(len(xy), -1)
    for k in sorted(range(-_SNAP, _SNAP + 1), key=abs):
        pick = (centre < 0) & free[:, count + k]
        centre[pick] = count + k
    found = centre >= 0
    c = np.where(found, centre, count)[:, None]
    across = len(offsets)
    pos = np.arange(across)[None, :]
    up = np.where(~free & (pos >= c), pos, across).min(axis=1)
    down = np.where(~free & (pos <= c), pos, -1).max(axis=1)
    free_width = (up - down - 1) * step + res * math.sqrt(2.0)
    return found, free_width


def dead_end_mouth(
    router: RoutePlanner, line: LineString, start: float, end: float, width: float
) -> float:
    """Where the dead end a lane from ``start`` to ``end`` metres along ``line`` ends in
    begins: past the last point of the lane where the ground opens across the dead end's
    own run (the free width across the route's last heading reaches ``width``). A bay
    entered from a single main lane is the dead end, not the main lane up to its mouth:
    movers walking the main lane go on past the bay, and taken for movers in the dead
    end they kept the robot out of the bay for good (hard:20). ``start`` when the ground
    never opens (a lane that narrows straight into the dead end)."""
    length = float(line.length)
    along = np.arange(start, min(end, length) + 1e-9, _STEP)
    if len(along) < 2:
        return start
    tip = line.interpolate(length)
    back = line.interpolate(max(length - _STEP, 0.0))
    dx, dy = tip.x - back.x, tip.y - back.y
    norm = math.hypot(dx, dy)
    if norm == 0.0:
        return start
    normal = np.tile([-dy / norm, dx / norm], (len(along), 1))
    xy, across = _at(line, along), _normals(line, along)
    # the widest run from the route's sample and the cells across the route within _SNAP
    # half cells (a route hugging the edge of the main lane's free band samples cells
    # just off it, or in the mouth of the bay beside it)
    wide_at = np.zeros(len(along), dtype=bool)
    half = router.problem.resolution / 2.0
    for k in range(-_SNAP, _SNAP + 1):
        found, free_width = _free_widths(router, xy + k * half * across, normal, width)
        wide_at |= found & (free_width >= width)
    wide = np.flatnonzero(wide_at)
    return start if len(wide) == 0 else float(along[min(wide[-1] + 1, len(along) - 1)])


@dataclass(frozen=True, slots=True)
class Lane:
    """A lane of a route: from ``start`` to ``end`` metres along it, its ``ground`` (the
    stretch ahead of the robot widened to the lane's walls), the movers that contest it,
    whether the route ends in it (a dead end), and the ground of all of it (``whole``)."""

    start: float
    end: float
    ground: BaseGeometry
    movers: tuple[str, ...]
    dead_end: bool = False
    whole: BaseGeometry | None = None
    gauge: float = 0.0  # m: the free width under which the route's stretches were lanes
    half_width: float = 0.0  # m: how far the lane's ground reaches either side of the route


@dataclass(frozen=True, slots=True)
class LongWait:
    """A lane waited for as long as the watchdog allows anything else: its ``movers``,
    the ``seconds`` waited in all for the key, and whether it is a ``dead_end``."""

    movers: tuple[str, ...]
    seconds: float
    dead_end: bool


@dataclass(frozen=True, slots=True)
class LetPass:
    """Out of patience, a through lane's wait lets a mover pass first: the ``mover``, the
    ``seconds`` waited by then, and the ``lane`` (``LaneGuard._passing``)."""

    mover: str
    seconds: float
    lane: Lane


@dataclass(slots=True)
class _Wait:
    """Waiting at a lane's entry: for ``step`` (the task and its target), on the route
    ``line``, stopping at ``stop`` metres along it, since ``since``; ``holding`` once the
    route was cleared to stop."""

    step: LaneKey
    way: Route
    line: LineString
    stop: float
    lane: Lane
    since: float
    checked: float
    holding: bool = False
    base: float = 0.0  # s waited for this key before this wait
    blocked_told: bool = False  # the dead end's wait outlasted lane_wait_s, and was told
    aside: Route | None = None  # the route to a spot beside the entry, out of the movers' ways
    mouth: Point2 | None = None  # backed out of a dead end: the point past its mouth it made for
    let_pass: set[str] = field(default_factory=set)  # movers let pass first (``_passing``)


class LaneGuard:
    """Finds the contested lane of a way, keeps the lanes avoided per step, and holds the
    robot at a lane's entry (see the module docstring)."""

    def __init__(self, settings: PlannerSettings, tracks: Tracks | None = None) -> None:
        self._settings = settings
        self._tracks = Tracks() if tracks is None else tracks
        self._waited: dict[LaneKey, float] = {}  # seconds waited for a lane, per key
        self._avoided: tuple[LaneKey, list[BaseGeometry]] | None = None  # (key, lane grounds)
        self._wait: _Wait | None = None
        self._patience_spent: LaneKey | None = None  # the key that waited lane_wait_s already
        self._blocked: tuple[str, ...] | None = None  # a dead end's movers, waited out too long
        self._faced: dict[str, Point2] = {}  # a dead end's mover -> where it waited for the robot
        self._told_long: set[LaneKey] = set()  # keys whose long wait was said (``take_long``)
        self._let_pass: tuple[LetPass, ...] = ()  # movers let pass, not said (``take_let_pass``)

    @property
    def waiting(self) -> bool:
        """Whether the robot waits at a lane's entry."""
        return self._wait is not None

    def approaching(self, seen: Seen) -> bool:
        """Whether the robot waits for a lane but is still on its way to where it waits
        (up to the stopping point, not held yet, or to the spot beside the entry, farther
        than ``_AT_SPOT`` from it): the stall watch watches that way as any route, and a
        mover met on it is a stand-off (hard:10 s0: on its way to a spot beside a bay, the
        robot met a forklift at its loop's end, which turned back into the robot's way and
        yielded to it, again and again; excused as waiting for the bay, the robot neither
        re-planned nor gave way, for 250 s). Held up on it, it gives way first
        (``RouteKeeper.desired``)."""
        wait = self._wait
        if wait is None or seen.pose is None:
            return False
        if wait.aside is not None:
            return bool(wait.aside) and math.dist(wait.aside[-1], seen.pose) > _AT_SPOT
        return not wait.holding

    @property
    def excused(self) -> bool:
        """Whether the robot waits for a lane, and has waited less than ``_EXCUSED_S`` in
        all for its key: the watchdog does not count such a wait."""
        wait = self._wait
        return wait is not None and self._waited.get(wait.step, 0.0) < _EXCUSED_S

    @property
    def aside(self) -> Route | None:
        """The route to the spot beside a lane's entry the robot waits at, if it does."""
        return None if self._wait is None else self._wait.aside

    def way_left(self, seen: Seen) -> float | None:
        """The metres left along the way of the wait, from where the robot stands (None
        when it does not wait)."""
        wait = self._wait
        if wait is None or seen.pose is None:
            return None
        return float(wait.line.length) - float(wait.line.project(Point(seen.pose)))

    def stop_waiting(self, step: LaneKey) -> None:
        """End the wait on ``step``, and wait no more on it (the battery cannot afford it)."""
        self._wait = None
        self._patience_spent = step

    def take_long(self, limit: float) -> LongWait | None:
        """The wait, once per key, when the robot has waited ``limit`` seconds in all for
        its key's lanes (the watchdog's own limit: the watchdog does not count such a
        wait, up to ``_EXCUSED_S``, so it is said here instead); None otherwise."""
        wait = self._wait
        if wait is None or wait.step in self._told_long:
            return None
        waited = self._waited.get(wait.step, 0.0)
        if waited < min(limit, _EXCUSED_S):  # (past the excuse, the watchdog counts it)
            return None
        self._told_long.add(wait.step)
        return LongWait(wait.lane.movers, waited, wait.lane.dead_end)

    def take_let_pass(self) -> tuple[LetPass, ...]:
        """The movers a through lane's wait, out of patience, began to let pass first
        since the last call (each once a wait, ``_passing``), with the seconds waited by
        then; none otherwise. The seconds the hold adds would be silent otherwise: the
        wait's own ``wait_for_obstacles`` event was said when it began."""
        let_pass, self._let_pass = self._let_pass, ()
        return let_pass

    def take_blocked(self) -> tuple[str, ...] | None:
        """The movers of a dead end the robot has waited for ``lane_wait_s`` already (once
        per wait; None when that did not happen since the last call): the planner sets the
        task aside when it can serve another, as when cornered in a stand-off."""
        blocked, self._blocked = self._blocked, None
        return blocked

    def ghosts(self, seen: Seen) -> bool:
        """Whether a mover out of sight may stand where the robot goes (``Tracks``)."""
        return bool(self._tracks.ghosts(seen))

    def avoided(self, step: LaneKey) -> list[BaseGeometry]:
        """The grounds of the lanes the routes for ``step`` (task, target) keep off."""
        avoided = self._avoided
        return avoided[1] if avoided is not None and avoided[0] == step else []

    def avoid(self, step: LaneKey, lane: Lane) -> None:
        """Keep the routes for ``step`` (task, target) off ``lane`` while it lasts."""
        self._avoided = (step, [*self.avoided(step), lane.ground])
        self._wait = None

    def contested(self, router: RoutePlanner, seen: Seen, way: Route, reach: float) -> Lane | None:
        """The first lane of ``way`` ahead of the robot that a mover contests: one in view,
        or, for a dead end, one out of sight where it was last seen (``Tracks.ghosts``)."""
        movers = [f for f in seen.obstacles if f.geometry.area > 0]
        ghosts = [f for f in self._tracks.ghosts(seen) if f.geometry.area > 0]
        if len(way) < 2 or not (movers or ghosts) or seen.pose is None:
            return None
        line = LineString(way)
        size = max(mover_radius(f) for f in (*movers, *ghosts))
        here = float(line.project(Point(seen.pose)))
        gauge = 2.0 * (reach + size)
        for start, end, widest, dead_end in _lanes_of(router, line, gauge, reach):
            if end <= here:
                continue
            # only the lane ahead: the robot may stand in it, and the other way leads back
            first = min(max(start, here + reach + _STOP_SHORT), end - _STEP)
            half = widest / 2.0 + reach
            ground = lane_ground(line, first, end, half)
            suspects = [*movers, *ghosts] if dead_end else movers
            inside = [f.id for f in suspects if self._contests(f, ground, line, here, dead_end)]
            if inside:
                whole = lane_ground(line, start, end, half)
                lane = Lane(start, end, ground, tuple(sorted(inside)), dead_end, whole, gauge, half)
                return lane
        return None

    def _contests(
        self,
        mover: Feature,
        ground: BaseGeometry,
        line: LineString,
        here: float,
        dead_end: bool,
    ) -> bool:
        """Whether ``mover`` is in ``ground`` ahead of the robot (at ``here`` along
        ``line``), or heads into it against the robot (into a ``dead_end``, whichever
        way)."""
        centre = mover.geometry.centroid
        along = float(line.project(centre))
        if along < here - _BEHIND:
            return False
        if mover.geometry.intersects(ground):
            return True
        vx, vy = _velocity(mover)
        lookahead = self._settings.lane_lookahead_s
        later = Point(centre.x + vx * lookahead, centre.y + vy * lookahead)
        if dead_end and self._walks_in(mover, ground, (vx, vy)):
            return True
        if not later.intersects(ground):
            return False
        if dead_end:
            return True
        a = line.interpolate(max(along - 0.1, 0.0))
        b = line.interpolate(min(along + 0.1, float(line.length)))
        return bool(vx * (b.x - a.x) + vy * (b.y - a.y) < 0.0)  # against the robot's way

    def _walks_in(self, mover: Feature, ground: BaseGeometry, velocity: Point2) -> bool:
        """Whether ``mover`` was seen to walk into ``ground`` (its track crosses it) and is
        near it now (``_NEAR`` metres), not walking away: a picker coming back along the
        lane to its bay turns into it at the mouth, which no straight look ahead sees."""
        centre = mover.geometry.centroid
        gap = float(ground.distance(centre))
        if gap > _NEAR:
            return False
        swept = self._tracks.swept(mover.id)
        if swept is None or not swept.intersects(ground):
            return False
        nearest = shapely.ops.nearest_points(ground, centre)[0]
        towards = (nearest.x - centre.x) * velocity[0] + (nearest.y - centre.y) * velocity[1]
        return bool(towards >= 0.0)

    def may_wait(self, step: LaneKey) -> bool:
        """Whether the robot may still wait at a lane's entry on ``step``."""
        return self._patience_spent != step

    def wait(
        self,
        seen: Seen,
        step: LaneKey,
        way: Route,
        lane: Lane,
        reach: float,
        *,
        router: RoutePlanner,
        blocked: list[BaseGeometry],
    ) -> bool:
        """Wait at ``lane``'s entry on ``way`` (True), unless the robot is in it already:
        at the stopping point short of it, or at a spot beside it out of the movers' ways
        (``wait_spot``; ``blocked`` is what a route there keeps clear of). In a dead end
        already, it backs out to wait: the mover ahead of it in there cannot come out past
        it (``_back_out``)."""
        assert seen.pose is not None
        line = LineString(way)
        here = float(line.project(Point(seen.pose)))
        stop = lane.start - reach - _STOP_SHORT
        inside = here > lane.start or lane.start < _STEP  # (the lane starts where it is)
        if inside and not lane.dead_end:
            return False  # in the lane already: no entry to wait at
        # no room to stop short of a dead end's entry, and standing where it is narrow
        # across its run: in it already, though the route sets off sideways to its axis
        in_it = (
            not inside and lane.dead_end and stop <= here and _stands_in(router, seen, line, lane)
        )
        known = self._wait
        base = self._waited.get(step, 0.0)
        let_pass: set[str] = set()
        if known is not None and known.step == step:  # the same wait, routed again
            since, aside, base, mouth = known.since, known.aside, known.base, known.mouth
            let_pass = known.let_pass
        else:
            since = seen.time
            at = -1.0 if inside or in_it else max(stop, here)  # (from inside: the entry is behind)
            aside, mouth = self._aside(router, seen, line, lane, at, reach, blocked)
            if in_it and aside is None:  # no way out found: where it stands, as before
                aside, mouth = self._aside(
                    router, seen, line, lane, max(stop, here), reach, blocked
                )
            if inside and aside is None:
                return False
        self._wait = _Wait(
            step,
            way,
            line,
            stop,
            lane,
            since,
            seen.time,
            aside=aside,
            base=base,
            mouth=mouth,
            let_pass=let_pass,
        )
        return True

    def _aside(
        self,
        router: RoutePlanner,
        seen: Seen,
        line: LineString,
        lane: Lane,
        stop: float,
        reach: float,
        blocked: list[BaseGeometry],
    ) -> tuple[Route | None, Point2 | None]:
        """The route to where the robot waits for ``lane`` (None: the stopping point
        ``stop`` metres along ``line``): a spot beside the entry off every mover's way
        (``wait_spot``; for a dead end, also off the ways out of it, ``_ways_out``). From
        inside a dead end (``stop`` negative), the robot backs out of it: a mover ahead of
        it in there cannot come out past it (a picker in its bay), and the entry is behind
        it, off ``line``; then also the point past the mouth it backs out to (else None)."""
        assert seen.pose is not None
        swept = [g for m in self._tracks.movers() if (g := self._tracks.swept(m)) is not None]
        inside = stop < 0.0
        if inside:
            # straight back out of it, else back along the robot's trail (a dead end that
            # bends): a robot that turned in the lane cut its trail's narrow stretch short
            # at the turn, inside the lane (``_outside_ahead_of``)
            behind = _outside_ahead_of(router, line, seen.pose, lane, reach)
            if behind is None:
                behind = _outside_behind(router, self._tracks.trail(), lane.gauge, reach)
            if behind is None:
                return None, None
            entry = behind
            into = LineString([entry, seen.pose])
            ground = shapely.union(lane.whole or lane.ground, into.buffer(lane.half_width))
            mouth = min(reach + _STOP_SHORT, float(into.length))
        else:
            at = line.interpolate(stop)
            entry, into, ground, mouth = (float(at.x), float(at.y)), line, lane.ground, lane.start
        if lane.dead_end:
            swept.append(_ways_out(into, mouth))
        near = partial(
            wait_route,
            router,
            seen.pose,
            entry,
            lane=ground,
            blocked=blocked,
            reach=reach,
            way=math.dist(seen.pose, entry),
        )
        route = near(swept=swept, through=inside)
        if inside and route is None:  # no spot off the ways: back out to the entry
            route = router.plan(seen.pose, entry, blocked=blocked)
        elif route is None and lane.dead_end:  # off the dead end's own movers' ways, then
            route = near(swept=self._ways_of_its_movers(lane, into, mouth))
        return route, entry if inside else None

    def _ways_of_its_movers(self, lane: Lane, into: LineString, mouth: float) -> list[BaseGeometry]:
        """The ways known that a dead end's own movers walk out of it: straight out of its
        mouth, then, for each mover seen to walk out and on, along the ground its track
        covers beyond (which way a picker turns on leaving its bay, and how far it walks),
        or, for one that came out and waited for the robot (``_faces``), across the mouth
        to the side the robot stood on. Of a mover with neither, which way it turns is not
        known: only the way straight out is kept off (waiting at the stopping point beside
        the bay's axis, the robot stood on its way out whichever way it turned, hard:55).

        A spot off every mover's way may not exist near a bay's mouth (hard:70: a main
        lane along a wall, walked end to end by two forklifts): the robot waited at the
        mouth itself, on the picker's way out; the picker met it, turned back into its
        bay, and did so for the rest of the run. Off the picker's own way, within sight
        of the mouth, the robot may stand where a forklift walks: the forklift yields and
        turns back, and the bay's picker comes out and goes on."""
        out = _out_of(into, mouth)
        ways = [_ways_out(into, mouth, across=0.0)]
        for mover in lane.movers:
            track = self._tracks.swept(mover)
            faced = self._faced.get(mover)
            if track is not None and _leads_on(track, out, lane.whole or lane.ground):
                ways.append(track)
            elif faced is not None:
                ways.append(_ways_out(into, mouth, towards=faced))
        return ways

    def hold(
        self, seen: Seen, step: LaneKey, router: RoutePlanner | None, reach: float
    ) -> Route | bool | None:
        """While waiting on ``step``: the route to follow now (none, to hold the robot at
        the stopping point; the route to the spot it waits at), False to go on along the
        way up to the stopping point; None when the wait is over (route again)."""
        wait = self._wait
        if wait is None or wait.step != step or seen.pose is None:
            self._wait = None
            return None if wait is not None else False
        settings = self._settings
        self._waited[step] = wait.base + seen.time - wait.since
        if wait.lane.dead_end and self._faces(seen, wait.lane):
            self._wait = None  # it waits on the mover's way out: wait elsewhere
            return None
        if seen.time - wait.checked >= settings.obstacle_replan_interval and router is not None:
            wait.checked = seen.time
            passing = False  # out of patience, letting a mover pass before it goes in
            if seen.time - wait.since >= settings.lane_wait_s:
                if not wait.lane.dead_end:
                    passing = self._passing(seen, wait, reach)
                    if not passing:
                        self._patience_spent = step
                        self._wait = None
                        return None
                elif not wait.blocked_told:  # never in behind: the planner may set it aside
                    wait.blocked_told = True
                    self._blocked = wait.lane.movers
            if (
                not passing
                and self.contested(router, seen, wait.way, reach) is None
                and not _on_approach(seen, wait, reach)
            ):
                self._wait = None
                return None
        if wait.aside is not None:
            return wait.aside
        if not wait.holding:
            speed = abs(seen.speed or 0.0)
            brake = BRAKE_FRACTION * seen.limits.max_accel
            stopping = speed * speed / (2.0 * brake) + speed * REACTION_S
            here = float(wait.line.project(Point(seen.pose)))
            wait.holding = bool(wait.stop - here <= stopping)
        return () if wait.holding else False

    def _passing(self, seen: Seen, wait: _Wait, reach: float) -> bool:
        """Whether a through lane's wait, out of patience (``lane_wait_s``), lasts while a
        mover in view, of the lane or not, walks towards the robot within its reach and
        ``_YIELD_GAP`` of the straight way from it to the lane's start, ahead of it along
        that way (``_on_approach``), for ``_PASSING_S`` more at most: then the robot goes
        in, as it would have, once the mover has passed, stopped or turned away. (Cheap
        hard draw 10 seed 1: waiting in a bay mouth for a person in the main lane, out of
        patience, the robot came out 1.7 m in front of a forklift walking the lane towards
        it, not one of the lane's movers; the forklift stopped and turned back, the robot
        followed it to its loop's end, met it coming back there, and a ``stalled`` alarm
        fired. Now it goes once the forklift is past.) While it lasts, the wait does not
        end because the lane is clear either."""
        waited = seen.time - wait.since
        if waited >= self._settings.lane_wait_s + _PASSING_S:
            return False
        movers = _on_approach(seen, wait, reach, anyone=True)
        for mover in movers:
            if mover not in wait.let_pass:
                wait.let_pass.add(mover)
                self._let_pass += (LetPass(mover, waited, wait.lane),)
        return bool(movers)

    def _faces(self, seen: Seen, lane: Lane) -> bool:
        """Whether a mover of the dead end ``lane`` stands by the robot waiting for it:
        the robot waits on that mover's way out, and the side it stands on is the side the
        mover turns to on leaving (kept, ``_faced``). True when that was not known."""
        assert seen.pose is not None
        new = False
        for feature in seen.obstacles:
            if feature.id not in lane.movers or travel_direction(feature.props) is not None:
                continue
            gap = feature.geometry.distance(Point(seen.pose)) - seen.limits.radius
            faced = self._faced.get(feature.id)
            if gap <= _FACING and (faced is None or math.dist(faced, seen.pose) > _FACING):
                self._faced[feature.id] = (float(seen.pose[0]), float(seen.pose[1]))
                new = True
        return new

    def forget(self) -> None:
        """No lane is avoided or waited at any more."""
        self._avoided = None
        self._wait = None


def lane_ground(line: LineString, start: float, end: float, half: float) -> BaseGeometry:
    """The ground of the stretch of ``line`` from ``start`` to ``end`` metres: the route
    there widened by ``half`` either side, its ends cut square to the lane's own run.

    Widened as it is, a route that turns into a bay a few centimetres inside its mouth
    reached back out of the bay: the flat end of the short piece before the turn, and the
    round join of the turn, stood up to 2 m out into the lane the bay opens on. Every
    mover walking that lane past the mouth, and every one last seen there, was then taken
    for one in the bay, and the robot, carrying the item for the bay's dock, waited for
    the bay for the rest of the run (hard:45 seed 1: 13 stalls)."""
    ground = shapely.ops.substring(line, start, end).buffer(half, cap_style="flat")
    cut = half + _RUN
    for at, towards in ((start, min(start + _RUN, end)), (end, max(end - _RUN, start))):
        a, b = line.interpolate(at), line.interpolate(towards)
        norm = math.hypot(b.x - a.x, b.y - a.y)
        if norm == 0.0:
            continue
        ux, uy = (b.x - a.x) / norm, (b.y - a.y) / norm  # along the lane, into it
        sx, sy = -uy * cut, ux * cut
        bx, by = a.x - ux * cut, a.y - uy * cut
        behind = Polygon(
            [(a.x + sx, a.y + sy), (a.x - sx, a.y - sy), (bx - sx, by - sy), (bx + sx, by + sy)]
        )
        ground = ground.difference(behind)
    return ground


def _lanes_of(
    router: RoutePlanner, line: LineString, gauge: float, reach: float
) -> list[tuple[float, float, float, bool]]:
    """``(start, end, widest, dead_end)`` for each lane of ``line`` (``narrow_stretches``
    under ``gauge``): a dead end where the route ends in it and the ground closes past
    its end, narrow across it there too (``_open_across_end``); the narrow way up to a
    dead end's mouth (``dead_end_mouth``) is a lane of its own that goes on, when it is
    ``_MIN_LENGTH`` or longer, else no lane."""
    lanes: list[tuple[float, float, float, bool]] = []
    length = float(line.length)
    for start, end, widest in narrow_stretches(router, line, gauge):
        dead_end = (
            length - end <= reach + _STOP_SHORT
            and _closed_beyond(router, line)
            and not _open_across_end(router, line, gauge)
        )
        mouth = dead_end_mouth(router, line, start, end, gauge) if dead_end else start
        if mouth - start >= _MIN_LENGTH:
            lanes.append((start, mouth, widest, False))
        lanes.append((mouth, end, widest, dead_end))
    return lanes


def _ways_out(
    line: LineString, start: float, across: float = _ACROSS, towards: Point2 | None = None
) -> BaseGeometry:
    """The ground a mover coming out of a dead end that starts ``start`` metres along
    ``line`` may take: straight out of its mouth, then ``across`` metres either way across
    it (a picker leaves its bay and turns along the lane, and a robot waiting on its way,
    which it had never been seen to walk, stopped it and sent it back into the bay, for
    good); with ``towards``, only to the side of the mouth that point lies on."""
    mouth = line.interpolate(start)
    out = _out_of(line, start)
    straight = LineString([(mouth.x, mouth.y), out])
    if across <= 0.0:
        return straight.buffer(_WAY_OUT_RADIUS)
    ux, uy = (mouth.x - out[0]) / _OUT, (mouth.y - out[1]) / _OUT
    left = (out[0] - uy * across, out[1] + ux * across)
    right = (out[0] + uy * across, out[1] - ux * across)
    if towards is not None:  # the side of the line straight out that ``towards`` is on
        side = (towards[0] - out[0]) * -uy + (towards[1] - out[1]) * ux
        left, right = (left, out) if side >= 0.0 else (out, right)
    return shapely.union(straight, LineString([left, right])).buffer(_WAY_OUT_RADIUS)


def _out_of(line: LineString, start: float) -> Point2:
    """Where a mover coming out of a dead end that starts ``start`` metres along ``line``
    turns: ``_OUT`` metres straight out of its mouth."""
    mouth = line.interpolate(start)
    inner = line.interpolate(min(start + _STEP, float(line.length)))
    dx, dy = inner.x - mouth.x, inner.y - mouth.y
    norm = math.hypot(dx, dy) or 1.0
    return (mouth.x - dx / norm * _OUT, mouth.y - dy / norm * _OUT)


def _leads_on(track: BaseGeometry, out: Point2, dead_end: BaseGeometry) -> bool:
    """Whether a mover's swept ``track`` comes out of a dead end (its ground ``dead_end``)
    to ``out``, where a mover coming out turns, and goes on ``_LEADS_ON`` metres or more
    beyond it: the track shows which way the mover turns."""
    turn = Point(out)
    if track.distance(turn) > _OUT:
        return False
    beyond = track.difference(dead_end).difference(turn.buffer(_LEADS_ON))
    return not beyond.is_empty


def _on_approach(seen: Seen, wait: _Wait, reach: float, *, anyone: bool = False) -> tuple[str, ...]:
    """The movers (their ids; none: empty) of the dead end waited for, come out of it, in
    view on the robot's way to its mouth (within ``reach`` and ``_YIELD_GAP`` of the
    straight way there) and coming nearer the robot. A picker out of its bay walked
    the main lane past the mouth towards the robot; the robot set off for the bay at once
    and met it there, the picker stopped before it and turned back into its bay, and the
    robot waited for the bay again, five times, until its battery sent it to charge
    (hard:35 seed 0). One walking away, or turning back into its bay at the end of its
    loop, is let be: behind it is the robot's chance to go in. With ``anyone``, any mover
    in view and any lane (the way to a through lane's entry, the lane's start on the way
    as it is now: ``LaneGuard._passing``), and only those ahead of the robot along that
    way (one behind it, walking the way the robot goes, does not meet it)."""
    if not (wait.lane.dead_end or anyone) or seen.pose is None:
        return ()
    if wait.mouth is not None:  # backed out: its way is off the line, past the mouth
        mouth = wait.mouth
    else:
        at = wait.line.interpolate(wait.lane.start)
        mouth = (float(at.x), float(at.y))
    way = LineString([seen.pose, mouth])
    near = reach + _YIELD_GAP
    robot = seen.pose
    coming: list[str] = []
    for f in seen.obstacles:
        if not (anyone or f.id in wait.lane.movers) or float(f.geometry.distance(way)) >= near:
            continue
        heading, centre = travel_direction(f.props), f.geometry.centroid
        if heading is None:
            continue  # standing: waiting for the robot, or turning
        if anyone and float(way.project(centre)) <= 0.0:
            continue  # behind the robot
        if heading[0] * (robot[0] - centre.x) + heading[1] * (robot[1] - centre.y) > 0.0:
            coming.append(f.id)  # coming nearer: it would meet the robot on its way
    return tuple(coming)


def _stands_in(router: RoutePlanner, seen: Seen, line: LineString, lane: Lane) -> bool:
    """Whether the robot stands where ``lane`` (of the route ``line``) is narrow: the free
    width across the lane's run at its start, measured at the robot, is under its gauge.
    A route from a robot standing off a bay's axis sets off sideways onto it, and the
    lane, measured along that first leg, began half a metre ahead of the robot: taken for
    one at the bay's entry, the robot waited where it stood, 12 m deep in the bay, and its
    picker, walking back out, met it and turned back in, for 200 s (hard:95 seed 1)."""
    assert seen.pose is not None
    run = _out_of_lane(router, line, lane)
    if run is None:
        return False
    out = run[1]
    normal = np.array([[-out[1], out[0]]])
    found, width = _free_widths(router, np.array([seen.pose], dtype=float), normal, lane.gauge)
    return bool(found[0] and width[0] < lane.gauge)


def _out_of_lane(router: RoutePlanner, way: LineString, lane: Lane) -> tuple[Point2, Point2] | None:
    """Where ``lane`` of ``way`` runs on free ground first, from its start on, and the unit
    vector straight out of it there: back along the way's next ``_RUN_OUT`` metres (its
    run, not the way's first leg, which may set off sideways onto it from a robot in a
    shelf's margin; not the whole lane, which may bend). None when there is no such
    ground or run."""
    length = float(way.length)
    start = min(max(lane.start, 0.0), length)
    for along in np.arange(start, min(start + _RUN_OUT, length) + 1e-9, _STEP):
        here = way.interpolate(float(along))
        origin = (float(here.x), float(here.y))
        if not router.is_free(origin):
            continue
        ahead = way.interpolate(min(float(along) + _RUN_OUT, length))
        dx, dy = origin[0] - ahead.x, origin[1] - ahead.y
        norm = math.hypot(dx, dy)
        return None if norm == 0.0 else (origin, (dx / norm, dy / norm))
    return None


def _outside_behind(
    router: RoutePlanner, trail: LineString | None, gauge: float, reach: float
) -> Point2 | None:
    """Where to stop just outside the lane the robot stands in, back along the way it came
    (``trail``, from the robot back): the lane's mouth, where the free width across reaches
    ``gauge`` again, and ``reach`` and ``_STOP_SHORT`` beyond it; None with no trail."""
    if trail is None or trail.length <= 0.0:
        return None
    stretches = narrow_stretches(router, trail, gauge)
    mouth = stretches[0][1] if stretches and stretches[0][0] == 0.0 else 0.0
    at = trail.interpolate(min(mouth + reach + _STOP_SHORT, float(trail.length)))
    return (float(at.x), float(at.y))


def _outside_ahead_of(
    router: RoutePlanner, way: LineString, pose: Point2, lane: Lane, reach: float
) -> Point2 | None:
    """Where to stop just outside the dead end ``lane`` the robot stands in when its trail
    does not lead out (it turned in the bay, and the trail's narrow stretch ends at the
    turn): from the lane's first free ground on its ``way`` straight back against the
    lane's run there (``_out_of_lane``: a way from a robot standing off the bay's axis sets
    off sideways onto it, hard:95), past the mouth (where the free width across reaches
    the lane's gauge), ``reach`` and ``_STOP_SHORT`` beyond it; None when that leads into
    a wall. (hard:55: the trail's end was 0.3 m inside a bay's mouth, on its picker's way
    out; the picker met the robot waiting there, turned back into the bay, and the bay
    never cleared, for the whole run.)"""
    # from the lane's first free ground, not from the robot: a robot off the lane's axis,
    # in a shelf's margin, has no free cell near a ray from it
    run = _out_of_lane(router, way, lane)
    if run is None:
        return None
    origin, out = run
    minx, miny, maxx, maxy = router.problem.bounds
    reach_out = math.hypot(maxx - minx, maxy - miny)
    x, y = origin
    ray = LineString([(x, y), (x + out[0] * reach_out, y + out[1] * reach_out)])
    stretches = narrow_stretches(router, ray, lane.gauge)
    if not stretches or stretches[0][0] != 0.0:
        return None
    at = ray.interpolate(stretches[0][1] + reach + _STOP_SHORT)
    spot = (float(at.x), float(at.y))
    if not router.is_free(spot):
        return None
    route = router.plan(pose, spot)
    if route is None or float(LineString(route).length) > 1.5 * math.dist(pose, spot) + 1.0:
        return None
    return spot


def _end_heading(line: LineString) -> tuple[Point2, Point2] | None:
    """The end of ``line`` and the unit heading of its last ``_STEP`` metres (None when
    they have no length)."""
    end = line.coords[-1]
    back = line.interpolate(max(float(line.length) - _STEP, 0.0))
    dx, dy = end[0] - back.x, end[1] - back.y
    norm = math.hypot(dx, dy)
    if norm == 0.0:
        return None
    return (float(end[0]), float(end[1])), (dx / norm, dy / norm)


def _closed_beyond(router: RoutePlanner, line: LineString) -> bool:
    """Whether the ground the robot may take ends within ``_BEYOND`` metres past the end of
    ``line``, straight on: a dock at the closed end of a bay, not one half-way along a
    corridor that goes on."""
    heading = _end_heading(line)
    if heading is None:
        return False
    end, (ux, uy) = heading
    for k in range(1, int(_BEYOND / _STEP) + 1):
        ahead = (end[0] + ux * k * _STEP, end[1] + uy * k * _STEP)
        if not router.is_free(ahead):
            return True
    return False


def _open_across_end(router: RoutePlanner, line: LineString, width: float) -> bool:
    """Whether the ground across the end of ``line`` (square to its last heading) is
    ``_OPEN`` metres or more wide, and ``width`` at least: the route ends where a lane
    opens into a cross aisle, closed straight on by a wall but open to the side, not at
    the closed end of a bay (a bay wider at its closed end, an alcove or a pocket there,
    is open across for a few metres only)."""
    width = max(width, _OPEN)
    heading = _end_heading(line)
    if heading is None:
        return False
    end, (ux, uy) = heading
    xy = np.array([[end[0], end[1]]])
    normal = np.array([[-uy, ux]])
    found, free_width = _free_widths(router, xy, normal, width)
    return bool(found[0] and free_width[0] >= width)


def _at(line: LineString, along: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The points ``along`` metres along ``line``, as an (n, 2) array."""
    points: npt.NDArray[np.float64] = shapely.get_coordinates(
        shapely.line_interpolate_point(line, along)
    )
    return points


def _velocity(feature: Feature) -> tuple[float, float]:
    vx, vy = feature.props.get("vx"), feature.props.get("vy")
    ok = all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        for v in (vx, vy)
    )
    return (float(vx), float(vy)) if ok else (0.0, 0.0)  # type: ignore[arg-type]
