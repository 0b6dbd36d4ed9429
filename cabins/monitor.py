"""The monitor cabin: watches the robot and stops it when safety demands.

Each tick it reads only its view and, through its outbox:

- measures the cross-track error of ``pose`` from ``route``, keeps a bounded history of
  it and raises an ``alarm`` {"kind": "deviation"} when the error climbs into the warn
  or alarm band (with hysteresis, so noise on a band edge does not repeat it);
- raises an ``alarm`` when a required reading (``pose``, ``route``) is missing for a
  reason other than "absent": kind ``stale_reading`` when it is stale, else
  ``missing_reading``, and reports the reaction ``alarm:missing_reading``;
- commands ``stop`` while the robot's disc is within ``stop_margin`` of a forbidden zone
  (``safety:forbidden:*`` items, and forbidden zones on its map) and moving towards it,
  or within ``obstacle_margin`` of an obstacle and moving towards it (an obstacle on its
  map, or a disc in the safety scanner's ``safety:scanner`` reading that no obstacle on
  the map covers: a map that lost its people leaves the scanner). A robot moving
  away, alongside or turning on the spot is let go, so it cannot get stuck beside a
  zone; a robot at rest that faces a shape from close by is held, with a free tick now
  and then to start turning away (see ``Monitor._must_stop``);
- fail-safe: while ``safety:*`` or ``safety:scanner`` is missing for a reason other
  than "absent" (fault, stale, evicted), or a safety item cannot be read, it commands
  ``stop`` every tick and reports the reaction ``stop:fail_safe`` ("absent" means the
  scenario has no forbidden zones, or the robot no scanner, so there is nothing to
  stop for);
- raises alarms on ``cabin_failed`` and ``tick_overrun`` events (one per event), on
  capacity alarms, on speeding inside a speed zone and on a low battery, and an
  ``alarm`` {"kind": "cabin_late"} while an asynchronous cabin is late (a ``late:<cabin>``
  item in view, see ``runtime.asynchronous``);
- acts on two conditions, with the reaction its spec's ``[on_condition]`` declares
  (``CONDITIONS`` lists what it can do for each; the first is the default):
  ``deviation_growing``, the cross-track error in the warn or alarm band and still
  growing (by ``growth`` metres within ``growth_window`` seconds), slows the robot down
  (``slow:deviation``: a ``slow`` command capping the speed at ``slow_speed``) or stops it;
  ``contact_predicted``, the robot's braking path (where it goes if it brakes now at its
  ``max_accel``, keeping its turn rate) bringing its disc within ``contact_margin`` of a
  shelf, a forbidden zone, a wall or a person (on the map or in the scan), commands a
  protective stop (``stop:protective``) or a slow-down. The reaction is reported (a
  ``reaction`` event) when the condition starts and a ``reaction_lifted`` event when it
  has stayed clear for ``clear_after`` seconds; a stop is commanded on the ticks the
  condition holds, a slow-down until it is lifted;
- writes ``monitor:status`` = {"deviation", "level", "estop", "reacting"} when it changes.

Missing readings and the fail-safe are reported on the tick they start (or their reason
changes). Other alarms and emergency stops are reported once per *episode*: an episode
lasts while its condition recurs within ``episode_gap`` seconds (a stopped robot that
creeps on is still the same episode). The ``stop`` command itself is sent every tick
the condition holds. The monitor never raises on bad data: an unreadable value gets an ``alarm``
{"kind": "bad_reading"} naming the key and the value, and unreadable safety data is
treated as missing (fail-safe).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, Generic, Literal, TypeVar

import shapely
from shapely.geometry import LineString, Point
from shapely.geometry.base import BaseGeometry

from cabins.warehouse.clearance import Solids, braking_path, path_geometry, walls_of
from cabins.warehouse.shapes import point, polyline
from cabins.warehouse.values import (
    BATTERY,
    BATTERY_LOW,
    DEFAULT_LIMITS,
    DEFAULT_LOW_BATTERY,
    FORBIDDEN_PREFIX,
    POSE,
    ROBOT_LIMITS,
    ROBOT_RADIUS,
    SCANNER,
    SPEED_ZONE_PREFIX,
    VELOCITY,
    WORLD_BOUNDS,
    KeysOf,
    LastRead,
    Pose,
    RobotLimits,
    Scan,
    Velocity,
    Zone,
    positive,
    read_battery,
    read_bounds,
    read_low_battery,
    route_points,
)
from runtime.asynchronous import LATE_PREFIX
from runtime.cabin import Outbox
from runtime.errors import SettingError
from runtime.pack import CabinView
from runtime.spec import ContextSpec

__all__ = [
    "CONDITIONS",
    "FAIL_SAFE",
    "READING_REACTION",
    "SAFETY",
    "STATUS_KEY",
    "DeviationBands",
    "Level",
    "Monitor",
]

Level = Literal["ok", "warn", "alarm"]
_RANK: Final[dict[Level, int]] = {"ok": 0, "warn": 1, "alarm": 2}

SAFETY: Final = "safety:*"
_FAIL_SAFE_ON: Final = (SAFETY, SCANNER)  # required items whose absence stops the robot
FAIL_SAFE: Final = "stop:fail_safe"
READING_REACTION: Final = "alarm:missing_reading"
STATUS_KEY: Final = "monitor:status"
PROTECTIVE: Final = "stop:protective"
CONDITIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "deviation_growing": ("slow:deviation", PROTECTIVE),
    "contact_predicted": (PROTECTIVE, "slow:contact"),
}
"""Condition -> what the monitor can do while it holds: the first unless the spec's
``[on_condition]`` picks another."""
_PREDICT_DT: Final = 0.05  # s: the tick the braking prediction steps by
_SPEED_TOLERANCE: Final = 1e-6
_HOLD_FACING: Final = 0.1  # heading within ~84 degrees of straight at the shape
_AT_REST_TURN: Final = 0.05  # rad/s: slower turns count as at rest
_HOLD_REACH: Final = 2.0  # a hold lasts while the measured gap is within this many margins
_ALARM_TAGS: Final = ("alarm",)
_STOP_TAGS: Final = ("safety",)
_CONTACT_KINDS: Final = frozenset({"shelf", "forbidden", "obstacle"})  # what contact counts


def _finite(value: float, name: str, *, low: float = 0.0, strict: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < low or (strict and number == low):
        bound = f"> {low:g}" if strict else f">= {low:g}"
        raise SettingError(f"{name} must be a finite number {bound}, got {value!r}")
    return number


@dataclass(frozen=True, slots=True)
class DeviationBands:
    """Warn and alarm bands of the cross-track error, in metres.

    An error at or above ``warn`` (``alarm``) is in the warn (alarm) band; it leaves a
    band only once it is ``hysteresis`` below the band's lower edge.
    """

    warn: float = 0.5
    alarm: float = 1.0
    hysteresis: float = 0.05

    def __post_init__(self) -> None:
        _finite(self.warn, "warn_deviation", strict=True)
        _finite(self.alarm, "alarm_deviation", strict=True)
        _finite(self.hysteresis, "hysteresis")
        if self.alarm <= self.warn:
            raise SettingError(
                f"alarm_deviation ({self.alarm!r}) must be greater than "
                f"warn_deviation ({self.warn!r})"
            )
        if self.hysteresis >= min(self.warn, self.alarm - self.warn):
            raise SettingError(
                f"hysteresis ({self.hysteresis!r}) must be smaller than "
                f"warn_deviation ({self.warn!r}) and than the gap between the "
                f"bands ({self.alarm - self.warn!r})"
            )

    def classify(self, error: float, current: Level = "ok") -> Level:
        """The band of ``error`` for a monitor now in band ``current``."""
        if error >= self.alarm or (current == "alarm" and error > self.alarm - self.hysteresis):
            return "alarm"
        if error >= self.warn or (current != "ok" and error > self.warn - self.hysteresis):
            return "warn"
        return "ok"


@dataclass(frozen=True, slots=True)
class _Robot:
    """The robot as the stop guards see it this tick: centre, heading, speed, radius."""

    here: Point
    cos: float
    sin: float
    speed: float | None  # signed forward speed; None when velocity is not in view
    turn: float  # turn rate (0 when velocity is not in view)
    radius: float


@dataclass(frozen=True, slots=True)
class _Hold:
    """A robot at rest held beside a shape: since when, how often it pushed on when let go,
    and whether this tick is its free one."""

    since: float
    pushes: int
    released: bool = False


class _Episodes:
    """Episodes by key: one lasts while its condition recurs within ``gap`` seconds."""

    __slots__ = ("_gap", "_last")

    def __init__(self, gap: float) -> None:
        self._gap = gap
        self._last: dict[Hashable, float] = {}

    def hit(self, key: Hashable, now: float) -> bool:
        """Record that ``key``'s condition holds at ``now``; True if this opens an episode."""
        last = self._last.get(key)
        self._last[key] = now if last is None else max(last, now)
        return last is None or now - last > self._gap

    def close_old(self, now: float) -> None:
        """Forget the episodes whose condition last held more than ``gap`` ago."""
        old = [k for k, t in self._last.items() if now - t > self._gap]
        for key in old:
            del self._last[key]

    def open(self) -> tuple[Hashable, ...]:
        return tuple(self._last)


_T = TypeVar("_T")


class _Parsed(Generic[_T]):
    """What values parse to, by key, parsed again only when the key's value changes."""

    __slots__ = ("_limit", "_parsed")

    def __init__(self, limit: int = 256) -> None:
        self._limit = limit
        self._parsed: dict[str, tuple[Any, _T]] = {}

    def get(self, key: str, source: Any, parse: Callable[[Any], _T]) -> _T:
        hit = self._parsed.get(key)
        if hit is not None and (hit[0] is source or _same(hit[0], source)):
            return hit[1]
        parsed = parse(source)
        if len(self._parsed) >= self._limit:
            self._parsed.clear()
        self._parsed[key] = (source, parsed)
        return parsed


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, BaseGeometry) or isinstance(b, BaseGeometry):
        return (
            isinstance(a, BaseGeometry)
            and isinstance(b, BaseGeometry)
            and bool(shapely.equals_exact(a, b, 0.0))
        )
    try:
        return bool(a == b)
    except ValueError:
        return False


def _copy(geometry: Any) -> BaseGeometry:
    # a private copy to prepare: a view's features are shared with other cabins
    copied: BaseGeometry = shapely.from_wkb(shapely.to_wkb(geometry))
    shapely.prepare(copied)
    return copied


def _data(event_data: Any) -> Mapping[str, Any]:
    return event_data if isinstance(event_data, Mapping) else {}


class Monitor:
    """Deviation bands, stale readings, emergency stops and alarms for one robot."""

    def __init__(
        self,
        spec: ContextSpec,
        *,
        warn_deviation: float = 0.5,
        alarm_deviation: float = 1.0,
        hysteresis: float = 0.05,
        history: int = 200,
        stop_margin: float = 0.1,
        obstacle_margin: float = 0.1,
        closing_speed: float = 1e-3,
        hold_fraction: float = 0.5,
        hold_release: float = 1.0,
        episode_gap: float = 1.0,
        status_step: float = 0.05,
        slow_speed: float = 0.5,
        growth: float = 0.05,
        growth_window: float = 0.5,
        contact_margin: float = 0.05,
        clear_after: float = 0.5,
    ) -> None:
        if not isinstance(spec, ContextSpec):
            raise TypeError(f"spec must be a ContextSpec, got {type(spec).__name__}")
        _check_conditions(spec)
        if isinstance(history, bool) or not isinstance(history, int) or history < 1:
            raise SettingError(f"history must be an integer >= 1, got {history!r}")
        self.spec = spec
        self.bands = DeviationBands(warn_deviation, alarm_deviation, hysteresis)
        self.stop_margin = _finite(stop_margin, "stop_margin")
        self.obstacle_margin = _finite(obstacle_margin, "obstacle_margin")
        self.closing_speed = _finite(closing_speed, "closing_speed")
        self.hold_fraction = _finite(hold_fraction, "hold_fraction")
        if self.hold_fraction > 1:
            raise SettingError(f"hold_fraction must be in [0, 1], got {hold_fraction!r}")
        self.hold_release = _finite(hold_release, "hold_release", strict=True)
        self.episode_gap = _finite(episode_gap, "episode_gap")
        self.status_step = _finite(status_step, "status_step", strict=True)
        self.slow_speed = _finite(slow_speed, "slow_speed", strict=True)
        self.growth = _finite(growth, "growth", strict=True)
        self.growth_window = _finite(growth_window, "growth_window", strict=True)
        self.contact_margin = _finite(contact_margin, "contact_margin")
        self.clear_after = _finite(clear_after, "clear_after")
        self.reactions: Mapping[str, str] = {
            condition: spec.on_condition.get(condition, allowed[0])
            for condition, allowed in CONDITIONS.items()
        }
        """Condition -> the reaction in force: the spec's choice, else the default."""
        self._reacting: dict[str, tuple[float, float]] = {}  # condition -> (since, last held)
        self._walls_value: Any = None
        self._walls: tuple[tuple[str, BaseGeometry], ...] = ()
        self._solids: Solids | None = None  # last tick's, given back while the same
        self._history: deque[tuple[float, float]] = deque(maxlen=history)
        self._level: Level = "ok"
        self._deviation: float | None = None
        self._episodes = _Episodes(self.episode_gap)
        self._zone_values: _Parsed[Zone | None] = _Parsed()  # board zone values
        self._features: _Parsed[BaseGeometry] = _Parsed()  # forbidden zones of the map
        self._route_value: Any = None
        self._route_line: BaseGeometry | None = None
        self._seen_events: dict[int, float] = {}
        self._missing: dict[str, str] = {}
        self._safety_missing: tuple[str, str] | None = None  # (pattern, reason)
        self._held: dict[Hashable, _Hold] = {}  # last tick's holds, by shape
        self._holding: dict[Hashable, _Hold] = {}  # this tick's
        self._status: tuple[float | None, Level, bool] | None = None
        self._status_reacting: tuple[str, ...] = ()
        self._limits_read: LastRead[RobotLimits] = LastRead()  # once per write, not per tick
        self._keys_of = KeysOf()

    def __setstate__(self, state: dict[str, Any]) -> None:
        # a monitor pickled before it acted on conditions starts with none in force
        self.__dict__.update(
            {
                "slow_speed": 0.5,
                "growth": 0.05,
                "growth_window": 0.5,
                "contact_margin": 0.05,
                "clear_after": 0.5,
                "reactions": {c: allowed[0] for c, allowed in CONDITIONS.items()},
                "_reacting": {},
                "_walls_value": None,
                "_walls": (),
                "_solids": None,
                "_limits_read": LastRead(),
                "_keys_of": KeysOf(),
            }
        )
        self.__dict__.update(state)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def reacting(self) -> tuple[str, ...]:
        """The conditions whose reaction is in force now."""
        return tuple(sorted(self._reacting))

    @property
    def level(self) -> Level:
        """The deviation band the robot is in now."""
        return self._level

    @property
    def deviation(self) -> float | None:
        """The last cross-track error (m), or None when it cannot be measured."""
        return self._deviation

    @property
    def history(self) -> tuple[tuple[float, float], ...]:
        """Recent (time, cross-track error) samples, oldest first."""
        return tuple(self._history)

    @property
    def estop(self) -> bool:
        """True while an emergency-stop episode is open."""
        return any(isinstance(k, tuple) and k[0] == "stop" for k in self._episodes.open())

    def step(self, view: CabinView, out: Outbox) -> None:
        now = view.time
        self._episodes.close_old(now)
        radius = self._radius(view, out)
        pose = self._reading(view, POSE, 3, Pose.read, out)
        velocity = self._reading(view, VELOCITY, 2, Velocity.read, out)
        here = None if pose is None else point(pose.x, pose.y)  # one per tick, for all
        self._check_readings(view, out)
        self._track_deviation(view, here, out)

        stops: list[str] = []
        self._fail_safe(view, out, stops)
        scanned = self._scanned(view, out, stops)
        zones = self._zones(view, out, stops)
        if pose is not None and here is not None:
            robot = _Robot(
                here,
                math.cos(pose.theta),
                math.sin(pose.theta),
                None if velocity is None else velocity.v,
                0.0 if velocity is None else velocity.w,
                radius,
            )
            self._guard_zones(view, zones, robot, out, stops)
            self._guard_obstacles(view, robot, out, stops, scanned)
            if robot.speed is not None:
                self._check_speed(view, robot.here, abs(robot.speed), out)
        held = {
            "deviation_growing": self._deviation_growing(view.time),
            "contact_predicted": self._contact(view, pose, here, velocity, radius, scanned),
        }
        slow = self._react(view, out, held, stops)
        self._held, self._holding = self._holding, {}
        if stops:
            out.command("stop", reason=stops[0])
        elif slow is not None:
            out.command("slow", v=slow[0], reason=slow[1])
        self._check_battery(view, out)
        self._check_late(view, out)
        self._read_events(view, out)
        self._write_status(out)

    # -- readings ---------------------------------------------------------------

    def _bad(self, view: CabinView, out: Outbox, key: str, problem: str) -> None:
        if self._episodes.hit(("bad", key), view.time):
            out.emit(
                "alarm",
                {"kind": "bad_reading", "level": "alarm", "key": key, "error": problem},
                tags=_ALARM_TAGS,
            )

    def _reading(
        self, view: CabinView, key: str, count: int, read: Callable[[Any], _T | None], out: Outbox
    ) -> _T | None:
        if key not in view:
            return None
        value = view[key]
        reading = read(value)
        if reading is None:
            self._bad(view, out, key, f"{key} must hold {count} finite numbers, got {value!r}")
        return reading

    def _radius(self, view: CabinView, out: Outbox) -> float:
        """The robot radius (``cabins.warehouse.values.radius_in``), with an alarm for each
        unreadable radius on the way to it."""
        limits = view.get(ROBOT_LIMITS)
        if isinstance(limits, Mapping) and "radius" in limits:
            radius = positive(limits["radius"])
            if radius is not None:
                return radius
            self._bad(view, out, ROBOT_LIMITS, f"radius must be > 0, got {limits['radius']!r}")
        if ROBOT_RADIUS in view:
            radius = positive(view[ROBOT_RADIUS])
            if radius is not None:
                return radius
            self._bad(view, out, ROBOT_RADIUS, f"must be > 0, got {view[ROBOT_RADIUS]!r}")
        return DEFAULT_LIMITS.radius

    def _check_readings(self, view: CabinView, out: Outbox) -> None:
        """Alarm (and react) on the tick a required reading goes missing, or changes reason."""
        missing: dict[str, str] = {}
        for pattern in self.spec.required:
            reason = view.missing.get(pattern)
            if pattern in _FAIL_SAFE_ON or reason is None or reason == "absent":
                continue
            missing[pattern] = reason
            if self._missing.get(pattern) != reason:
                kind = "stale_reading" if reason == "stale" else "missing_reading"
                out.emit(
                    "alarm",
                    {"kind": kind, "level": "warn", "key": pattern, "reason": reason},
                    tags=_ALARM_TAGS,
                )
                out.react(pattern, READING_REACTION, reason=reason)
        self._missing = missing

    # -- deviation --------------------------------------------------------------

    def _line(self, view: CabinView, value: Any, out: Outbox) -> BaseGeometry | None:
        if value is self._route_value or (
            self._route_value is not None and _same(value, self._route_value)
        ):
            return self._route_line
        points = route_points(value)
        line: BaseGeometry | None = None
        if points is None:
            self._bad(
                view, out, self.spec.route_key, f"a route must be ((x, y), ...), got {value!r}"
            )
        elif len(points) == 1:
            line = Point(points[0])
        elif points:
            line = LineString(points)
        self._route_value, self._route_line = value, line
        return line

    def _track_deviation(self, view: CabinView, here: Point | None, out: Outbox) -> None:
        key = self.spec.route_key
        line = self._line(view, view[key], out) if key in view else None
        if line is None:
            self._deviation = None
            if view.missing.get(key, "absent") == "absent":
                self._level = "ok"  # no route at all: nothing to deviate from
            return
        if here is None:
            self._deviation = None
            return
        error = float(line.distance(here))
        self._history.append((view.time, error))
        self._deviation = error
        level = self.bands.classify(error, self._level)
        if _RANK[level] > _RANK[self._level]:
            limit = self.bands.alarm if level == "alarm" else self.bands.warn
            out.emit(
                "alarm",
                {"kind": "deviation", "level": level, "error": error, "limit": limit},
                tags=_ALARM_TAGS,
            )
        self._level = level

    # -- stops ------------------------------------------------------------------

    def _stop(
        self,
        view: CabinView,
        out: Outbox,
        stops: list[str],
        reason: str,
        episode: Hashable,
        data: Mapping[str, Any],
    ) -> bool:
        """Stop this tick; True (and an ``emergency_stop`` event) if a stop episode opens."""
        stops.append(reason)
        if not self._episodes.hit(("stop", reason, episode), view.time):
            return False
        out.emit("emergency_stop", {"reason": reason, **data}, tags=_STOP_TAGS)
        return True

    def _fail_safe(self, view: CabinView, out: Outbox, stops: list[str]) -> None:
        """Stop every tick while safety items (``safety:*``, or the scanner's reading) are
        missing; report it when that starts."""
        missing = view.missing
        found = next(
            ((p, r) for p in _FAIL_SAFE_ON if (r := missing.get(p)) not in (None, "absent")),
            None,
        )
        before, self._safety_missing = self._safety_missing, found
        if found is None:
            return
        pattern, reason = found
        stops.append("fail_safe")
        self._episodes.hit(("stop", "fail_safe", reason), view.time)
        if found != before:
            out.emit(
                "emergency_stop",
                {"reason": "fail_safe", "missing": reason, "pattern": pattern},
                tags=_STOP_TAGS,
            )
            out.react(pattern, FAIL_SAFE, reason=reason)

    def _scanned(
        self, view: CabinView, out: Outbox, stops: list[str]
    ) -> tuple[tuple[str, BaseGeometry, Point], ...]:
        """The people and vehicles the safety scanner sees: (name, disc, centre), nearest
        first; an unreadable scan is a bad reading and a fail-safe stop."""
        if SCANNER not in view:
            return ()
        value = view[SCANNER]
        scan = Scan.read(value)
        if scan is None:
            self._bad(
                view,
                out,
                SCANNER,
                f"a scan must be {{range: r > 0, hits: ((x, y, radius > 0), ...)}}, got {value!r}",
            )
            self._stop(
                view, out, stops, "fail_safe", SCANNER, {"missing": "unreadable", "key": SCANNER}
            )
            return ()
        seen: list[tuple[str, BaseGeometry, Point]] = []
        for i, (x, y, r) in enumerate(scan.hits):
            centre = point(x, y)
            seen.append((f"scanner:{i}", centre.buffer(r), centre))
        return tuple(seen)

    def _zones(
        self, view: CabinView, out: Outbox, stops: list[str]
    ) -> list[tuple[str, BaseGeometry]]:
        zones: dict[str, BaseGeometry] = {}
        for key in sorted(self._keys_of(view, FORBIDDEN_PREFIX)):
            value = view[key]
            zone = self._zone_values.get(key, value, partial(Zone.read, key))
            if zone is not None:
                zones[zone.id] = zone.shape
                continue
            self._bad(
                view,
                out,
                key,
                f"a forbidden zone must be {{zone, polygon: ((x, y), ...)}} outlining a "
                f"valid polygon, got {value!r}",
            )
            self._stop(view, out, stops, "fail_safe", key, {"missing": "unreadable", "key": key})
        for feature in view.nearby_map:
            if feature.kind != "forbidden":
                continue
            name = str(feature.props.get("id", feature.id))
            if name not in zones:
                zones[name] = self._features.get(feature.id, feature.geometry, _copy)
        return list(zones.items())

    def _must_stop(
        self, shape: BaseGeometry, robot: _Robot, margin: float, key: Hashable, now: float
    ) -> float | None:
        """The disc's gap to ``shape`` if the robot must stop for it this tick, else None.

        Within ``margin`` it stops when the centre is inside, when its velocity is unknown,
        or when its motion shrinks the gap. A stopped robot reads speed 0, so a driver
        pushing at ``shape`` would creep in one accelerating tick at a time. So within
        ``hold_fraction`` of the margin a robot at rest that faces ``shape`` is *held*
        (and stays held within twice the margin, as noise may move its pose but nothing
        moves the robot), with one free tick after
        ``hold_release`` seconds in which a driver can start to turn away: a robot turning
        on the spot is not at rest, so its turn goes on and the hold ends. A driver that
        uses its free tick to push on waits twice as long for the next (up to 8 times
        ``hold_release``), so it creeps in by no more than about one accelerating tick
        every 8 seconds.
        """
        centre_distance = float(shape.distance(robot.here))
        gap = centre_distance - robot.radius
        hold = self._held.get(key)
        # a held robot at rest has not moved: only pose noise says otherwise
        if gap >= (_HOLD_REACH * margin if hold is not None and not hold.released else margin):
            return None
        if robot.speed is None or centre_distance <= 0.0:
            return self._keep(key, hold, gap)
        nearest_x, nearest_y = shapely.shortest_line(robot.here, shape).coords[-1]
        away_x = (robot.here.x - float(nearest_x)) / centre_distance
        away_y = (robot.here.y - float(nearest_y)) / centre_distance
        facing = robot.cos * away_x + robot.sin * away_y  # < 0: heading points at shape
        if robot.speed * facing < -self.closing_speed:
            if hold is not None and hold.released:  # it pushed on in its free tick
                hold = _Hold(now, hold.pushes + 1)
            return self._keep(key, hold, gap)
        at_rest = abs(robot.speed) <= self.closing_speed and abs(robot.turn) <= _AT_REST_TURN
        if not at_rest or facing >= -_HOLD_FACING:
            return None
        if hold is None:
            if gap >= margin * self.hold_fraction:
                return None
            hold = _Hold(now, 0)
        elif hold.released:
            hold = _Hold(now, hold.pushes)
        elif now - hold.since >= self.hold_release * 2 ** min(hold.pushes, 3):
            self._holding[key] = _Hold(now, hold.pushes, released=True)
            return None
        return self._keep(key, hold, gap)

    def _keep(self, key: Hashable, hold: _Hold | None, gap: float) -> float:
        if hold is not None:
            self._holding[key] = hold
        return gap

    def _guard_zones(
        self,
        view: CabinView,
        zones: list[tuple[str, BaseGeometry]],
        robot: _Robot,
        out: Outbox,
        stops: list[str],
    ) -> None:
        reach = robot.radius + _HOLD_REACH * self.stop_margin
        for zone, shape in zones:
            if not shape.dwithin(robot.here, reach):
                continue
            gap = self._must_stop(shape, robot, self.stop_margin, ("zone", zone), view.time)
            if gap is not None:
                self._stop(
                    view, out, stops, "forbidden_zone", zone, {"zone": zone, "distance": gap}
                )

    def _guard_obstacles(
        self,
        view: CabinView,
        robot: _Robot,
        out: Outbox,
        stops: list[str],
        scanned: tuple[tuple[str, BaseGeometry, Point], ...] = (),
    ) -> None:
        """Stop short of the obstacles on the map, and of those the scanner sees where the
        map shows none (a map that lost them: the scanner's disc is guarded alike)."""
        on_map: list[BaseGeometry] = []
        guarded: list[tuple[str, BaseGeometry]] = []
        for feature in view.nearby_map:
            if feature.kind == "obstacle":
                on_map.append(feature.geometry)
                guarded.append((feature.id, feature.geometry))
        for name, disc, centre in scanned:
            if not any(shape.intersects(centre) for shape in on_map):
                guarded.append((name, disc))
        for name, shape in guarded:
            gap = self._must_stop(shape, robot, self.obstacle_margin, ("obstacle", name), view.time)
            if gap is not None:
                self._stop(view, out, stops, "obstacle", name, {"obstacle": name, "distance": gap})

    # -- conditions it acts on -------------------------------------------------

    def _deviation_growing(self, now: float) -> dict[str, Any] | None:
        """The deviation's growth, while it is in a band and still growing."""
        if self._level == "ok" or self._deviation is None or not self._history:
            return None
        since = now - self.growth_window
        recent = [error for t, error in self._history if t >= since]
        grown = self._deviation - min(recent, default=self._deviation)
        if grown < self.growth:
            return None
        return {"deviation": round(self._deviation, 3), "grown": round(grown, 3)}

    def _contact(
        self,
        view: CabinView,
        pose: Pose | None,
        here: Point | None,
        velocity: Velocity | None,
        radius: float,
        scanned: tuple[tuple[str, BaseGeometry, Point], ...] = (),
    ) -> dict[str, Any] | None:
        """What the braking path would bring the disc within ``contact_margin`` of, if the
        robot closes in on it: a solid on the map, a wall, or what the scanner sees."""
        if pose is None or here is None or velocity is None or abs(velocity.v) < 1e-3:
            return None
        limits = self._limits_read.get(
            (view.get(ROBOT_LIMITS), view.get(ROBOT_RADIUS)), partial(RobotLimits.in_view, view)
        )
        bounds_value = view.get(WORLD_BOUNDS)
        if bounds_value is not self._walls_value:
            self._walls_value, self._walls = bounds_value, walls_of(read_bounds(bounds_value))
        solids = self._solids = Solids.of(
            view.nearby_map,
            self._walls + tuple((name, disc) for name, disc, _ in scanned)
            if scanned
            else self._walls,
            kinds=_CONTACT_KINDS,
            last=self._solids,
        )
        if not solids:
            return None
        now_gap = solids.gap(here) - radius
        speed = abs(velocity.v)
        reach = speed * _PREDICT_DT + speed * speed / (2.0 * limits.max_accel)
        if now_gap >= reach + self.contact_margin:
            return None  # nothing within the braking distance
        path = braking_path(
            pose.x,
            pose.y,
            pose.theta,
            velocity.v,
            velocity.w,
            accel=limits.max_accel,
            dt=_PREDICT_DT,
        )
        nearest = solids.nearest(path_geometry(path))
        assert nearest is not None
        what, distance = nearest
        gap = distance - radius
        if gap >= self.contact_margin:
            return None
        if gap >= now_gap - 1e-6:
            return None  # moving alongside or away: braking brings it no nearer
        return {
            "with": what,
            "gap": round(gap, 3),
            "speed": round(velocity.v, 3),
            "stopping": round(float(polyline(path).length) if len(path) > 1 else 0.0, 3),
        }

    def _react(
        self,
        view: CabinView,
        out: Outbox,
        held: Mapping[str, dict[str, Any] | None],
        stops: list[str],
    ) -> tuple[float, str] | None:
        """Start, keep or lift each condition's reaction; the slow-down in force, if any."""
        now = view.time
        slow: tuple[float, str] | None = None
        for condition, detail in held.items():
            reaction = self.reactions[condition]
            active = self._reacting.get(condition)
            if detail is not None:
                if active is None:
                    out.react(condition, reaction, condition=condition, **detail)
                    active = (now, now)
                self._reacting[condition] = (active[0], now)
            elif active is not None and now - active[1] >= self.clear_after:
                del self._reacting[condition]
                out.emit(
                    "reaction_lifted",
                    {
                        "condition": condition,
                        "reaction": reaction,
                        "since": active[0],
                        "lasted": round(now - active[0], 3),
                    },
                    tags=_STOP_TAGS,
                )
                continue
            if condition not in self._reacting:
                continue
            if reaction == PROTECTIVE:
                if detail is not None:
                    stops.append("protective")
            else:
                cap = self.slow_speed
                if condition == "contact_predicted" and detail is not None:
                    cap = min(cap, max(0.0, float(detail["gap"])))
                if slow is None or cap < slow[0]:
                    slow = (cap, reaction.partition(":")[2])
        return slow

    # -- other alarms -----------------------------------------------------------

    def _check_speed(self, view: CabinView, here: Point, speed: float, out: Outbox) -> None:
        for key in sorted(self._keys_of(view, SPEED_ZONE_PREFIX)):
            value = view[key]
            zone = self._zone_values.get(key, value, partial(Zone.read, key))
            if zone is None or zone.max_speed is None:
                self._bad(
                    view,
                    out,
                    key,
                    f"a speed zone must be {{zone, polygon: ((x, y), ...), max_speed > 0}} "
                    f"outlining a valid polygon, got {value!r}",
                )
                continue
            limit = zone.max_speed
            if (
                speed > limit + _SPEED_TOLERANCE
                and zone.shape.contains(here)
                and self._episodes.hit(("speed", zone.id), view.time)
            ):
                out.emit(
                    "alarm",
                    {
                        "kind": "speed",
                        "level": "warn",
                        "zone": zone.id,
                        "speed": speed,
                        "max_speed": limit,
                    },
                    tags=_ALARM_TAGS,
                )

    def _check_battery(self, view: CabinView, out: Outbox) -> None:
        battery = read_battery(view.get(BATTERY))
        low = read_low_battery(view.get(BATTERY_LOW))
        threshold = DEFAULT_LOW_BATTERY if low is None else low
        if (
            battery is not None
            and battery < threshold
            and self._episodes.hit(("battery",), view.time)
        ):
            out.emit(
                "alarm",
                {"kind": "battery", "level": "warn", "battery": battery, "threshold": threshold},
                tags=_ALARM_TAGS,
            )

    def _check_late(self, view: CabinView, out: Outbox) -> None:
        for key in self._keys_of(view, LATE_PREFIX):
            data = _data(view[key])
            cabin = data.get("cabin", key[len(LATE_PREFIX) :])
            if self._episodes.hit(("late", str(cabin)), view.time):
                out.emit(
                    "alarm",
                    {
                        "kind": "cabin_late",
                        "level": "warn",
                        "cabin": cabin,
                        "since_tick": data.get("since_tick"),
                        "limit": data.get("limit"),
                    },
                    tags=_ALARM_TAGS,
                )

    def _read_events(self, view: CabinView, out: Outbox) -> None:
        for event in view.recent_events:
            if event.seq in self._seen_events:
                continue
            self._seen_events[event.seq] = event.stamp
            data = _data(event.data)
            if event.kind == "cabin_failed":
                out.emit(
                    "alarm",
                    {
                        "kind": "cabin_failed",
                        "level": "alarm",
                        "cabin": data.get("cabin"),
                        "error_type": data.get("error_type"),
                        "tick": data.get("tick"),
                        "seq": event.seq,
                    },
                    tags=_ALARM_TAGS,
                )
            elif event.kind == "tick_overrun":
                out.emit(
                    "alarm",
                    {
                        "kind": "tick_overrun",
                        "level": "warn",
                        "tick": data.get("tick"),
                        "compute_s": data.get("compute_s"),
                        "skipped": data.get("skipped"),
                        "seq": event.seq,
                    },
                    tags=_ALARM_TAGS,
                )
            elif (
                event.kind == "capacity_alarm"
                and data.get("phase", "start") == "start"
                and self._episodes.hit(("capacity",), event.stamp)
            ):
                out.emit(
                    "alarm",
                    {
                        "kind": "capacity",
                        "level": "warn",
                        "held": data.get("held"),
                        "pinned": data.get("pinned"),
                        "capacity": data.get("capacity"),
                    },
                    tags=_ALARM_TAGS,
                )
        if view.capacity_alarm and self._episodes.hit(("capacity",), view.time):
            # while pinned items alone overflow memory, the alarm event itself is evicted
            load = view.occupancy
            out.emit(
                "alarm",
                {
                    "kind": "capacity",
                    "level": "warn",
                    "held": load.held,
                    "pinned": load.pinned,
                    "capacity": load.capacity,
                },
                tags=_ALARM_TAGS,
            )
        horizon = view.time - self.spec.event_window - self.episode_gap
        old = [seq for seq, stamp in self._seen_events.items() if stamp < horizon]
        for seq in old:
            del self._seen_events[seq]

    def _write_status(self, out: Outbox) -> None:
        deviation = None if self._deviation is None else round(self._deviation, 3)
        estop = self.estop
        reacting = self.reacting
        last = self._status
        if last is not None:
            last_dev, last_level, last_estop = last
            same_dev = (deviation is None) == (last_dev is None) and (
                deviation is None
                or last_dev is None
                or abs(deviation - last_dev) < self.status_step
            )
            if (
                same_dev
                and last_level == self._level
                and last_estop == estop
                and reacting == self._status_reacting
            ):
                return
        self._status = (deviation, self._level, estop)
        self._status_reacting = reacting
        out.write(
            STATUS_KEY,
            {"deviation": deviation, "level": self._level, "estop": estop, "reacting": reacting},
        )


def _check_conditions(spec: ContextSpec) -> None:
    """Refuse a spec that declares a condition or a reaction this cabin does not have."""
    wrong = []
    for condition, reaction in spec.on_condition.items():
        allowed = CONDITIONS.get(condition)
        if allowed is None:
            wrong.append(
                f"{condition!r} (the monitor watches for {', '.join(map(repr, CONDITIONS))})"
            )
        elif reaction not in allowed:
            wrong.append(
                f"{condition!r} = {reaction!r} (for {condition!r} it can do "
                f"{' or '.join(map(repr, allowed))})"
            )
    if wrong:
        raise SettingError(
            f"spec {spec.name!r} declares conditions the monitor cannot act on: " + "; ".join(wrong)
        )
