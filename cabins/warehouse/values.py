"""The board values the simulator writes and the cabins read: their keys, shapes and parsers.

The world (``sim.world.world``) puts the robot's readings, its limits, the static layout
and the dispatcher's goals on the board; the planner, the executor and the monitor read
them back. This module is the one place that says what each of those values looks like:

- its key, as a constant (``POSE``, ``ROBOT_LIMITS``, ...) or, for one item per zone or
  task, a prefix (``FORBIDDEN_PREFIX``, ``SPEED_ZONE_PREFIX``, ``GOAL_DELIVER_PREFIX``);
- a small frozen model (``Pose``, ``RobotLimits``, ``Zone``, ``DeliverGoal``, ...) with one
  parser, the classmethod ``read``, which returns None for a malformed value and never
  raises (a board may hold anything), and ``as_value()``, the exact value the world writes;
- a reader function for the values that need no model (``read_bounds``, ``read_places``,
  ``route_points``, ``read_battery``, ``read_low_battery``);
- two small caches for a cabin that reads them every tick: ``LastRead`` (a parse kept
  while its board values are the same objects) and ``KeysOf`` (the keys with a prefix,
  kept while the key set is the same).

Every position and polyline is read with ``runtime.position``, the runtime's one reader,
so "an (x, y)" means here what it means to the assembler: finite real numbers, never a
bool. The parsers read the JSON form of a value as well as the board's (lists for tuples,
dicts for read-only mappings), so a recording or a report can use them too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any, Final, Generic, TypeVar, cast

import shapely
from shapely.geometry import Polygon

from runtime.errors import SettingError
from runtime.position import Point2, finite, numbers, read_route, read_xy

__all__ = [
    "ACCEPTANCE",
    "ACTION_LAST",
    "BATTERY",
    "BATTERY_LOW",
    "CARGO",
    "CHARGERS",
    "CONSTRAINT_PREFIX",
    "DEFAULT_ACCEPTANCE",
    "DEFAULT_LIMITS",
    "DEFAULT_LOW_BATTERY",
    "DISPATCH_ORDER",
    "DOCKS",
    "FORBIDDEN_PREFIX",
    "GOAL_DELIVER_PREFIX",
    "GOAL_PREFIX",
    "PLAN",
    "POSE",
    "ROBOT_LIMITS",
    "ROBOT_RADIUS",
    "ROUTE",
    "SCANNER",
    "SPEED_ZONE_PREFIX",
    "VELOCITY",
    "WORLD_BOUNDS",
    "Acceptance",
    "ActionOutcome",
    "Bounds",
    "DeliverGoal",
    "KeysOf",
    "LastRead",
    "Point2",
    "Pose",
    "RobotLimits",
    "Scan",
    "Velocity",
    "Zone",
    "deliver_goal_key",
    "forbidden_key",
    "positive",
    "radius_in",
    "read_battery",
    "read_bounds",
    "read_low_battery",
    "read_order",
    "read_places",
    "read_zone_polygon",
    "route_points",
    "speed_zone_key",
]

# -- keys ----------------------------------------------------------------------------------

POSE: Final = "pose"
"""(x, y, theta): the sensed pose, with a time-to-live (``Pose``)."""
VELOCITY: Final = "velocity"
"""(v, w): forward speed (m/s) and turn rate (rad/s), with a time-to-live (``Velocity``)."""
BATTERY: Final = "battery"
"""The charge left, a fraction in [0, 1] (``read_battery``)."""
CARGO: Final = "cargo"
"""The id of the task whose load the robot carries, or None."""
ACTION_LAST: Final = "action:last"
"""The outcome of the latest pick, drop or charge command (``ActionOutcome``)."""
WORLD_BOUNDS: Final = "world:bounds"
"""(min_x, min_y, max_x, max_y) of the floor (``read_bounds``)."""
ROBOT_RADIUS: Final = "robot:radius"
"""The radius of the robot's disc (m); ``robot:limits`` says it too (``radius_in``)."""
ROBOT_LIMITS: Final = "robot:limits"
"""The robot's physical limits (``RobotLimits``)."""
ACCEPTANCE: Final = "acceptance"
"""The numbers of the pick/drop/charge acceptance predicate (``Acceptance``)."""
BATTERY_LOW: Final = "battery:low"
"""The battery fraction below which the robot should charge (``read_low_battery``)."""
DOCKS: Final = "docks"
"""Dock id -> (x, y) (``read_places``)."""
CHARGERS: Final = "chargers"
"""Charger id -> (x, y) (``read_places``)."""
PLAN: Final = "plan"
"""The planner's plan of the active task (written and read by cabins, not the world)."""
ROUTE: Final = "route"
"""The planner's route: ((x, y), ...), empty while it holds (``route_points``)."""
DISPATCH_ORDER: Final = "dispatch:order"
"""(task, ...): the order in which a dispatcher cabin wants the pending deliveries made
(``read_order``); the planner takes its next task from it (written by cabins)."""

GOAL_PREFIX: Final = "goal:"
"""Every goal item's key starts so; the dispatcher's deliveries are ``GOAL_DELIVER_PREFIX``."""
GOAL_DELIVER_PREFIX: Final = "goal:deliver:"
"""``goal:deliver:<task>``: one delivery to make (``DeliverGoal``)."""
SCANNER: Final = "safety:scanner"
"""What the safety scanner sees of the people and vehicles around the robot, with a
time-to-live (``Scan``): a channel of its own, beside the map's obstacle sightings."""
FORBIDDEN_PREFIX: Final = "safety:forbidden:"
"""``safety:forbidden:<zone>``: ground the robot's disc must never touch (``Zone``)."""
CONSTRAINT_PREFIX: Final = "constraint:"
"""Every constraint item's key starts so; speed limits are ``SPEED_ZONE_PREFIX``."""
SPEED_ZONE_PREFIX: Final = "constraint:speed:"
"""``constraint:speed:<zone>``: a speed limit within a polygon (``Zone``)."""


def forbidden_key(zone: str) -> str:
    """The board key of forbidden zone ``zone``."""
    return f"{FORBIDDEN_PREFIX}{zone}"


def speed_zone_key(zone: str) -> str:
    """The board key of speed zone ``zone``."""
    return f"{SPEED_ZONE_PREFIX}{zone}"


def deliver_goal_key(task: str) -> str:
    """The board key of the delivery goal of task ``task``."""
    return f"{GOAL_DELIVER_PREFIX}{task}"


_R = TypeVar("_R")


class LastRead(Generic[_R]):
    """What a cabin last read from some board values, read again only when one of them is
    another object. A board value is frozen, so the same object holds the same value: a
    cabin that reads the robot's limits every tick parses them once per write. Holds
    plain data (the values and what was read), so a checkpoint holds it."""

    __slots__ = ("_read", "_sources")

    def __init__(self) -> None:
        self._sources: tuple[Any, ...] | None = None
        self._read: _R | None = None

    def get(self, sources: tuple[Any, ...], read: Callable[[], _R]) -> _R:
        """``read()``, or what it returned last time if every one of ``sources`` is the
        very object it was then."""
        known = self._sources
        if (
            known is not None
            and len(known) == len(sources)
            and all(a is b for a, b in zip(known, sources, strict=True))
        ):
            return cast(_R, self._read)
        value = read()
        self._sources, self._read = sources, value
        return value


class KeysOf:
    """The keys of a view that start with a prefix (or one of several), in the view's
    order, looked for again only when the view's keys change: from tick to tick they
    seldom do, and a cabin would otherwise test every key for every prefix it reads.

    ``view`` may be the tick's keys as a tuple, made once (``tuple(view)``) and passed to
    every call of the tick: then no call makes it again, and the calls after the first
    see the very tuple they compared last and compare no key."""

    __slots__ = ("_found", "_keys")

    def __init__(self) -> None:
        self._keys: tuple[str, ...] = ()
        self._found: dict[str | tuple[str, ...], tuple[str, ...]] = {}

    def __call__(self, view: Iterable[str], prefix: str | tuple[str, ...]) -> tuple[str, ...]:
        keys = view if type(view) is tuple else tuple(view)
        if keys is not self._keys:
            if keys == self._keys:
                self._keys = keys  # the same keys: the next call of the tick compares none
            else:
                self._keys, self._found = keys, {}
        found = self._found.get(prefix)
        if found is None:
            found = self._found[prefix] = tuple(k for k in keys if k.startswith(prefix))
        return found


# -- numbers -------------------------------------------------------------------------------

DEFAULT_LOW_BATTERY: Final = 0.25
"""The low-battery threshold a cabin uses when ``battery:low`` is not readable."""


def positive(value: Any) -> float | None:
    """``value`` as a float if it is a finite real number above 0, else None."""
    number = finite(value)
    return number if number is not None and number > 0 else None


def read_battery(value: Any) -> float | None:
    """The ``battery`` reading: a finite number (the world writes a fraction in [0, 1])."""
    return finite(value)


def read_low_battery(value: Any) -> float | None:
    """The ``battery:low`` threshold: a finite number in [0, 1], else None."""
    number = finite(value)
    return number if number is not None and 0.0 <= number <= 1.0 else None


def read_order(value: Any) -> tuple[str, ...]:
    """The ``dispatch:order`` value: task ids in order (non-empty strings, each once; an
    id seen again is skipped); anything else reads as no order, ``()``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return ()
    seen: dict[str, None] = {}
    for task in value:
        if not isinstance(task, str) or not task:
            return ()
        seen.setdefault(task, None)
    return tuple(seen)


def _integer(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, Integral):
        return None
    return int(value)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# -- the robot -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pose:
    """A ``pose`` reading: position (m) and heading (rad)."""

    x: float
    y: float
    theta: float

    @property
    def xy(self) -> Point2:
        """The position alone."""
        return (self.x, self.y)

    @classmethod
    def read(cls, value: Any) -> Pose | None:
        """The pose in a sequence of at least 3 finite numbers (x, y, theta), else None."""
        xs = numbers(value, 3)
        return None if xs is None else cls(xs[0], xs[1], xs[2])

    def as_value(self) -> tuple[float, float, float]:
        """The ``pose`` board value."""
        return (self.x, self.y, self.theta)


@dataclass(frozen=True, slots=True)
class Velocity:
    """A ``velocity`` reading: forward speed ``v`` (m/s) and turn rate ``w`` (rad/s)."""

    v: float
    w: float

    @classmethod
    def read(cls, value: Any) -> Velocity | None:
        """The velocity in a sequence of at least 2 finite numbers (v, w), else None."""
        xs = numbers(value, 2)
        return None if xs is None else cls(xs[0], xs[1])

    def as_value(self) -> tuple[float, float]:
        """The ``velocity`` board value."""
        return (self.v, self.w)


@dataclass(frozen=True, slots=True)
class Scan:
    """A ``safety:scanner`` reading: the discs (x, y, radius) of the moving obstacles within
    ``range`` metres of the robot, nearest first (none: the scanner sees nothing there)."""

    range: float
    hits: tuple[tuple[float, float, float], ...]

    @classmethod
    def read(cls, value: Any) -> Scan | None:
        """The scan in a mapping {"range": r > 0, "hits": ((x, y, radius > 0), ...)}, else
        None."""
        if not isinstance(value, Mapping):
            return None
        reach = positive(value.get("range"))
        hits = value.get("hits")
        if reach is None or isinstance(hits, (str, bytes)) or not isinstance(hits, Sequence):
            return None
        discs: list[tuple[float, float, float]] = []
        for hit in hits:
            xs = numbers(hit, 3)
            if xs is None or not xs[2] > 0:
                return None
            discs.append((xs[0], xs[1], xs[2]))
        return cls(reach, tuple(discs))

    def as_value(self) -> dict[str, Any]:
        """The ``safety:scanner`` board value."""
        return {"range": self.range, "hits": self.hits}


@dataclass(frozen=True, slots=True)
class RobotLimits:
    """The robot's physical limits (``robot:limits``): every field a number above 0."""

    radius: float
    max_speed: float
    max_turn_rate: float
    max_accel: float

    @classmethod
    def read(cls, value: Any) -> RobotLimits | None:
        """The limits in a mapping with the four fields, each a positive number, else None."""
        if not isinstance(value, Mapping):
            return None
        radius, speed, turn, accel = (
            positive(value.get(name))
            for name in ("radius", "max_speed", "max_turn_rate", "max_accel")
        )
        if radius is None or speed is None or turn is None or accel is None:
            return None
        return cls(radius, speed, turn, accel)

    @classmethod
    def in_view(cls, view: Mapping[str, Any]) -> RobotLimits:
        """The limits a view says, field by field: a field that is not a positive number
        takes its ``DEFAULT_LIMITS`` value (the radius ``robot:radius`` first)."""
        return cls.given(view.get(ROBOT_LIMITS), radius_in(view))

    @classmethod
    def given(cls, raw: Any, radius: float | None) -> RobotLimits:
        """The limits of the ``robot:limits`` value ``raw`` as ``in_view`` reads them, with
        ``radius`` read already (``radius_in``; None: the default), for a cabin that reads
        the radius its own way."""
        given: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        return cls(
            radius=DEFAULT_LIMITS.radius if radius is None else radius,
            max_speed=_or(positive(given.get("max_speed")), DEFAULT_LIMITS.max_speed),
            max_turn_rate=_or(positive(given.get("max_turn_rate")), DEFAULT_LIMITS.max_turn_rate),
            max_accel=_or(positive(given.get("max_accel")), DEFAULT_LIMITS.max_accel),
        )

    def as_value(self) -> dict[str, float]:
        """The ``robot:limits`` board value."""
        return {
            "radius": self.radius,
            "max_speed": self.max_speed,
            "max_turn_rate": self.max_turn_rate,
            "max_accel": self.max_accel,
        }


DEFAULT_LIMITS: Final = RobotLimits(radius=0.35, max_speed=1.2, max_turn_rate=1.5, max_accel=0.5)
"""The limits a cabin assumes for what the board does not say."""


def radius_in(view: Mapping[str, Any]) -> float | None:
    """The robot radius a view says: the ``robot:limits`` radius if it is a positive number,
    else ``robot:radius`` if that is one, else None."""
    limits = view.get(ROBOT_LIMITS)
    radius = positive(limits.get("radius")) if isinstance(limits, Mapping) else None
    return radius if radius is not None else positive(view.get(ROBOT_RADIUS))


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


@dataclass(frozen=True, slots=True)
class Acceptance:
    """The acceptance predicate's numbers (``acceptance``): a pick, drop or charge happens
    within ``dock_tolerance`` (m) of the spot and at no more than ``max_speed`` (m/s)."""

    dock_tolerance: float
    max_speed: float

    @classmethod
    def read(cls, value: Any) -> Acceptance | None:
        """The numbers in a mapping with a positive ``dock_tolerance`` and a ``max_speed``
        of at least 0 (the world's rules), else None."""
        if not isinstance(value, Mapping):
            return None
        tolerance, speed = positive(value.get("dock_tolerance")), finite(value.get("max_speed"))
        if tolerance is None or speed is None or speed < 0:
            return None
        return cls(tolerance, speed)

    @classmethod
    def in_view(cls, view: Mapping[str, Any]) -> Acceptance:
        """The numbers a view says, field by field: a field that is not a positive number
        (a ``max_speed`` of 0 too) takes its ``DEFAULT_ACCEPTANCE`` value."""
        raw = view.get(ACCEPTANCE)
        given: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        return cls(
            dock_tolerance=_or(
                positive(given.get("dock_tolerance")), DEFAULT_ACCEPTANCE.dock_tolerance
            ),
            max_speed=_or(positive(given.get("max_speed")), DEFAULT_ACCEPTANCE.max_speed),
        )

    def as_value(self) -> dict[str, float]:
        """The ``acceptance`` board value."""
        return {"dock_tolerance": self.dock_tolerance, "max_speed": self.max_speed}


DEFAULT_ACCEPTANCE: Final = Acceptance(dock_tolerance=0.3, max_speed=0.05)
"""The acceptance numbers a cabin assumes for what the board does not say."""


@dataclass(frozen=True, slots=True)
class ActionOutcome:
    """The result of one pick, drop or charge command (``action:last``).

    ``id`` grows with every command the world answers; ``reason`` is ``ok``, ``failed``
    or why the command was refused; ``charger`` is set for a charge only.
    """

    id: int
    action: str
    task: str | None
    ok: bool
    reason: str
    stamp: float
    charger: str | None = None

    @classmethod
    def read(cls, value: Any) -> ActionOutcome | None:
        """The outcome in an ``action:last`` mapping, or None if a field is missing or wrong."""
        if not isinstance(value, Mapping):
            return None
        ident, stamp = _integer(value.get("id")), finite(value.get("stamp"))
        action, reason, ok = _text(value.get("action")), _text(value.get("reason")), value.get("ok")
        task, charger = value.get("task"), value.get("charger")
        if (
            ident is None
            or stamp is None
            or action is None
            or reason is None
            or not isinstance(ok, bool)
            or not (task is None or isinstance(task, str))
            or not (charger is None or isinstance(charger, str))
        ):
            return None
        return cls(ident, action, task, ok, reason, stamp, charger)

    def as_value(self) -> dict[str, Any]:
        """The ``action:last`` board value (``charger`` only for a charge)."""
        value: dict[str, Any] = {
            "id": self.id,
            "action": self.action,
            "task": self.task,
            "ok": self.ok,
            "reason": self.reason,
            "stamp": self.stamp,
        }
        if self.charger is not None:
            value["charger"] = self.charger
        return value


# -- the layout ----------------------------------------------------------------------------

Bounds = tuple[float, float, float, float]
"""(min_x, min_y, max_x, max_y)."""


def read_bounds(value: Any) -> Bounds | None:
    """The ``world:bounds`` rectangle: exactly 4 finite numbers with min below max, else None."""
    xs = numbers(value, 4)
    if xs is None or len(value) != 4:
        return None
    minx, miny, maxx, maxy = xs
    return (minx, miny, maxx, maxy) if minx < maxx and miny < maxy else None


def read_places(value: Any) -> dict[str, Point2]:
    """The places of a ``docks`` or ``chargers`` mapping, id -> (x, y); an entry whose
    position is not readable is left out, and a value that is no mapping has none."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): xy for k, v in value.items() if (xy := read_xy(v)) is not None}


def route_points(value: Any) -> tuple[Point2, ...] | None:
    """The points of a ``route`` value: () for an empty one (the planner holds), None if
    it is not a polyline."""
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and not value:
        return ()
    return read_route(value)


def _polygon(points: tuple[Point2, ...] | None) -> Polygon | None:
    """A valid, non-empty, prepared polygon through ``points``, or None."""
    if points is None or len(points) < 3:
        return None
    try:
        shape = Polygon(points)
    except (TypeError, ValueError, shapely.errors.ShapelyError):
        return None
    if shape.is_empty or not shape.is_valid:
        return None
    shapely.prepare(shape)
    return shape


def read_zone_polygon(value: Any) -> Polygon | None:
    """The polygon of a zone value (a mapping whose ``polygon`` is at least 3 (x, y)
    points outlining a valid polygon), prepared; None if it has none."""
    if not isinstance(value, Mapping):
        return None
    return _polygon(read_route(value.get("polygon")))


@dataclass(frozen=True, slots=True)
class Zone:
    """A forbidden zone (``max_speed`` None) or a speed zone (``max_speed`` > 0, m/s).

    ``points`` outline the polygon; ``shape`` is that polygon, valid and prepared.
    ``description`` says why a forbidden zone is forbidden.
    """

    id: str
    points: tuple[Point2, ...]
    shape: Polygon = field(compare=False, repr=False)
    max_speed: float | None = None
    description: str = ""

    @property
    def forbidden(self) -> bool:
        """True for a forbidden zone, False for a speed zone."""
        return self.max_speed is None

    @property
    def key(self) -> str:
        """The zone's board key."""
        return forbidden_key(self.id) if self.forbidden else speed_zone_key(self.id)

    @classmethod
    def of(
        cls,
        zone: str,
        points: Sequence[Any],
        *,
        max_speed: float | None = None,
        description: str = "",
    ) -> Zone:
        """A zone with its shape built; raises ``SettingError`` if ``points`` outline no
        valid polygon or ``max_speed`` is given and not a positive number."""
        outline = read_route(points)
        shape = _polygon(outline)
        if outline is None or shape is None:
            raise SettingError(f"zone {zone!r}: not a valid polygon of (x, y) points: {points!r}")
        if max_speed is not None and positive(max_speed) is None:
            raise SettingError(f"zone {zone!r}: max_speed must be > 0, got {max_speed!r}")
        limit = None if max_speed is None else float(max_speed)
        return cls(zone, outline, shape, limit, description)

    @classmethod
    def read(cls, key: str, value: Any) -> Zone | None:
        """The zone in the value of board key ``key`` (``safety:forbidden:<zone>`` or
        ``constraint:speed:<zone>``), or None if it is malformed. Its id is the value's
        ``zone``, else the end of the key; a speed zone needs a ``max_speed`` above 0."""
        if key.startswith(FORBIDDEN_PREFIX):
            speed, suffix = False, key.removeprefix(FORBIDDEN_PREFIX)
        elif key.startswith(SPEED_ZONE_PREFIX):
            speed, suffix = True, key.removeprefix(SPEED_ZONE_PREFIX)
        else:
            return None
        if not isinstance(value, Mapping):
            return None
        outline = read_route(value.get("polygon"))
        shape = _polygon(outline)
        limit = positive(value.get("max_speed")) if speed else None
        if outline is None or shape is None or (speed and limit is None):
            return None
        zone = value.get("zone")
        zone_id = zone if isinstance(zone, str) and zone else suffix
        description = _text(value.get("description")) or ""
        return cls(zone_id, outline, shape, limit, description)

    def as_value(self) -> dict[str, Any]:
        """The zone's board value: ``zone``, ``polygon`` and ``description`` for a forbidden
        zone; ``zone``, ``polygon`` and ``max_speed`` (and a description if it has one)
        for a speed zone."""
        if self.max_speed is None:
            return {"zone": self.id, "polygon": self.points, "description": self.description}
        value: dict[str, Any] = {
            "zone": self.id,
            "polygon": self.points,
            "max_speed": self.max_speed,
        }
        if self.description:
            value["description"] = self.description
        return value


# -- goals ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeliverGoal:
    """One delivery the dispatcher posted (``goal:deliver:<task>``): pick the load of
    ``task`` up at dock ``pickup``, drop it at dock ``drop``; released at ``released`` (s)."""

    task: str
    pickup: str
    drop: str
    pickup_xy: Point2
    drop_xy: Point2
    released: float

    @property
    def key(self) -> str:
        """The goal's board key."""
        return deliver_goal_key(self.task)

    @classmethod
    def read(cls, value: Any, docks: Mapping[str, Any] | None = None) -> DeliverGoal | None:
        """The goal in a ``goal:deliver:*`` value, or None if it is malformed.

        ``task``, ``pickup`` and ``drop`` must be strings. A dock position the value lacks
        (or cannot give) is taken from ``docks`` (dock id -> (x, y)); a goal with a dock
        it cannot place is malformed. A missing or unreadable ``released`` reads as 0.
        """
        if not isinstance(value, Mapping):
            return None
        task, pickup, drop = value.get("task"), value.get("pickup"), value.get("drop")
        if not (isinstance(task, str) and isinstance(pickup, str) and isinstance(drop, str)):
            return None
        places: Mapping[str, Any] = docks if docks is not None else {}
        pickup_xy = read_xy(value.get("pickup_xy")) or read_xy(places.get(pickup))
        drop_xy = read_xy(value.get("drop_xy")) or read_xy(places.get(drop))
        if pickup_xy is None or drop_xy is None:
            return None
        released = finite(value.get("released"))
        return cls(task, pickup, drop, pickup_xy, drop_xy, 0.0 if released is None else released)

    def as_value(self) -> dict[str, Any]:
        """The ``goal:deliver:<task>`` board value."""
        return {
            "task": self.task,
            "pickup": self.pickup,
            "drop": self.drop,
            "pickup_xy": self.pickup_xy,
            "drop_xy": self.drop_xy,
            "released": self.released,
        }
