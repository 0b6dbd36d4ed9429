"""The planner cabin: the goal stack, the plan DAG of the active delivery and its route.

Each tick the planner reads its view and, through its outbox only:

- keeps a stack of the ``goal:deliver:*`` goals (oldest released first, unless a
  dispatcher's ``dispatch:order`` ranks them) and works on one at a time; a goal that
  leaves the board was delivered;
- plans the active task as a chain of steps (go to the pick-up dock, pick, go to the
  drop dock, drop), with go-to-charger and charge first when the battery is low;
- follows the executor's ``action_done``/``action_failed`` reports to mark steps done
  or failed, and re-plans (keeping done steps, with a ``replan`` event) when a step
  failed, when an obstacle enters the route corridor ahead, when the same action
  failed twice in a row without progress, or when a step runs too long;
- routes the robot to the current go-to step's target with ``cabins.warehouse.routing``,
  keeping the robot radius clear of shelves and never crossing a forbidden zone;
- passes moving obstacles (people, forklifts) or waits for them: the route keeps clear
  of where they stand only when that is a pass, at most ``pass_detour`` times the way
  plus ``pass_slack`` metres; a longer way round, or none, is not taken, and the route
  keeps to the way (the shortest clear of shelves and zones), before them on which the
  executor stops and waits (a ``wait_for_obstacles`` event). Treating each re-plan's
  snapshot of the movers as walls sent the robot round the other end of a shelf after
  every re-plan, for ever, when they walked the aisle through its dock;
- gives way in a stand-off: with no progress along the route for ``stall_ticks`` and a
  mover beside it (each waiting for the other), it drives to the nearest spot out of the
  line from that mover through the robot (``cabins.give_way``; a ``give_way`` event)
  until the mover has gone or ``give_way_s`` have passed, then goes round the movers
  however long the way, until the next step is done;
- writes ``plan`` and ``route`` to the board when they change.

Missing items (``view.missing``, reason other than "absent"; one reaction per episode
of missingness, on the tick the item goes missing):

- ``constraint:*``: ``alarm:constraint_check`` and an ``alarm`` event; the zones last
  seen are routed around as if blocked, and with none ever seen it holds;
- ``safety:*`` and ``pose``: ``hold:no_plan``: no new route (the route is cleared), the
  plan is kept; a missing pose of any reason holds;
- ``goal:*``: ``idle:no_goal``: the route is cleared, the plan and the goal stack kept.

Static geometry seen once (shelves, forbidden and speed zones) is remembered, so an
item evicted from working memory is still avoided.

Long-term memory (optional: ``long_term``, a ``runtime.agent.memory.LongTermMemory``, with
a ``memory_scope`` such as ``{"scenario": "warehouse"}``) carries what one run learned
into the next. When the planner re-plans because an obstacle came into the route ahead,
or because the robot made no progress with an obstacle beside it, it remembers a
``BlockedSpot``: where the way was blocked, by what, and when. Each is a structured fact
whose subject is its ``memory_cell`` square and the obstacle's kind
(``blocked_spot:forklift@13,7``), so the memory compares spots by subject, never by
their text: two spots are two facts however alike their sentences. A spot recalled from
an earlier run and found blocked again is remembered again, with the new time (the
newer fact supersedes the older); a spot the robot drives through with no obstacle near
it is "clear now" and is retired. It asks for each through its outbox
(``out.remember``); the loop that runs it writes it to the loop's ``long_term`` store
(give the loop the same memory, or a ``MemoryWriter`` of it). The spots of its scope
are read once, when the planner is built; spots learned during the run are added to
them. When it routes, a spot the shortest route passes is treated as expensive, not as
forbidden (people move): the route that keeps clear of every remembered spot is taken
when there is one at most ``memory_detour`` times as long; otherwise the shortest. A
``remembered`` event reports each fact asked for and a ``recalled`` event each route
that memory changed. Without long-term memory the planner behaves exactly as before.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

import shapely
import shapely.ops
import structlog
from shapely.geometry import LineString, Point
from shapely.geometry.base import BaseGeometry

from cabins.planner.give_way import give_way_route, travel_direction
from cabins.warehouse.routing import (
    DEFAULT_CLEARANCE,
    DEFAULT_RESOLUTION,
    Point2,
    Route,
    RoutePlanner,
    RoutingProblem,
)
from cabins.warehouse.shapes import locate, point
from cabins.warehouse.values import (
    BATTERY,
    BATTERY_LOW,
    CARGO,
    CHARGERS,
    CONSTRAINT_PREFIX,
    DEFAULT_LIMITS,
    DEFAULT_LOW_BATTERY,
    DISPATCH_ORDER,
    DOCKS,
    FORBIDDEN_PREFIX,
    GOAL_DELIVER_PREFIX,
    GOAL_PREFIX,
    PLAN,
    POSE,
    ROBOT_LIMITS,
    ROBOT_RADIUS,
    ROUTE,
    VELOCITY,
    WORLD_BOUNDS,
    Bounds,
    DeliverGoal,
    KeysOf,
    LastRead,
    Pose,
    RobotLimits,
    Velocity,
    radius_in,
    read_battery,
    read_bounds,
    read_low_battery,
    read_order,
    read_places,
    read_zone_polygon,
)
from runtime.agent.duplicates import NearDuplicate
from runtime.agent.forgetting import Retention
from runtime.agent.memory import Embedder, LongTermMemory, MemoryRecord
from runtime.agent.plan import (
    Plan,
    PlanError,
    PlanStep,
    RepeatWatch,
    ReplanTrigger,
    failed_step,
    overdue_step,
)
from runtime.cabin import Outbox
from runtime.cabin_map import Feature
from runtime.errors import SettingError
from runtime.longterm import MemoryTerms
from runtime.pack import CabinView
from runtime.position import finite, read_xy
from runtime.spec import ContextSpec

__all__ = ["REACTIONS", "BlockedSpot", "Planner", "blocked_subject"]

_log = structlog.get_logger(__name__)

REACTIONS: Final[Mapping[str, str]] = {
    "goal:*": "idle:no_goal",
    "pose": "hold:no_plan",
    "constraint:*": "alarm:constraint_check",
    "safety:*": "hold:no_plan",
}
"""Required pattern -> the reaction the planner reports when it goes missing (not absent)."""

_AT_TARGET: Final = frozenset({"pick", "drop", "charge"})
_DEPART_SPEED: Final = 0.3  # m/s: slower than this, a new route starts where the robot is
_BRAKE_FRACTION: Final = 0.8  # the executor brakes with this share of max_accel
_REACTION_S: Final = 0.1  # s before a new route is acted on
_DEPART_MARGIN: Final = 0.2  # m added to the braking distance
_ON_ROUTE: Final = 0.3  # m: nearer the route than this, the robot is following it
_EMPTY_ROUTE: Route = ()


@dataclass(frozen=True, slots=True)
class _GiveWay:
    """A stand-off the robot gives way in: the mover it waited for, where that stood and
    how big it is, and when the robot started giving way (at how many steps done)."""

    mover: str
    at: Point2
    size: float
    since: float
    progress: int


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


@dataclass(frozen=True, slots=True)
class BlockedSpot:
    """A place where the way was found blocked, as long-term memory holds it.

    ``(x, y)`` is where the obstacle stood, ``radius`` how far around it to keep clear
    when another way exists, ``kind`` what blocked it (``person``, ``forklift``, ...),
    ``time`` the simulated time it was seen at.
    """

    x: float
    y: float
    radius: float
    kind: str
    time: float

    @property
    def area(self) -> BaseGeometry:
        return Point(self.x, self.y).buffer(self.radius)

    @classmethod
    def from_record(cls, record: MemoryRecord) -> BlockedSpot | None:
        """The spot a ``blocked`` memory record describes, or None for any other record."""
        meta = record.metadata
        if meta.get("fact") != "blocked":
            return None
        x, y = finite(meta.get("x")), finite(meta.get("y"))
        radius, time = finite(meta.get("radius")), finite(meta.get("time"))
        kind = meta.get("kind")
        if x is None or y is None or radius is None or radius <= 0 or not isinstance(kind, str):
            return None
        return cls(x, y, radius, kind, record.stamp if time is None else time)

    def fact(self, cell: tuple[float, float], **detail: Any) -> tuple[str, dict[str, Any]]:
        """The content and metadata of the fact that this spot, in ``cell``, was blocked
        (``detail``: more metadata, such as the reason and the obstacle)."""
        metadata = {
            "fact": "blocked",
            "x": self.x,
            "y": self.y,
            "radius": self.radius,
            "kind": self.kind,
            "time": self.time,
            **detail,
        }
        content = f"a {self.kind} blocked the way near ({cell[0]:g}, {cell[1]:g})"
        return content, MemoryTerms(subject=blocked_subject(self.kind, cell)).attach(metadata)

    def clear_fact(self, cell: tuple[float, float], time: float) -> tuple[str, dict[str, Any]]:
        """The content and metadata of the fact that this spot is clear now: it retires
        the spot's fact."""
        metadata = {"fact": "clear", "x": self.x, "y": self.y, "kind": self.kind, "time": time}
        content = f"the way near ({cell[0]:g}, {cell[1]:g}) is clear of the {self.kind} now"
        terms = MemoryTerms(subject=blocked_subject(self.kind, cell), holds=False)
        return content, terms.attach(metadata)


def blocked_subject(kind: str, cell: tuple[float, float]) -> str:
    """The memory subject of a blocked spot: its cell and what blocked it."""
    return f"blocked_spot:{kind}@{cell[0]:g},{cell[1]:g}"


@dataclass(frozen=True, slots=True)
class _Reopen:
    """What a pickled planner needs to open its long-term memory file again."""

    path: str
    embed: Embedder
    duplicates: NearDuplicate
    retention: Retention

    @classmethod
    def of(cls, memory: LongTermMemory) -> _Reopen:
        return cls(memory.path, memory.embed, memory.duplicates, memory.retention)

    def open(self) -> LongTermMemory | None:
        if self.path == ":memory:":  # an in-memory database is gone with its process
            _log.warning("planner.long_term_not_reopened", path=self.path)
            return None
        return LongTermMemory(
            self.path, embed=self.embed, duplicates=self.duplicates, retention=self.retention
        )


@dataclass(slots=True)
class _Seen:
    """What this tick's view says, read once."""

    pose: Point2 | None
    battery: float | None
    cargo_known: bool
    cargo: str | None
    low_battery: float
    obstacles: tuple[Feature, ...]
    missing: dict[str, str]  # required pattern -> reason, only reasons other than "absent"
    heading: float = 0.0
    speed: float | None = None  # forward speed, when velocity is in view
    limits: RobotLimits = DEFAULT_LIMITS


class Planner:
    """Plans deliveries and routes; see the module docstring for what it does each tick."""

    def __init__(
        self,
        spec: ContextSpec,
        *,
        replan_after_ticks: int = 1200,
        charge_timeout_ticks: int = 6000,
        low_battery: float | None = None,
        charge_until: float = 0.9,
        resolution: float = DEFAULT_RESOLUTION,
        clearance: float = DEFAULT_CLEARANCE,
        obstacle_replan_interval: float = 1.0,
        obstacle_moved: float = 0.5,
        route_retry_interval: float = 1.0,
        goal_clear_ticks: int = 40,
        stall_ticks: int = 200,
        progress_step: float = 0.25,
        long_term: LongTermMemory | None = None,
        memory_scope: Mapping[str, str] | None = None,
        memory_cell: float = 1.0,
        memory_radius: float = 1.0,
        memory_detour: float = 1.5,
        pass_detour: float = 1.5,
        pass_slack: float = 2.0,
        give_way_s: float = 15.0,
    ) -> None:
        for name, count in (
            ("replan_after_ticks", replan_after_ticks),
            ("charge_timeout_ticks", charge_timeout_ticks),
            ("goal_clear_ticks", goal_clear_ticks),
            ("stall_ticks", stall_ticks),
        ):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise SettingError(f"{name} must be an int >= 1, got {count!r}")
        if low_battery is not None and not 0.0 <= low_battery < 1.0:
            raise SettingError(f"low_battery must be in [0, 1), got {low_battery!r}")
        if not 0.0 < charge_until <= 1.0:
            raise SettingError(f"charge_until must be in (0, 1], got {charge_until!r}")
        if low_battery is not None and charge_until <= low_battery:
            raise SettingError(
                f"charge_until ({charge_until!r}) must be above low_battery ({low_battery!r})"
            )
        for name, value in (
            ("resolution", resolution),
            ("obstacle_replan_interval", obstacle_replan_interval),
            ("obstacle_moved", obstacle_moved),
            ("progress_step", progress_step),
            ("route_retry_interval", route_retry_interval),
            ("memory_cell", memory_cell),
            ("memory_radius", memory_radius),
            ("give_way_s", give_way_s),
        ):
            if not (math.isfinite(value) and value > 0):
                raise SettingError(f"{name} must be a positive number, got {value!r}")
        if not (math.isfinite(clearance) and clearance >= 0):
            raise SettingError(f"clearance must be a number >= 0, got {clearance!r}")
        if not (math.isfinite(memory_detour) and memory_detour >= 1.0):
            raise SettingError(f"memory_detour must be a number >= 1, got {memory_detour!r}")
        if not (math.isfinite(pass_detour) and pass_detour >= 1.0):
            raise SettingError(f"pass_detour must be a number >= 1, got {pass_detour!r}")
        if not (math.isfinite(pass_slack) and pass_slack >= 0):
            raise SettingError(f"pass_slack must be a number >= 0, got {pass_slack!r}")
        if long_term is not None and not isinstance(long_term, LongTermMemory):
            raise TypeError(f"long_term must be a LongTermMemory, got {type(long_term).__name__}")
        scope = {"cabin": spec.name} if memory_scope is None else memory_scope
        if not isinstance(scope, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in scope.items()
        ):
            raise SettingError(f"memory_scope must map strings to strings, got {memory_scope!r}")
        self.spec = spec
        self.replan_after_ticks = replan_after_ticks
        self.charge_timeout_ticks = charge_timeout_ticks
        self.low_battery = low_battery
        self.charge_until = charge_until
        self.resolution = resolution
        self.clearance = clearance
        self.obstacle_replan_interval = obstacle_replan_interval
        self.obstacle_moved = obstacle_moved
        self.route_retry_interval = route_retry_interval
        self.goal_clear_ticks = goal_clear_ticks
        self.stall_ticks = stall_ticks
        self.progress_step = progress_step
        self.memory_scope: Mapping[str, str] = dict(scope)
        self.memory_cell = memory_cell
        self.memory_radius = memory_radius
        self.memory_detour = memory_detour
        self.pass_detour = pass_detour
        self.pass_slack = pass_slack
        self.give_way_s = give_way_s
        self._long_term = long_term
        # blocked spots remembered, by their memory_cell square and kind: read from
        # long-term memory once, here, then learned during the run; the recalled ones
        # not yet seen blocked again in this run
        self._spots: dict[tuple[tuple[float, float], str], BlockedSpot] = {}
        self._recalled: set[tuple[tuple[float, float], str]] = set()
        if long_term is not None:
            self._recall_spots(long_term.records(scope=self.memory_scope))

        # goals and the active task
        self._goals: dict[str, DeliverGoal] = {}
        self._task: str | None = None
        self._plan: Plan | None = None
        self._burned: set[str] = set()  # step ids of this task that ever ran
        self._tasks_done = 0
        self._busy = False  # worked on a task since the last plan_done
        self._done_since: int | None = None  # tick the active plan became done
        # executor reports
        self._seen_events: dict[int, float] = {}
        self._progress = 0  # steps done, across revisions and tasks
        self._repeat = RepeatWatch(repeats=2)
        self._trigger: ReplanTrigger | None = None
        # geometry remembered from every view, and the route planner built from it
        self._shelves: dict[str, BaseGeometry] = {}
        self._forbidden: dict[str, BaseGeometry] = {}
        self._constraints: dict[str, BaseGeometry] = {}
        self._sources: dict[str, Any] = {}  # item key -> the value its geometry came from
        self._goal_items: dict[str, tuple[Any, DeliverGoal | None]] = {}  # key -> (value, parsed)
        self._layout_version = 0
        self._bounds: Bounds | None = None
        self._radius = DEFAULT_LIMITS.radius
        self._router: RoutePlanner | None = None
        self._router_key: tuple[Any, ...] | None = None
        # what was written, and why
        self._episodes: dict[str, str] = {}
        self._route: Route | None = None
        self._route_line: BaseGeometry | None = None
        self._route_key: tuple[Any, ...] | None = None
        self._route_failed_at: float | None = None
        self._last_obstacle_replan = -math.inf
        self._planned_obstacles: dict[str, BaseGeometry] = {}  # id -> centre when routed
        self._waiting = False  # the route keeps to the way through moving obstacles
        self._waited_out: int | None = None  # _progress when a wait for them ran out
        self._give_way: _GiveWay | None = None
        self._headings: dict[str, Point2] = {}  # mover id -> the way it last moved (unit)
        self._stall: _Stall | None = None
        self._written_plan: Plan | None = None
        self._plan_written = False
        # static values parsed once per write, not once per tick
        self._limits_read: LastRead[RobotLimits] = LastRead()
        self._docks_read: LastRead[dict[str, Point2]] = LastRead()
        self._keys_of = KeysOf()

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def long_term(self) -> LongTermMemory | None:
        """The long-term memory the planner remembers blocked spots in, if any."""
        return self._long_term

    @property
    def blocked_spots(self) -> tuple[BlockedSpot, ...]:
        """The blocked spots known: remembered from earlier runs, then learned in this one."""
        return tuple(self._spots.values())

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        memory = state.pop("_long_term")
        state["_long_term_reopen"] = None if memory is None else _Reopen.of(memory)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        reopen: _Reopen | None = state.pop("_long_term_reopen", None)
        # a planner pickled before it had long-term memory gets the settings' defaults
        self.__dict__.update(
            {
                "memory_scope": {"cabin": state["spec"].name},
                "memory_cell": 1.0,
                "memory_radius": 1.0,
                "memory_detour": 1.5,
                "pass_detour": 1.5,
                "pass_slack": 2.0,
                "give_way_s": 15.0,
                "_waiting": False,
                "_waited_out": None,
                "_give_way": None,
                "_headings": {},
                "_spots": {},
                "_recalled": set(),
                "_limits_read": LastRead(),
                "_docks_read": LastRead(),
                "_keys_of": KeysOf(),
            }
        )
        self.__dict__.update(state)
        # The spots were read when the run started and travel in the state; the file is
        # opened again only to remember new ones.
        self._long_term = None if reopen is None else reopen.open()

    @property
    def plan(self) -> Plan | None:
        """The plan of the active task (None when idle)."""
        return self._plan

    @property
    def task(self) -> str | None:
        """The active task, or None."""
        return self._task

    # -- the tick -----------------------------------------------------------------------

    def step(self, view: CabinView, out: Outbox) -> None:
        seen = self._read(view)
        self._watch_movers(seen)
        self._react_to_missing(seen, out)
        self._learn_geometry(view)
        goals_visible = "goal:*" not in seen.missing
        if goals_visible:
            self._update_goals(view)
        self._read_events(view, seen)

        hold = self._hold_reason(seen)
        if goals_visible:
            self._choose_task(view, seen, out)
        if self._plan is not None and hold is None:
            self._advance(view, seen, out)

        route = self._desired_route(view, seen, hold, out)
        self._publish(route, out)
        if self._long_term is not None and self._spots:
            self._clear_spots(view, seen, out)

    # -- reading the view ---------------------------------------------------------------

    def _read(self, view: CabinView) -> _Seen:
        pose = Pose.read(view.get(POSE)) if POSE not in view.missing else None
        battery = read_battery(view.get(BATTERY))
        low = self.low_battery
        if low is None:
            low = read_low_battery(view.get(BATTERY_LOW))
            # a threshold of 1 would have the robot charge for ever
            low = DEFAULT_LOW_BATTERY if low is None or low >= 1 else low
        obstacles = tuple(f for f in view.nearby_map if f.kind == "obstacle")
        extra = tuple(f for f in view.corridor_map if f.kind == "obstacle" and f not in obstacles)
        missing = {p: str(r) for p, r in view.missing.items() if r != "absent"}
        cargo = view.get(CARGO)
        velocity = Velocity.read(view.get(VELOCITY))
        return _Seen(
            heading=0.0 if pose is None else pose.theta,
            speed=None if velocity is None else velocity.v,
            limits=self._limits_read.get(
                (view.get(ROBOT_LIMITS), view.get(ROBOT_RADIUS)),
                partial(RobotLimits.in_view, view),
            ),
            pose=None if pose is None else pose.xy,
            battery=battery,
            cargo_known=CARGO in view,
            cargo=cargo if isinstance(cargo, str) else None,
            low_battery=low,
            obstacles=obstacles + extra,
            missing=missing,
        )

    def _watch_movers(self, seen: _Seen) -> None:
        """Remember the way each mover in view last moved: one waiting for the robot
        stands still, and giving way to it needs the way it goes on."""
        for feature in seen.obstacles:
            direction = travel_direction(feature.props)
            if direction is not None:
                self._headings[feature.id] = direction

    def _react_to_missing(self, seen: _Seen, out: Outbox) -> None:
        for pattern, reaction in REACTIONS.items():
            reason = seen.missing.get(pattern)
            if reason is None:
                self._episodes.pop(pattern, None)
                continue
            if pattern in self._episodes:
                continue
            self._episodes[pattern] = reason
            out.react(pattern, reaction, reason=reason)
            if pattern == "constraint:*":
                out.emit(
                    "alarm",
                    {
                        "kind": "constraint_check",
                        "level": "alarm",
                        "pattern": pattern,
                        "reason": reason,
                        "known_zones": len(self._constraints),
                    },
                    tags=("alarm",),
                )

    def _learn_geometry(self, view: CabinView) -> None:
        changed = False
        for feature in view.nearby_map:
            if feature.kind == "shelf":
                changed |= self._remember(
                    self._shelves, f"map:{feature.id}", feature, feature.geometry
                )
            elif feature.kind == "forbidden":
                changed |= self._remember(
                    self._forbidden, f"map:{feature.id}", feature, feature.geometry
                )
            elif feature.kind == "speed_zone":
                self._remember(self._constraints, f"map:{feature.id}", feature, feature.geometry)
        for key in self._keys_of(view, (FORBIDDEN_PREFIX, CONSTRAINT_PREFIX)):
            if key.startswith(FORBIDDEN_PREFIX):
                value = view[key]
                if self._sources.get(key) is not value:
                    shape = read_zone_polygon(value)
                    if shape is not None:
                        changed |= self._remember(self._forbidden, key, value, shape)
            elif key.startswith(CONSTRAINT_PREFIX):
                value = view[key]
                if self._sources.get(key) is not value:
                    shape = read_zone_polygon(value)
                    if shape is not None:
                        self._remember(self._constraints, key, value, shape)
        bounds = view.get(WORLD_BOUNDS)
        if bounds is not None and bounds is not self._sources.get(WORLD_BOUNDS):
            parsed = read_bounds(bounds)
            if parsed is not None:
                self._sources[WORLD_BOUNDS] = bounds
                if parsed != self._bounds:
                    self._bounds = parsed
                    changed = True
        radius = radius_in(view)
        if radius is not None and radius != self._radius:
            self._radius = radius
            changed = True
        if changed:
            self._layout_version += 1

    def _remember(
        self, store: dict[str, BaseGeometry], key: str, source: Any, shape: BaseGeometry
    ) -> bool:
        """Keep ``shape`` under ``key``; True when that changed what is known."""
        if self._sources.get(key) is source:
            return False
        self._sources[key] = source
        known = store.get(key)
        if known is not None and shapely.equals_exact(known, shape, tolerance=0.0):
            return False
        store[key] = shape
        return True

    def _update_goals(self, view: CabinView) -> None:
        docks_value = view.get(DOCKS)
        docks = self._docks_read.get((docks_value,), partial(read_places, docks_value))
        parsed: dict[str, tuple[Any, DeliverGoal | None]] = {}
        for key in self._keys_of(view, GOAL_PREFIX):
            if not key.startswith(GOAL_PREFIX):
                continue
            value = view[key]
            known = self._goal_items.get(key)
            if known is not None and known[0] is value:
                parsed[key] = known
                continue
            goal = DeliverGoal.read(value, docks) if key.startswith(GOAL_DELIVER_PREFIX) else None
            if goal is None:
                _log.warning("planner.goal_ignored", key=key, value=value)
            parsed[key] = (value, goal)
        if parsed.keys() != self._goal_items.keys() or any(
            parsed[k] is not self._goal_items[k] for k in parsed
        ):
            self._goals = {g.task: g for _, g in parsed.values() if g is not None}
        self._goal_items = parsed

    def _read_events(self, view: CabinView, seen: _Seen) -> None:
        horizon = view.time - 2 * max(self.spec.event_window, 1.0)
        if self._seen_events:
            self._seen_events = {s: t for s, t in self._seen_events.items() if t >= horizon}
        for event in view.recent_events:
            if event.seq in self._seen_events:
                continue
            self._seen_events[event.seq] = event.stamp
            if self._plan is not None and isinstance(event.data, Mapping):
                self._on_report(event.kind, event.data, seen)

    def _on_report(self, kind: str, data: Mapping[str, Any], seen: _Seen) -> None:
        plan = self._plan
        step_id = data.get("step")
        if plan is None or not isinstance(step_id, str) or step_id not in plan:
            return
        step = plan.step(step_id)
        task = data.get("task")
        if step.status != "running" or (task is not None and task != step.data.get("task")):
            return
        if kind == "action_done":
            if (
                step.action == "charge"
                and seen.battery is not None
                and seen.battery < self.charge_until
            ):
                return  # charging goes on until the level is reached
            self._plan = plan.with_status(step_id, "done")
            self._progress += 1
            return
        attempt = data.get("attempt")
        attempts = max(step.attempts, attempt if isinstance(attempt, int) else step.attempts)
        if data.get("final"):
            self._plan = plan.with_status(step_id, "failed", attempts=attempts)
            return
        self._plan = plan.with_status(step_id, "running", attempts=attempts)
        signature = (step.action, step.target, str(data.get("reason")))
        if self._repeat.observe(signature, self._progress):
            self._trigger = ReplanTrigger("no_progress", step_id, signature[2])

    # -- goals and plans ----------------------------------------------------------------

    def _choose_task(self, view: CabinView, seen: _Seen, out: Outbox) -> None:
        if self._task is not None and self._task not in self._goals:
            self._finish_task()
        if self._task is None and self._goals:
            order = read_order(view.get(DISPATCH_ORDER))
            rank = {task: i for i, task in enumerate(order)}
            goal = min(
                self._goals.values(),
                key=lambda g: (rank.get(g.task, len(order)), g.released, g.task),
            )
            self._start_task(goal, view, seen, out)
        elif self._task is None and self._busy:
            self._busy = False
            out.emit("plan_done", {"tasks_done": self._tasks_done}, tags=("plan",))

    def _finish_task(self) -> None:
        self._tasks_done += 1
        self._task = None
        self._plan = None
        self._burned = set()
        self._trigger = None
        self._done_since = None
        self._repeat.reset()

    def _start_task(self, goal: DeliverGoal, view: CabinView, seen: _Seen, out: Outbox) -> None:
        self._task = goal.task
        self._busy = True
        self._burned = set()
        self._done_since = None
        self._repeat.reset()
        plan = Plan(self._chain((), self._needed_steps(goal, view, seen, ())))
        self._plan = plan
        out.emit(
            "task_started",
            {"task": goal.task, "revision": plan.revision, "steps": plan.ids},
            tags=("plan",),
        )

    def _needed_steps(
        self, goal: DeliverGoal, view: CabinView, seen: _Seen, kept: tuple[PlanStep, ...]
    ) -> list[PlanStep]:
        """The steps still to do for ``goal``, given the cargo, battery and ``kept`` steps."""
        if seen.cargo_known:
            carrying = seen.cargo == goal.task
        else:
            picked = any(s.action == "pick" and s.status == "done" for s in kept)
            carrying = picked and not any(s.action == "drop" and s.status == "done" for s in kept)
        taken = {s.id for s in kept} | self._burned
        steps: list[PlanStep] = []
        if self._needs_charge(seen):
            steps.extend(self._charge_steps(goal.task, view, seen, taken))
        if not carrying:
            steps.append(
                self._new_step(
                    taken,
                    goal.task,
                    "go_pickup",
                    "go_to",
                    goal.pickup,
                    goal.pickup_xy,
                    f"go to the pick-up dock {goal.pickup}",
                )
            )
            steps.append(
                self._new_step(
                    taken,
                    goal.task,
                    "pick",
                    "pick",
                    goal.pickup,
                    goal.pickup_xy,
                    f"pick {goal.task} at {goal.pickup}",
                )
            )
        steps.append(
            self._new_step(
                taken,
                goal.task,
                "go_drop",
                "go_to",
                goal.drop,
                goal.drop_xy,
                f"go to the drop dock {goal.drop}",
            )
        )
        steps.append(
            self._new_step(
                taken,
                goal.task,
                "drop",
                "drop",
                goal.drop,
                goal.drop_xy,
                f"drop {goal.task} at {goal.drop}",
            )
        )
        return steps

    def _needs_charge(self, seen: _Seen) -> bool:
        return seen.battery is not None and seen.battery < seen.low_battery

    def _charge_steps(
        self, task: str, view: CabinView, seen: _Seen, taken: set[str]
    ) -> list[PlanStep]:
        places = read_places(view.get(CHARGERS))
        if not places:
            _log.warning("planner.no_charger", battery=seen.battery)
            return []
        here = seen.pose or (0.0, 0.0)
        charger = min(places, key=lambda c: (math.dist(here, places[c]), c))
        xy = places[charger]
        return [
            self._new_step(
                taken, task, "go_charger", "go_to", charger, xy, f"go to the charger {charger}"
            ),
            self._new_step(
                taken,
                task,
                "charge",
                "charge",
                charger,
                xy,
                f"charge at {charger} to {self.charge_until:g}",
                until=self.charge_until,
            ),
        ]

    @staticmethod
    def _new_step(
        taken: set[str],
        task: str,
        base: str,
        action: str,
        target: str,
        xy: Point2,
        description: str,
        **extra: Any,
    ) -> PlanStep:
        step_id = f"{task}:{base}"
        n = 0
        while step_id in taken:
            n += 1
            step_id = f"{task}:{base}.{n}"
        taken.add(step_id)
        return PlanStep(
            step_id, description, action, target, data={"task": task, "target_xy": xy, **extra}
        )

    @staticmethod
    def _chain(kept: tuple[PlanStep, ...], tail: list[PlanStep]) -> tuple[PlanStep, ...]:
        """``kept`` then ``tail``, each tail step depending on the step before it."""
        chained: list[PlanStep] = []
        previous = kept[-1].id if kept else None
        for step in tail:
            deps = (previous,) if previous is not None else ()
            chained.append(
                step
                if step.depends_on == deps
                else PlanStep(
                    step.id,
                    step.description,
                    step.action,
                    step.target,
                    deps,
                    step.status,
                    step.attempts,
                    step.started_at,
                    step.data,
                )
            )
            previous = step.id
        return (*kept, *chained)

    def _advance(self, view: CabinView, seen: _Seen, out: Outbox) -> None:
        """Re-plan if a trigger fired, finish charging, start the next step."""
        plan = self._plan
        assert plan is not None
        limit = self._timeout_for
        pending = self._trigger
        self._trigger = None
        if pending is not None and (
            pending.step is None
            or pending.step not in plan
            or plan.step(pending.step).status != "running"
        ):
            pending = None
        trigger = (
            failed_step(plan)
            or pending
            or self._stalled(plan, seen, view.tick)
            or overdue_step(plan, view.tick, limit=limit)
        )
        if trigger is not None:
            self._replan(trigger, view, seen, out)
            plan = self._plan
            assert plan is not None
        current = plan.current
        if (
            current is not None
            and current.action == "charge"
            and seen.battery is not None
            and seen.battery >= self.charge_until
        ):
            plan = plan.with_status(current.id, "done")
            self._progress += 1
            current = None
        if current is None:
            nxt = plan.next_runnable()
            # Charging goes in before the robot sets off: an action at the spot it
            # stands on (a pick, a drop) is done first.
            chargers = self._charger_ids(view)
            if (
                nxt is not None
                and nxt.action == "go_to"
                and nxt.target not in chargers
                and chargers
                and self._needs_charge(seen)
                and not self._charging_planned(plan)
            ):
                self._plan = plan
                self._replan(
                    ReplanTrigger("low_battery", None, f"battery {seen.battery:.2f}"),
                    view,
                    seen,
                    out,
                )
                plan = self._plan
                nxt = plan.next_runnable()
            if nxt is not None:
                self._burned.add(nxt.id)
                plan = plan.with_status(nxt.id, "running", started_at=float(view.tick))
        self._plan = plan
        self._check_delivered(view, seen, out)

    def _stalled(self, plan: Plan, seen: _Seen, tick: int) -> ReplanTrigger | None:
        """``no_progress`` when a go-to step has not got ``progress_step`` further along its
        route for ``stall_ticks`` ticks (the robot waits in a stand-off, say)."""
        current = plan.current
        line = self._route_line
        if current is None or current.action != "go_to" or line is None or seen.pose is None:
            self._stall = None
            return None
        along = locate(line, point(*seen.pose))
        stall = self._stall if isinstance(self._stall, _Stall) else None
        if stall is None or stall.step != current.id:
            self._stall = _Stall(current.id, self._route, along, along, tick)
            return None
        if stall.route != self._route:
            # A new route for the same step (a re-plan each time a mover near the way
            # moved on): the progress made since ``since`` carries over to it, and the
            # clock runs on. Restarting it with every route hid a stand-off for 90 s: two
            # people at the dead end of their aisle, the robot waiting for them in it,
            # re-planning every second or two as they stepped to and fro.
            gained = stall.latest - stall.origin
            stall = _Stall(current.id, self._route, along - gained, along, stall.since)
        else:
            stall = dataclasses.replace(stall, latest=along)
        if along >= stall.origin + self.progress_step:
            self._stall = _Stall(current.id, self._route, along, along, tick)
            return None
        self._stall = stall
        if tick - stall.since < self.stall_ticks:
            return None
        self._stall = None
        return ReplanTrigger(
            "no_progress", current.id, f"{self.stall_ticks} ticks without progress along the route"
        )

    def _timeout_for(self, step: PlanStep) -> float:
        if step.action == "charge":
            return float(self.charge_timeout_ticks)
        return float(self.replan_after_ticks)

    @staticmethod
    def _charging_planned(plan: Plan) -> bool:
        return any(s.action == "charge" and s.status in ("pending", "running") for s in plan)

    @staticmethod
    def _charger_ids(view: CabinView) -> frozenset[str]:
        return frozenset(read_places(view.get(CHARGERS)))

    def _check_delivered(self, view: CabinView, seen: _Seen, out: Outbox) -> None:
        """A finished plan whose goal stays on the board did not deliver: plan it again."""
        plan = self._plan
        if plan is None or not plan.is_done:
            self._done_since = None
            return
        if self._done_since is None:
            self._done_since = view.tick
        elif view.tick - self._done_since >= self.goal_clear_ticks:
            self._done_since = None
            self._replan(ReplanTrigger("goal_not_cleared"), view, seen, out)

    def _replan(self, trigger: ReplanTrigger, view: CabinView, seen: _Seen, out: Outbox) -> None:
        """Adjust the plan for ``trigger``: done (and running) steps kept, revision + 1."""
        plan = self._plan
        goal = self._goals.get(self._task) if self._task is not None else None
        if plan is None or goal is None:
            return
        step = trigger.step
        if step is not None and step in plan and plan.step(step).status in ("running", "pending"):
            plan = plan.with_status(step, "failed")
        if trigger.reason == "no_progress":
            self._stand_off(view, seen)
        if trigger.reason == "obstacle_in_corridor":
            new_steps = plan.steps
        else:
            kept = tuple(s for s in plan if s.status in ("done", "running"))
            if trigger.reason == "low_battery":
                taken = {s.id for s in plan} | self._burned
                tail = [
                    *self._charge_steps(goal.task, view, seen, taken),
                    *(s for s in plan if s.status == "pending"),
                ]
            else:
                tail = self._needed_steps(goal, view, seen, kept)
            new_steps = self._chain(kept, tail)
        try:
            self._plan = plan.adjust_plan(new_steps)
        except PlanError:  # a bug in this module; never lose the plan over it
            _log.exception("planner.replan_refused", reason=trigger.reason)
            self._plan = plan
            return
        self._route_key = None
        out.emit(
            "replan",
            {
                "reason": trigger.reason,
                "task": goal.task,
                "revision": self._plan.revision,
                "step": trigger.step,
                "detail": trigger.detail,
            },
            tags=("plan",),
        )
        if self._long_term is not None:
            self._remember_blocked(trigger, view, seen, out)

    def _stand_off(self, view: CabinView, seen: _Seen) -> None:
        """No progress while waiting for moving obstacles, or with one beside the robot: a
        stand-off. Until the next step is done, the robot goes round them however long
        the way round (``_waited_out``), and first gives way to the nearest one."""
        near = None
        if seen.pose is not None:
            pose = Point(seen.pose)
            gaps = [(float(f.geometry.distance(pose)), f.id, f) for f in seen.obstacles]
            near = min((g for g in gaps if g[0] <= self._reach + 1.0), default=None)
        if near is None and not self._waiting:
            return
        self._waited_out = self._progress
        if near is not None and self._give_way is None:
            mover = near[2].geometry
            centre = mover.centroid
            self._give_way = _GiveWay(
                mover=near[1],
                at=(float(centre.x), float(centre.y)),
                size=math.sqrt(mover.area / math.pi) if mover.area > 0 else 0.0,
                since=view.time,
                progress=self._progress,
            )

    def _giving_way_over(self, give: _GiveWay, seen: _Seen, now: float) -> bool:
        """The robot stops giving way once a step is done, after ``give_way_s``, or once
        the mover has gone (out of sight, or well away from where it stood)."""
        if give.progress != self._progress or now - give.since > self.give_way_s:
            return True
        mover = next((f for f in seen.obstacles if f.id == give.mover), None)
        if mover is None:
            return True
        centre = mover.geometry.centroid
        moved = math.hypot(float(centre.x) - give.at[0], float(centre.y) - give.at[1])
        return moved > 2.0 * give.size + self.obstacle_moved

    # -- routes -------------------------------------------------------------------------

    def _hold_reason(self, seen: _Seen) -> str | None:
        """Why no route may be planned this tick, or None."""
        if "goal:*" in seen.missing:
            return "no_goal"
        if seen.pose is None:
            return "no_pose"
        if "safety:*" in seen.missing:
            return "no_safety"
        if "constraint:*" in seen.missing and not self._constraints:
            return "no_constraints"
        if self._bounds is None:
            return "no_bounds"
        return None

    def _desired_route(self, view: CabinView, seen: _Seen, hold: str | None, out: Outbox) -> Route:
        plan = self._plan
        if hold is not None or plan is None or plan.is_done:
            self._route_key = None
            return _EMPTY_ROUTE
        current = plan.current
        if current is None:
            return self._route or _EMPTY_ROUTE
        if current.action in _AT_TARGET:
            return self._route or _EMPTY_ROUTE
        assert seen.pose is not None
        router = self._router_for()
        blocking = "constraint:*" in seen.missing
        give = self._give_way
        if give is not None and self._giving_way_over(give, seen, view.time):
            self._give_way = give = None
            self._route_key = None
        key = (self._task, current.id, plan.revision, self._router_key, blocking)
        if key == self._route_key:
            if self._route_failed_at is not None:
                if view.time - self._route_failed_at < self.route_retry_interval:
                    return _EMPTY_ROUTE
            elif self._obstacle_ahead(seen, view, out):
                plan = self._plan
                assert plan is not None
                key = (self._task, current.id, plan.revision, self._router_key, blocking)
            else:
                return self._route or _EMPTY_ROUTE
        target = read_xy(current.data.get("target_xy"))
        if target is None or router is None:
            return _EMPTY_ROUTE
        fixed = list(self._constraints.values()) if blocking else []
        if give is not None:
            aside = self._route_aside(router, seen, give, fixed, current.id, out)
            if aside is not None:
                self._route_key = key
                self._route_failed_at = None
                return aside
        movers = [_shrunk(f.geometry, (seen.pose, target), self._reach) for f in seen.obstacles]
        around = [*fixed, *(g for g in movers if g is not None)]
        start, prefix = self._departure(router, seen, around)
        route, recalled = self._route_from(router, seen, start, prefix, target, around)
        self._waiting = False
        if len(around) > len(fixed):
            route, recalled = self._pass_or_wait(
                router, seen, start, prefix, target, fixed, (route, recalled), current.id, out
            )
        if recalled is not None:
            out.emit(
                "recalled", {"task": self._task, "step": current.id, **recalled}, tags=("memory",)
            )
        self._planned_obstacles = {f.id: f.geometry.centroid for f in seen.obstacles}
        self._route_key = key
        if route is None:
            if self._route_failed_at is None:
                out.emit(
                    "alarm",
                    {
                        "kind": "no_route",
                        "level": "warn",
                        "task": self._task,
                        "step": current.id,
                        "target": current.target,
                        "from": seen.pose,
                    },
                    tags=("alarm",),
                )
            self._route_failed_at = view.time
            return _EMPTY_ROUTE
        self._route_failed_at = None
        return route

    def _route_aside(
        self,
        router: RoutePlanner,
        seen: _Seen,
        give: _GiveWay,
        fixed: list[BaseGeometry],
        step: str,
        out: Outbox,
    ) -> Route | None:
        """The route out of the way of the mover the robot gives way to (a ``give_way``
        event says where), or None (and no more giving way) when there is none."""
        mover = next((f for f in seen.obstacles if f.id == give.mover), None)
        assert seen.pose is not None
        route = None
        if mover is not None:
            movers = [_shrunk(f.geometry, (seen.pose,), self._reach) for f in seen.obstacles]
            route = give_way_route(
                router,
                seen.pose,
                mover.geometry,
                blocked=[*fixed, *(g for g in movers if g is not None)],
                radius=self._radius,
                clearance=self.clearance,
                heading=self._headings.get(give.mover),
            )
        if route is None:
            self._give_way = None
            return None
        self._planned_obstacles = {f.id: f.geometry.centroid for f in seen.obstacles}
        self._waiting = False
        out.emit(
            "give_way",
            {
                "task": self._task,
                "step": step,
                "obstacle": give.mover,
                "to": [round(route[-1][0], 3), round(route[-1][1], 3)],
            },
            tags=("plan",),
        )
        return route

    def _route_from(
        self,
        router: RoutePlanner,
        seen: _Seen,
        start: Point2,
        prefix: Route,
        target: Point2,
        blocked: list[BaseGeometry],
    ) -> tuple[Route | None, dict[str, Any] | None]:
        """The route from the departure ``start`` (after its braking ``prefix``), else
        from where the robot is; and what memory changed about it (None: nothing)."""
        route, recalled = self._plan_route(router, start, target, blocked)
        if route is not None and prefix:
            return (*prefix, *route[1:]), recalled
        if route is None and prefix:
            assert seen.pose is not None
            return self._plan_route(router, seen.pose, target, blocked)
        return route, recalled

    def _pass_or_wait(
        self,
        router: RoutePlanner,
        seen: _Seen,
        start: Point2,
        prefix: Route,
        target: Point2,
        fixed: list[BaseGeometry],
        around: tuple[Route | None, dict[str, Any] | None],
        step: str,
        out: Outbox,
    ) -> tuple[Route | None, dict[str, Any] | None]:
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
        route and waits, as it does for one that steps in.
        """
        route, recalled = around
        if route is not None and self._waited_out == self._progress:
            return route, recalled  # waited for them without getting further: go round
        way, way_recalled = self._route_from(router, seen, start, prefix, target, fixed)
        if way is None:
            return route, recalled
        length = float(LineString(way).length) if len(way) >= 2 else 0.0
        detour: float | None = None
        if route is not None:
            detour = float(LineString(route).length) if len(route) >= 2 else 0.0
            if detour <= self.pass_detour * length + self.pass_slack:
                return route, recalled
        out.emit(
            "wait_for_obstacles",
            {
                "task": self._task,
                "step": step,
                "obstacles": sorted(f.id for f in seen.obstacles),
                "way": round(length, 3),
                "around": None if detour is None else round(detour, 3),
            },
            tags=("plan",),
        )
        self._waiting = True
        return way, way_recalled

    def _plan_route(
        self,
        router: RoutePlanner,
        start: Point2,
        target: Point2,
        blocked: list[BaseGeometry],
    ) -> tuple[Route | None, dict[str, Any] | None]:
        """The shortest route, or the one clear of remembered blocked spots if it is not
        more than ``memory_detour`` times as long (and the shortest passes one); with the
        ``recalled`` event's data when memory chose it."""
        route = router.plan(start, target, blocked=blocked)
        if route is None or not self._spots:
            return route, None
        reach = self._reach
        line = LineString(route)
        passed = [s for s in self._spots.values() if line.distance(s.area) <= reach]
        if not passed:
            return route, None
        avoid = [
            shape
            for s in self._spots.values()
            if (shape := _shrunk(s.area, (start, target), reach)) is not None
        ]
        detour = router.plan(start, target, blocked=[*blocked, *avoid]) if avoid else None
        length = float(line.length)
        detour_length = float(LineString(detour).length) if detour is not None else math.inf
        if detour is None or detour_length > self.memory_detour * length:
            return route, None
        recalled = {
            "spots": len(passed),
            "nearest": [passed[0].x, passed[0].y],
            "length": round(detour_length, 3),
            "shortest": round(length, 3),
        }
        return detour, recalled

    def _departure(
        self, router: RoutePlanner, seen: _Seen, blocked: list[BaseGeometry]
    ) -> tuple[Point2, Route]:
        """Where a new route may start, and the way there: a robot at speed cannot turn or
        stop at once, so its route begins with the ground it covers while it brakes (the
        current route's continuation while it is on it, else straight along its heading),
        when that ground is clear; at a crawl, or with no clear way, where it is."""
        pose, speed = seen.pose, seen.speed
        assert pose is not None
        if speed is None or abs(speed) < _DEPART_SPEED:
            return pose, _EMPTY_ROUTE
        brake = _BRAKE_FRACTION * seen.limits.max_accel
        reach = speed * speed / (2.0 * brake) + abs(speed) * _REACTION_S + _DEPART_MARGIN
        line = self._route_line
        if line is not None and float(line.distance(Point(pose))) <= _ON_ROUTE:
            along = float(line.project(Point(pose)))
            end = min(float(line.length), along + reach)
            if end - along >= reach * 0.5:
                ahead = shapely.ops.substring(line, along, end)
                coords = [(float(c[0]), float(c[1])) for c in ahead.coords]
                points = [pose, *coords[1:]]
                if all(
                    router.segment_is_free(a, b, blocked=blocked)
                    for a, b in itertools.pairwise(points[1:])
                ):
                    return points[-1], tuple(points)
        ahead_xy = (
            pose[0] + reach * math.cos(seen.heading),
            pose[1] + reach * math.sin(seen.heading),
        )
        if speed > 0 and router.segment_is_free(pose, ahead_xy, blocked=blocked):
            return ahead_xy, (pose, ahead_xy)
        return pose, _EMPTY_ROUTE

    # -- long-term memory ---------------------------------------------------------------

    def _recall_spots(self, records: Iterable[MemoryRecord]) -> None:
        for record in records:
            spot = BlockedSpot.from_record(record)
            if spot is not None:
                key = (self._cell(spot.x, spot.y), spot.kind)
                self._spots.setdefault(key, spot)
                self._recalled.add(key)
        _log.debug("planner.spots_recalled", scope=self.memory_scope, spots=len(self._spots))

    def _cell(self, x: float, y: float) -> tuple[float, float]:
        size = self.memory_cell
        return (round(round(x / size) * size, 6), round(round(y / size) * size, 6))

    def _remember_blocked(
        self, trigger: ReplanTrigger, view: CabinView, seen: _Seen, out: Outbox
    ) -> None:
        """Remember where an obstacle blocked the way, when ``trigger`` says one did: a
        new spot, or a recalled one found blocked again (the newer fact supersedes)."""
        feature: Feature | None = None
        if trigger.reason == "obstacle_in_corridor":
            feature = next((f for f in seen.obstacles if f.id == trigger.detail), None)
        elif trigger.reason == "no_progress" and seen.pose is not None:
            pose = Point(seen.pose)
            near = [(float(f.geometry.distance(pose)), f.id, f) for f in seen.obstacles]
            close = min((n for n in near if n[0] <= self._reach + 1.0), default=None)
            feature = close[2] if close is not None else None
        if feature is None:
            return
        centre = feature.geometry.centroid
        x, y = round(float(centre.x), 3), round(float(centre.y), 3)
        kind = _obstacle_kind(feature)
        cell = self._cell(x, y)
        key = (cell, kind)
        if key in self._spots and key not in self._recalled:
            return  # learned in this run, or already seen again in it
        self._recalled.discard(key)
        spot = BlockedSpot(x, y, self.memory_radius, kind, view.time)
        self._spots[key] = spot
        content, metadata = spot.fact(
            cell, reason=trigger.reason, obstacle=feature.id, task=self._task
        )
        out.remember(content, scope=self.memory_scope, metadata=metadata, stamp=view.time)

    def _clear_spots(self, view: CabinView, seen: _Seen, out: Outbox) -> None:
        """Retire the spots the robot stands in with no obstacle near: clear now."""
        if seen.pose is None or "pose" in seen.missing:
            return
        px, py = seen.pose
        reach = self._reach
        for key, spot in list(self._spots.items()):
            if math.hypot(px - spot.x, py - spot.y) > spot.radius:
                continue
            centre = Point(spot.x, spot.y)
            if any(
                float(f.geometry.distance(centre)) <= spot.radius + reach for f in seen.obstacles
            ):
                continue
            del self._spots[key]
            self._recalled.discard(key)
            content, metadata = spot.clear_fact(key[0], view.time)
            out.remember(content, scope=self.memory_scope, metadata=metadata, stamp=view.time)

    @property
    def _reach(self) -> float:
        return self._radius + self.clearance

    def _router_for(self) -> RoutePlanner | None:
        """The route planner of the known layout; built again only when the layout changed."""
        if self._bounds is None:
            return None
        key = (self._bounds, self._radius, self._layout_version)
        if key != self._router_key:
            try:
                problem = RoutingProblem(
                    bounds=self._bounds,
                    obstacles=tuple(self._shelves.values()),
                    forbidden=tuple(self._forbidden.values()),
                    robot_radius=self._radius,
                    clearance=self.clearance,
                    resolution=self.resolution,
                )
            except (TypeError, ValueError):
                _log.exception("planner.bad_layout", bounds=self._bounds, radius=self._radius)
                return None
            self._router = RoutePlanner(problem)
            self._router_key = key
        return self._router

    def _obstacle_ahead(self, seen: _Seen, view: CabinView, out: Outbox) -> bool:
        """Re-plan (rate limited) when an obstacle in the corridor comes near the route ahead.

        Near: within the robot radius plus clearance of the route; ahead: the nearest
        route point is not behind the robot's projection on the route. An obstacle the
        route was planned around counts again only once it has moved ``obstacle_moved``.
        """
        line = self._route_line
        pose = seen.pose
        if line is None or pose is None:
            return False
        obstacles = [f for f in view.corridor_map if f.kind == "obstacle"]
        if not obstacles or view.time - self._last_obstacle_replan < self.obstacle_replan_interval:
            return False
        reach = self._reach
        along: float | None = None
        for feature in obstacles:
            if float(line.distance(feature.geometry)) > reach:
                continue
            planned_at = self._planned_obstacles.get(feature.id)
            if (
                planned_at is not None
                and planned_at.distance(feature.geometry.centroid) < self.obstacle_moved
            ):
                continue  # the route was planned with it there already
            if along is None:
                along = float(line.project(Point(pose)))
            nearest = shapely.shortest_line(line, feature.geometry)
            if float(line.project(Point(nearest.coords[0]))) < along - reach:
                continue  # behind the robot
            self._last_obstacle_replan = view.time
            self._replan(ReplanTrigger("obstacle_in_corridor", None, feature.id), view, seen, out)
            return True
        return False

    # -- writing ------------------------------------------------------------------------

    def _publish(self, route: Route, out: Outbox) -> None:
        if route != self._route:
            self._route = route
            self._route_line = LineString(route) if len(route) >= 2 else None
            out.write(ROUTE, route)
        plan = self._plan
        if not self._plan_written or (
            plan is not self._written_plan and plan != self._written_plan
        ):
            out.write(PLAN, self.board_plan())
        self._written_plan = plan
        self._plan_written = True

    def board_plan(self) -> dict[str, Any]:
        """The ``plan`` board value (see the contract): task, revision, current, steps."""
        plan = self._plan
        if plan is None:
            return {"task": None, "revision": 0, "current": None, "steps": ()}
        current = plan.current
        steps = []
        for s in plan:
            entry: dict[str, Any] = {
                "id": s.id,
                "action": s.action,
                "target": s.target,
                "target_xy": s.data.get("target_xy"),
                "task": s.data.get("task"),
                "depends_on": s.depends_on,
                "status": s.status,
                "attempts": s.attempts,
                "description": s.description,
            }
            if "until" in s.data:
                entry["until"] = s.data["until"]
            steps.append(entry)
        return {
            "task": self._task,
            "revision": plan.revision,
            "current": current.id if current is not None else None,
            "steps": tuple(steps),
        }


def _obstacle_kind(feature: Feature) -> str:
    kind = feature.props.get("kind")
    if isinstance(kind, str) and kind:
        return kind
    for tag in ("person", "forklift"):
        if tag in feature.tags:
            return tag
    return "obstacle"


def _shrunk(
    shape: BaseGeometry, keep_free: tuple[Point2, ...], reach: float
) -> BaseGeometry | None:
    """``shape`` shrunk about its centre so that no point of ``keep_free`` is within ``reach``.

    A moving obstacle right beside the robot (or at its target) must not make every route
    impossible: the route is planned around what is left, and leads away from it.
    """
    size = math.sqrt(shape.area / math.pi) if shape.area > 0 else 0.0
    centre = shape.centroid
    limit = size
    for p in keep_free:
        limit = min(limit, centre.distance(Point(p)) - reach - 0.05)
    if limit >= size:
        return shape
    if limit <= 0.01:
        return None
    return centre.buffer(limit)
