"""Scenarios: the validated description of one warehouse run, read from TOML.

A scenario says what the world is (floor, shelves, docks, chargers, forbidden and
speed-limit zones, people and forklifts on waypoint loops), what the robot is, what
must be delivered and when, how often things fail and how the sensors behave.
``load_scenario`` reads one by name (a file shipped in ``sim/scenarios/``) or by
path, and refuses a bad one with a ``ScenarioError`` naming the file, the key path
and the problem, one line per problem.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

import shapely
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    Strict,
    ValidationError,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError
from shapely.geometry import LineString, Point, Polygon, box

from runtime.tomlfile import FileError, did_you_mean, key_path, read_toml
from sim.world.limits import (
    MAX_DURATION,
    MAX_FLOOR_SIDE,
    MAX_MAGNITUDE,
    MAX_RATE_HZ,
    MIN_RATE_HZ,
)

__all__ = [
    "SCENARIOS_DIR",
    "YIELD_MARGIN",
    "Acceptance",
    "Charger",
    "Dock",
    "Failures",
    "Floor",
    "ForbiddenZone",
    "MovingObstacle",
    "Pose",
    "Robot",
    "Scenario",
    "ScenarioError",
    "Sensors",
    "Shelf",
    "SpeedZone",
    "Task",
    "list_scenarios",
    "load_scenario",
    "scenario_path",
]

SCENARIOS_DIR = Path(__file__).with_name("scenarios")
"""Where the shipped scenarios live; ``load_scenario("warehouse")`` reads ``warehouse.toml``."""

YIELD_MARGIN = 0.3
"""Metres of free space a moving obstacle keeps from the robot's disc plus its own."""


def _within_magnitude(value: float) -> float:
    if abs(value) > MAX_MAGNITUDE:
        raise ValueError(f"must be at most {MAX_MAGNITUDE:g} in size")
    return value


Num = Annotated[float, Strict(), AfterValidator(_within_magnitude)]
XY = tuple[Num, Num]
Id = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$", max_length=64)]
Fraction = Annotated[float, Strict(), Field(ge=0.0, le=1.0)]


def _check_polygon(points: tuple[tuple[float, float], ...]) -> tuple[tuple[float, float], ...]:
    shape = Polygon(points)
    if not shape.is_valid:
        raise ValueError(f"polygon is not valid: {shapely.is_valid_reason(shape)}")
    if shape.area <= 0:
        raise ValueError("polygon has no area")
    return points


PolygonPoints = Annotated[tuple[XY, ...], Field(min_length=3), AfterValidator(_check_polygon)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Floor(_Model):
    """The rectangle the warehouse stands on; its edges are walls."""

    min_x: Num = Field(default=0.0, description="West edge (m).")
    min_y: Num = Field(default=0.0, description="South edge (m).")
    max_x: Num = Field(description="East edge (m).")
    max_y: Num = Field(description="North edge (m).")

    @model_validator(mode="after")
    def _check_extent(self) -> Floor:
        problems = _Problems()
        if self.max_x <= self.min_x:
            problems.add(("max_x",), self.max_x, f"must be greater than min_x ({self.min_x:g})")
        if self.max_y <= self.min_y:
            problems.add(("max_y",), self.max_y, f"must be greater than min_y ({self.min_y:g})")
        for axis, low, high in (("x", self.min_x, self.max_x), ("y", self.min_y, self.max_y)):
            if high - low > MAX_FLOOR_SIDE:
                problems.add(
                    (f"max_{axis}",),
                    high,
                    f"the floor is {high - low:g} m along {axis}; at most "
                    f"{MAX_FLOOR_SIDE:g} m is supported",
                )
        problems.raise_if_any(type(self).__name__)
        return self

    @property
    def shape(self) -> Polygon:
        return box(self.min_x, self.min_y, self.max_x, self.max_y)

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        return (self.min_x, self.min_y, self.max_x, self.max_y)


class Shelf(_Model):
    """A shelf: a polygonal obstacle the robot must not touch."""

    id: Id = Field(description="Unique shelf id; its map feature is shelf:<id>.")
    polygon: PolygonPoints = Field(description="Outline as [[x, y], ...] (m), at least 3 points.")

    @property
    def shape(self) -> Polygon:
        return Polygon(self.polygon)


class Dock(_Model):
    """A pick-up and drop point."""

    id: Id = Field(description="Unique dock id; its map feature is dock:<id>.")
    x: Num = Field(description="x (m) where the robot stands to pick or drop.")
    y: Num = Field(description="y (m) where the robot stands to pick or drop.")


class Charger(_Model):
    """A charging point."""

    id: Id = Field(description="Unique charger id; its map feature is charger:<id>.")
    x: Num = Field(description="x (m) where the robot stands to charge.")
    y: Num = Field(description="y (m) where the robot stands to charge.")


class ForbiddenZone(_Model):
    """A safety constraint: ground the robot's disc must never touch."""

    id: Id = Field(description="Unique zone id (shared with speed zones): zone:<id>.")
    polygon: PolygonPoints = Field(description="Outline as [[x, y], ...] (m).")
    description: str = Field(default="", description="Why it is forbidden (shown to cabins).")

    @property
    def shape(self) -> Polygon:
        return Polygon(self.polygon)


class SpeedZone(_Model):
    """A constraint: within the polygon the robot must not exceed ``max_speed``."""

    id: Id = Field(description="Unique zone id (shared with forbidden zones): zone:<id>.")
    polygon: PolygonPoints = Field(description="Outline as [[x, y], ...] (m).")
    max_speed: Num = Field(gt=0, description="Speed limit inside the zone (m/s).")

    @property
    def shape(self) -> Polygon:
        return Polygon(self.polygon)


class MovingObstacle(_Model):
    """A person or forklift walking a closed loop of waypoints, yielding to the robot."""

    id: Id = Field(description="Unique obstacle id; its map feature is obstacle:<id>.")
    kind: Literal["person", "forklift"] = Field(description="What it is.")
    radius: Num = Field(gt=0, description="Radius of its footprint (m).")
    speed: Num = Field(gt=0, description="Walking speed (m/s).")
    waypoints: tuple[XY, ...] = Field(
        min_length=2,
        description="Loop [[x, y], ...] (m); it starts at the first and returns to it.",
    )
    patience: Num = Field(
        default=4.0,
        gt=0,
        description="Seconds it waits for the robot before turning back along its loop.",
    )

    @model_validator(mode="after")
    def _check_loop(self) -> MovingObstacle:
        problems = _Problems()
        loop = (*self.waypoints, self.waypoints[0])
        for i, (a, b) in enumerate(itertools.pairwise(loop)):
            if a == b:
                j = (i + 1) % len(self.waypoints)
                problems.add(("waypoints", j), list(b), f"repeats waypoint {i} ({_xy(a)})")
        problems.raise_if_any(type(self).__name__)
        return self

    @property
    def loop(self) -> LineString:
        return LineString((*self.waypoints, self.waypoints[0]))


class Pose(_Model):
    """A planar pose."""

    x: Num = Field(description="x (m).")
    y: Num = Field(description="y (m).")
    theta: Num = Field(default=0.0, description="Heading (rad, counter-clockwise from +x).")


class Robot(_Model):
    """The differential-drive robot: a disc with speed, turn and battery limits."""

    radius: Num = Field(gt=0, description="Radius of the robot's disc (m).")
    max_speed: Num = Field(gt=0, description="Largest forward or reverse speed (m/s).")
    max_turn_rate: Num = Field(gt=0, description="Largest turn rate (rad/s).")
    max_accel: Num = Field(gt=0, description="Largest change of speed (m/s²).")
    start: Pose = Field(description="Where the robot starts.")
    battery_wh: Num = Field(gt=0, description="Battery capacity (Wh).")
    start_battery: Fraction = Field(default=1.0, gt=0, description="Charge at start (fraction).")
    drain_wh_per_m: Num = Field(ge=0, description="Battery drain per metre driven (Wh/m).")
    drain_wh_per_s: Num = Field(ge=0, description="Battery drain per second, moving or not (Wh/s).")
    charge_wh_per_s: Num = Field(gt=0, description="Charge gained per second at a charger (Wh/s).")
    low_battery: Fraction = Field(
        default=0.25, gt=0, lt=1, description="Charge fraction below which it should recharge."
    )


class Task(_Model):
    """A delivery: carry a load from one dock to another, once released."""

    id: Id = Field(description="Unique task id; its goal is goal:deliver:<id>.")
    pickup: Id = Field(description="Dock id to pick the load up at.")
    drop: Id = Field(description="Dock id to drop the load at.")
    release: Num = Field(default=0.0, ge=0, description="Time (s) the dispatcher posts it.")


class Failures(_Model):
    """How often things go wrong."""

    pick_fail_p: Fraction = Field(default=0.0, description="Probability a valid pick fails.")
    drop_fail_p: Fraction = Field(default=0.0, description="Probability a valid drop fails.")
    sensor_dropout_p: Fraction = Field(
        default=0.0, lt=1, description="Probability the pose reading is skipped on a tick."
    )


class Sensors(_Model):
    """Sensor noise and the time-to-live of each reading."""

    pose_noise: Num = Field(default=0.02, ge=0, description="Pose x/y noise std (m).")
    heading_noise: Num = Field(default=0.01, ge=0, description="Pose heading noise std (rad).")
    pose_ttl: Num = Field(default=0.25, gt=0, description="Time-to-live of pose (s).")
    velocity_ttl: Num = Field(default=0.25, gt=0, description="Time-to-live of velocity (s).")
    battery_ttl: Num = Field(default=1.0, gt=0, description="Time-to-live of battery (s).")
    obstacle_range: Num = Field(default=6.0, gt=0, description="Moving obstacles seen within (m).")
    obstacle_ttl: Num = Field(
        default=0.5, gt=0, description="How long an obstacle sighting holds (s); in its props."
    )
    scanner_range: Num = Field(
        default=4.0, gt=0, description="The safety scanner sees people and vehicles within (m)."
    )
    scanner_ttl: Num = Field(
        default=0.25, gt=0, description="Time-to-live of the safety scanner's reading (s)."
    )


class Acceptance(_Model):
    """When a pick, drop or charge is allowed to happen."""

    dock_tolerance: Num = Field(
        default=0.3, gt=0, description="Largest distance (m) from the dock or charger."
    )
    max_speed: Num = Field(
        default=0.05, ge=0, description="Largest speed (m/s) while picking, dropping or charging."
    )


class Scenario(_Model):
    """One warehouse run: the world, the robot, the work and the odds."""

    name: str = Field(min_length=1, description="Short name of the scenario.")
    description: str = Field(default="", description="One line on what it exercises.")
    duration: Num = Field(gt=0, le=MAX_DURATION, description="Length of the run (s).")
    rate_hz: Num = Field(
        default=20.0, ge=MIN_RATE_HZ, le=MAX_RATE_HZ, description="Tick rate (Hz)."
    )
    floor: Floor = Field(description="The floor rectangle.")
    shelves: tuple[Shelf, ...] = Field(default=(), description="Static obstacles.")
    docks: tuple[Dock, ...] = Field(default=(), description="Pick-up and drop points.")
    chargers: tuple[Charger, ...] = Field(default=(), description="Charging points.")
    forbidden_zones: tuple[ForbiddenZone, ...] = Field(
        default=(), description="Safety constraints: never enter."
    )
    speed_zones: tuple[SpeedZone, ...] = Field(default=(), description="Speed-limit constraints.")
    moving_obstacles: tuple[MovingObstacle, ...] = Field(
        default=(), description="People and forklifts on loops."
    )
    robot: Robot = Field(description="The robot.")
    tasks: tuple[Task, ...] = Field(default=(), description="Deliveries, with release times.")
    failures: Failures = Field(default_factory=Failures, description="Failure rates.")
    sensors: Sensors = Field(default_factory=Sensors, description="Sensor noise and ttls.")
    acceptance: Acceptance = Field(
        default_factory=Acceptance, description="Action acceptance predicate."
    )
    allow_unreachable: bool = Field(
        default=False,
        description="Accept docks and chargers the robot cannot reach from its start; "
        "tasks that need one are not posted and count as undeliverable.",
    )

    _unreachable: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _check_consistency(self) -> Scenario:
        problems = _Problems()
        self._check_ids(problems)
        self._check_polygons(problems)
        for i, dock in enumerate(self.docks):
            self._check_standing(problems, ("docks", i), dock.x, dock.y, dock.id)
        for i, charger in enumerate(self.chargers):
            self._check_standing(problems, ("chargers", i), charger.x, charger.y, charger.id)
        start = self.robot.start
        self._check_standing(problems, ("robot", "start"), start.x, start.y, None)
        self._check_obstacles(problems)
        self._check_tasks(problems)
        problems.raise_if_any(type(self).__name__)
        self._check_reachable(problems)
        problems.raise_if_any(type(self).__name__)
        return self

    @property
    def unreachable(self) -> tuple[str, ...]:
        """Features the robot cannot reach from its start (``dock:<id>``, ``charger:<id>``);
        empty unless ``allow_unreachable`` let the scenario load with some."""
        return self._unreachable

    @property
    def undeliverable(self) -> tuple[str, ...]:
        """Ids of the tasks whose pick-up or drop dock cannot be reached."""
        gone = set(self._unreachable)
        return tuple(t.id for t in self.tasks if {f"dock:{t.pickup}", f"dock:{t.drop}"} & gone)

    def _check_reachable(self, problems: _Problems) -> None:
        from sim.world.reach import Place, describe_unreachable, narrowest_gap, unreachable

        places = [Place("dock", d.id, d.x, d.y) for d in self.docks]
        places += [Place("charger", c.id, c.x, c.y) for c in self.chargers]
        solids = [s.shape for s in self.shelves]
        forbidden = [z.shape for z in self.forbidden_zones]
        start = (self.robot.start.x, self.robot.start.y)
        bounds = self.floor.bounds
        lost = unreachable(bounds, solids, forbidden, self.robot.radius, start, places)
        self._unreachable = tuple(f"{p.kind}:{p.id}" for p in lost)
        if self.allow_unreachable:
            return
        named = [(f"shelf {s.id!r}", s.shape) for s in self.shelves]
        named += [(f"forbidden zone {z.id!r}", z.shape) for z in self.forbidden_zones]
        for place in lost:
            here = Point(place.x, place.y)
            standing = min(
                ((what, float(shape.distance(here))) for what, shape in named),
                key=lambda wd: wd[1],
                default=None,
            )
            gap = narrowest_gap(bounds, solids, forbidden, start, (place.x, place.y))
            field = "docks" if place.kind == "dock" else "chargers"
            index = [p.id for p in places if p.kind == place.kind].index(place.id)
            problems.add(
                (field, index),
                None,
                describe_unreachable(place, gap, self.robot.radius, standing=standing),
            )

    def dock(self, dock_id: str) -> Dock:
        """The dock with id ``dock_id`` (KeyError if none)."""
        for dock in self.docks:
            if dock.id == dock_id:
                return dock
        raise KeyError(f"scenario {self.name!r} has no dock {dock_id!r}")

    def _check_ids(self, problems: _Problems) -> None:
        groups: list[tuple[tuple[str, ...], str]] = [
            (("shelves",), "shelf"),
            (("docks",), "dock"),
            (("chargers",), "charger"),
            (("forbidden_zones", "speed_zones"), "zone"),
            (("moving_obstacles",), "obstacle"),
            (("tasks",), "task"),
        ]
        for fields, what in groups:
            seen: dict[str, str] = {}
            for field in fields:
                for i, item in enumerate(getattr(self, field)):
                    here = f"{field}[{i}]"
                    if item.id in seen:
                        problems.add(
                            (field, i, "id"),
                            item.id,
                            f"duplicate {what} id {item.id!r} (also at {seen[item.id]})",
                        )
                    seen.setdefault(item.id, here)

    def _check_polygons(self, problems: _Problems) -> None:
        floor = self.floor.shape
        for field in ("shelves", "forbidden_zones", "speed_zones"):
            for i, item in enumerate(getattr(self, field)):
                if floor.covers(item.shape):
                    continue
                outside = next(p for p in item.polygon if not floor.covers(Point(p)))
                problems.add(
                    (field, i, "polygon"),
                    None,
                    f"{item.id!r} is not inside the floor {_box(self.floor.bounds)}: "
                    f"point ({_xy(outside)}) is outside",
                )

    def _check_standing(
        self, problems: _Problems, loc: tuple[str | int, ...], x: float, y: float, name: str | None
    ) -> None:
        """The robot's disc must fit at (x, y): on the floor, off shelves and forbidden zones."""
        r = self.robot.radius
        what = f"{name!r}: " if name is not None else ""
        robot = f"the robot (radius {r:g} m) at ({_xy((x, y))})"
        minx, miny, maxx, maxy = self.floor.bounds
        if not (minx + r <= x <= maxx - r and miny + r <= y <= maxy - r):
            problems.add(
                loc, None, f"{what}{robot} would not be inside the floor {_box(self.floor.bounds)}"
            )
            return
        here = Point(x, y)
        for kind, items in (("shelf", self.shelves), ("forbidden zone", self.forbidden_zones)):
            for item in items:
                gap = item.shape.distance(here)
                if gap == 0:
                    problems.add(loc, None, f"{what}({_xy((x, y))}) is inside {kind} {item.id!r}")
                elif gap <= r:
                    problems.add(
                        loc,
                        None,
                        f"{what}{robot} would overlap {kind} {item.id!r} ({gap:.2f} m from it)",
                    )

    def _check_obstacles(self, problems: _Problems) -> None:
        minx, miny, maxx, maxy = self.floor.bounds
        start = Point(self.robot.start.x, self.robot.start.y)
        for i, obstacle in enumerate(self.moving_obstacles):
            r = obstacle.radius
            for j, (x, y) in enumerate(obstacle.waypoints):
                if not (minx + r <= x <= maxx - r and miny + r <= y <= maxy - r):
                    problems.add(
                        ("moving_obstacles", i, "waypoints", j),
                        [x, y],
                        f"{obstacle.id!r} (radius {r:g} m) would not be inside the "
                        f"floor {_box(self.floor.bounds)}",
                    )
            loop = obstacle.loop
            for shelf in self.shelves:
                if loop.distance(shelf.shape) <= r:
                    problems.add(
                        ("moving_obstacles", i, "waypoints"),
                        None,
                        f"the loop of {obstacle.id!r} (radius {r:g} m) runs into "
                        f"shelf {shelf.id!r}",
                    )
            clearance = self.robot.radius + r + YIELD_MARGIN
            first = Point(obstacle.waypoints[0])
            if first.distance(start) < clearance:
                problems.add(
                    ("moving_obstacles", i, "waypoints", 0),
                    list(obstacle.waypoints[0]),
                    f"{obstacle.id!r} starts {first.distance(start):.2f} m from the "
                    f"robot's start; it needs at least {clearance:.2f} m",
                )

    def _check_tasks(self, problems: _Problems) -> None:
        docks = [dock.id for dock in self.docks]
        for i, task in enumerate(self.tasks):
            for field in ("pickup", "drop"):
                ref = getattr(task, field)
                if ref not in docks:
                    problems.add(
                        ("tasks", i, field),
                        ref,
                        f"task {task.id!r}: no dock {ref!r}{did_you_mean(ref, docks)}; "
                        f"docks are {', '.join(docks) or '(none)'}",
                    )
            if task.pickup == task.drop:
                problems.add(
                    ("tasks", i, "drop"),
                    task.drop,
                    f"task {task.id!r} picks up and drops at the same dock",
                )
            if task.release > self.duration:
                problems.add(
                    ("tasks", i, "release"),
                    task.release,
                    f"task {task.id!r} is released after the run ends "
                    f"(duration {self.duration:g} s)",
                )


class ScenarioError(FileError):
    """A scenario that cannot be loaded; one ``file: key.path: problem`` per line."""


def scenario_path(name_or_path: str | os.PathLike[str]) -> Path:
    """Where ``name_or_path`` is: a shipped scenario by bare name, else the path itself."""
    if _is_bare_name(name_or_path):
        return SCENARIOS_DIR / f"{os.fspath(name_or_path)}.toml"
    return Path(os.fspath(name_or_path))


def load_scenario(name_or_path: str | os.PathLike[str]) -> Scenario:
    """Read and validate a scenario: a shipped one by name (``warehouse``) or a TOML path."""
    path = scenario_path(name_or_path)
    if _is_bare_name(name_or_path) and not path.is_file():
        name = os.fspath(name_or_path)
        names = [shipped for shipped, _ in _shipped_paths()]
        raise ScenarioError(
            name,
            (
                f"no shipped scenario of that name{did_you_mean(name, names)}; "
                f"shipped: {', '.join(names)} (or give a path to a .toml file)",
            ),
        )
    shown = _shown(path) if _is_bare_name(name_or_path) else os.fspath(name_or_path)
    data = read_toml(path, error=ScenarioError, shown=shown)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(shown, _describe_all(exc.errors())) from exc


def list_scenarios() -> list[tuple[str, str]]:
    """The shipped scenarios as (name, description), by name."""
    return [(name, load_scenario(path).description) for name, path in _shipped_paths()]


def _shipped_paths() -> list[tuple[str, Path]]:
    return sorted((p.stem, p) for p in SCENARIOS_DIR.glob("*.toml"))


def _is_bare_name(name_or_path: str | os.PathLike[str]) -> bool:
    if not isinstance(name_or_path, str):
        return False
    return not ("/" in name_or_path or os.sep in name_or_path or name_or_path.endswith(".toml"))


def _shown(path: Path) -> str:
    """A path as a user would type it: relative to the working directory when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except (ValueError, OSError):
        return str(path)


class _Problems:
    """Cross-field problems, raised together as one pydantic ValidationError."""

    def __init__(self) -> None:
        self._errors: list[InitErrorDetails] = []

    def add(self, loc: tuple[str | int, ...], value: Any, message: str) -> None:
        # Braces would be read as PydanticCustomError template fields.
        text = message.replace("{", "{{").replace("}", "}}")
        self._errors.append(
            InitErrorDetails(type=PydanticCustomError("scenario", text), loc=loc, input=value)
        )

    def raise_if_any(self, title: str) -> None:
        if self._errors:
            raise ValidationError.from_exception_data(title, self._errors)


def _xy(point: Iterable[float]) -> str:
    return ", ".join(f"{v:g}" for v in point)


def _box(bounds: tuple[float, float, float, float]) -> str:
    return f"({_xy(bounds[:2])}) to ({_xy(bounds[2:])})"


def _fields_at(loc: Sequence[str | int]) -> list[str]:
    """The keys the scenario model allows at ``loc`` (empty when it is not a table)."""
    target: Any = Scenario
    for part in loc:
        if isinstance(part, int):
            args = get_args(target) if get_origin(target) is tuple else ()
            target = args[0] if args else None
        elif isinstance(target, type) and issubclass(target, BaseModel):
            field = target.model_fields.get(part)
            target = field.annotation if field is not None else None
        else:
            return []
    if isinstance(target, type) and issubclass(target, BaseModel):
        return list(target.model_fields)
    return []


def _describe_all(errors: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per error, leaving out errors on a value that holds a more precise one."""
    locs = [tuple(error["loc"]) for error in errors]
    return [
        _describe(error)
        for error, loc in zip(errors, locs, strict=True)
        if not any(len(other) > len(loc) and other[: len(loc)] == loc for other in locs)
    ]


def _describe(error: Mapping[str, Any]) -> str:
    loc = tuple(error["loc"])
    where = key_path(loc)
    kind = error["type"]
    if kind == "extra_forbidden":
        name = str(loc[-1])
        return f"{where}: unknown key{did_you_mean(name, _fields_at(loc[:-1]))}"
    if kind == "missing":
        if isinstance(loc[-1], int):
            return f"{where}: too few values (a point is [x, y])"
        return f"{where}: missing required key"
    message = str(error["msg"]).removeprefix("Value error, ")
    value = error.get("input")
    if (
        kind != "scenario"
        and isinstance(value, (str, int, float, bool))
        and repr(value) not in message
    ):
        message += f" (got {_short(value)})"
    return f"{where}: {message}" if where else message


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
