"""The warehouse world: the simulated ground truth that cabins sense and act on.

``World`` holds everything that changes during a run (the robot, the people and
forklifts, the tasks, the statistics) in plain picklable dataclasses, draws every
random number from the one ``numpy.random.Generator`` it is given, and exposes the
three moments of a tick:

- ``install`` puts the static map features and constraint items on the board and
  the map, once;
- ``sense`` writes the sensor readings, the outcome of last tick's actions, the
  moving obstacles in range (on the map, and on the board as the safety scanner's
  ``safety:scanner``, a channel that map faults do not touch) and the dispatcher's goals;
- ``apply`` carries out the cabins' commands for one period: it integrates the
  unicycle robot, walks the moving obstacles and checks collisions, forbidden
  zones and speed limits with shapely.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeAlias

import numpy as np
import shapely
from shapely.geometry import Point

from cabins.warehouse.energy import BatteryFigures
from cabins.warehouse.shapes import point, polygon
from cabins.warehouse.values import (
    ACCEPTANCE,
    ACTION_LAST,
    BATTERY,
    BATTERY_LOW,
    CARGO,
    CHARGERS,
    DOCKS,
    POSE,
    ROBOT_LIMITS,
    ROBOT_RADIUS,
    SCANNER,
    VELOCITY,
    WORLD_BOUNDS,
    Acceptance,
    ActionOutcome,
    DeliverGoal,
    Pose,
    RobotLimits,
    Scan,
    Velocity,
    Zone,
    deliver_goal_key,
)
from runtime.cabin import Command
from runtime.cabin_map import Feature
from runtime.errors import SettingError
from sim.world.scenario import YIELD_MARGIN, MovingObstacle, Scenario, Task

__all__ = [
    "BatteryLow",
    "BoardSink",
    "CommandLike",
    "Contact",
    "Incident",
    "MapSink",
    "ObstacleState",
    "RobotState",
    "Stats",
    "TaskState",
    "World",
    "WorldState",
]


class BoardSink(Protocol):
    """What the world writes the board through (a ``StateBoard``, or a gate in front of one)."""

    def write(self, key: str, value: Any, *, ttl: float | None = None, source: str = "") -> Any: ...

    def delete(self, key: str, *, source: str = "") -> bool: ...


class MapSink(Protocol):
    """What the world writes the map through (a ``CabinMap``, or a gate in front of one)."""

    def add(self, feature: Feature, *, replace: bool = False) -> None: ...

    def discard(self, feature_id: str) -> Feature | None: ...


CommandLike: TypeAlias = Command | tuple[str, str, Mapping[str, Any]]
"""A ``runtime.cabin.Command`` or a ``(cabin, name, args)`` triple."""

WORLD = "world"
DISPATCHER = "dispatcher"
SQUEEZE_MARGIN = 0.01
"""Metres a person keeps from the robot's disc when squeezing past it after a stand-off."""
_EPS = 1e-9


@dataclass
class RobotState:
    """The true pose, velocity, battery and cargo of the robot."""

    x: float
    y: float
    theta: float
    battery_wh: float
    v: float = 0.0
    w: float = 0.0
    distance: float = 0.0
    cargo: str | None = None


@dataclass
class ObstacleState:
    """Where a moving obstacle is on its loop and how it moved last tick."""

    id: str
    x: float
    y: float
    target: int
    vx: float = 0.0
    vy: float = 0.0
    yielding: bool = False
    waited: float = 0.0
    direction: int = 1
    standoff: float = 0.0  # s spent yielding since it last moved, turn-backs included


@dataclass
class TaskState:
    """The life of one delivery: posted, picked, delivered."""

    id: str
    goal_posted: bool = False
    goal_removed: bool = False
    picked_at: float | None = None
    delivered_at: float | None = None


@dataclass(frozen=True)
class Incident:
    """Something worth telling about a run: a collision, a zone entry, a failure."""

    time: float
    kind: str
    detail: str


@dataclass(frozen=True)
class Contact:
    """One collision: what the robot's disc touched, where the robot was, how it moved."""

    time: float
    hit: str  # shelf:<id>, obstacle:<id> or wall
    x: float
    y: float
    speed: float
    heading: float
    turn_rate: float


@dataclass
class Stats:
    """Counters of a run. Violations count entries; ``*_ticks`` count ticks spent in them."""

    collisions: int = 0
    collision_ticks: int = 0
    safety_violations: int = 0
    safety_violation_ticks: int = 0
    speed_violations: int = 0
    speed_violation_ticks: int = 0
    picks_failed: int = 0
    drops_failed: int = 0
    actions_refused: int = 0
    commands_rejected: int = 0
    pose_dropouts: int = 0
    battery_depleted: bool = False
    depleted_ticks: int = 0


@dataclass
class BatteryLow:
    """The lowest the battery fell in a run (a fraction of its capacity), when it first got
    there, and when it first ran empty (None: it never did).

    A record of where the run has been, kept by the world beside its state (and saved with
    it in a checkpoint), not part of the state: ``World.state_digest`` leaves it out, so that
    the state digests of the fixed runs (``benchmarks.digests``) stay comparable with those
    made before it was kept. It is a function of the states the run went through.
    """

    level: float
    at: float = 0.0
    empty_at: float | None = None

    def update(self, level: float, now: float) -> None:
        """Take the battery's ``level`` at time ``now``."""
        if level < self.level:
            self.level, self.at = level, now
        if level <= 0.0 and self.empty_at is None:
            self.empty_at = now


@dataclass
class WorldState:
    """All mutable world state: what a checkpoint must hold besides the rng (and the
    ``BatteryLow`` record the world keeps beside it)."""

    robot: RobotState
    obstacles: list[ObstacleState]
    tasks: list[TaskState]
    time: float = 0.0
    ticks: int = 0
    stats: Stats = field(default_factory=Stats)
    contacts: list[str] = field(default_factory=list)
    zones_entered: list[str] = field(default_factory=list)
    speeding: bool = False
    charging: str | None = None
    obstacles_on_map: list[str] = field(default_factory=list)
    pending: list[ActionOutcome] = field(default_factory=list)
    action_seq: int = 0
    incidents: list[Incident] = field(default_factory=list)
    collision_log: list[Contact] = field(default_factory=list)


class _Shapes:
    """Named static shapes, prepared, with their bounding boxes.

    A world has a handful of shelves and zones; a test against each box in Python rules
    out the shapes a point is far from, so shapely is asked only about the near ones
    (with the same answer as asking about all of them)."""

    def __init__(self, named: Iterable[tuple[str, Any]]) -> None:
        pairs = list(named)
        self.ids = [name for name, _ in pairs]
        self.shapes = [shape for _, shape in pairs]
        if self.shapes:
            shapely.prepare(np.array(self.shapes, dtype=object))
        self.boxes = [tuple(float(b) for b in shape.bounds) for shape in self.shapes]

    def near(self, x: float, y: float, distance: float) -> list[int]:
        """Indices of the shapes within ``distance`` of (x, y)."""
        reach = distance + _BOX_SLACK  # a box farther than this: its shape is farther too
        found: list[int] = []
        here: Point | None = None
        for i, (minx, miny, maxx, maxy) in enumerate(self.boxes):
            if x < minx - reach or x > maxx + reach or y < miny - reach or y > maxy + reach:
                continue
            if here is None:
                here = point(x, y)
            if self.shapes[i].dwithin(here, distance):
                found.append(i)
        return found

    def containing(self, x: float, y: float) -> list[int]:
        """Indices of the shapes (x, y) is in or on."""
        return [
            i
            for i, (minx, miny, maxx, maxy) in enumerate(self.boxes)
            if minx <= x <= maxx
            and miny <= y <= maxy
            and bool(shapely.intersects_xy(self.shapes[i], x, y))
        ]


_BOX_SLACK = 1e-6  # m: rounding in a box test must never rule out a shape that is near


class _Geometry:
    """The static world, prepared once for fast per-tick queries: its shapely shapes, and
    the tasks that are never posted."""

    def __init__(self, scenario: Scenario) -> None:
        self.shelves = _Shapes((s.id, s.shape) for s in scenario.shelves)
        self.forbidden = _Shapes((z.id, z.shape) for z in scenario.forbidden_zones)
        self.speed = _Shapes((z.id, z.shape) for z in scenario.speed_zones)
        self.speed_limits = [float(z.max_speed) for z in scenario.speed_zones]
        self.undeliverable = frozenset(scenario.undeliverable)
        # each moving obstacle's footprint around the origin, moved onto it each tick
        self.radii = [float(o.radius) for o in scenario.moving_obstacles]
        self.footprints = [shapely.get_coordinates(point(0.0, 0.0).buffer(r)) for r in self.radii]

    def footprint(self, index: int, x: float, y: float) -> Any:
        """Moving obstacle ``index``'s disc at (x, y): ``Point(x, y).buffer(radius)``, the
        same vertices (GEOS adds the centre to each offset as this does), without
        buffering again; on an axis GEOS keeps the sign of a zero, so it buffers there."""
        if x == 0.0 or y == 0.0:
            radius = self.radii[index]
            return point(x, y).buffer(radius)
        return polygon(self.footprints[index] + (x, y))

    def near(self, shapes: _Shapes, x: float, y: float, distance: float) -> list[str]:
        """Ids of the ``shapes`` within ``distance`` of (x, y)."""
        return [shapes.ids[i] for i in shapes.near(x, y, distance)]

    def speed_limit(self, x: float, y: float) -> float | None:
        """The lowest speed limit of the zones containing (x, y), or None outside them."""
        inside = self.speed.containing(x, y)
        return min(self.speed_limits[i] for i in inside) if inside else None


class World:
    """The simulated warehouse of one scenario; stepped by ``sense`` and ``apply``."""

    def __init__(self, scenario: Scenario, *, rng: np.random.Generator) -> None:
        self.scenario = scenario
        self.rng = rng
        robot = scenario.robot
        self.state = WorldState(
            robot=RobotState(
                x=robot.start.x,
                y=robot.start.y,
                theta=_wrap(robot.start.theta),
                battery_wh=robot.start_battery * robot.battery_wh,
            ),
            obstacles=[
                ObstacleState(id=o.id, x=o.waypoints[0][0], y=o.waypoints[0][1], target=1)
                for o in scenario.moving_obstacles
            ],
            tasks=[TaskState(id=t.id) for t in scenario.tasks],
        )
        self.battery_low = BatteryLow(level=robot.start_battery)
        self._geo = _Geometry(scenario)

    _derived = ("_geo",)
    """Built from the scenario: a checkpoint holds none of it."""
    _state_types: ClassVar[dict[str, Any]] = {"state": WorldState, "battery_low": BatteryLow}

    def check_state(self) -> None:
        """After a checkpoint gave the world its state: every number finite, and the
        scenario's obstacles and tasks, in order."""
        from runtime.snapshot import StateError, finite_numbers

        state = self.state
        finite_numbers(state, "world.state")
        finite_numbers(self.battery_low, "world.battery_low")
        if [o.id for o in state.obstacles] != [o.id for o in self.scenario.moving_obstacles]:
            raise StateError("world.state.obstacles: not the scenario's moving obstacles")
        if [t.id for t in state.tasks] != [t.id for t in self.scenario.tasks]:
            raise StateError("world.state.tasks: not the scenario's tasks")
        if not isinstance(state.robot, RobotState) or not isinstance(state.stats, Stats):
            raise StateError("world.state: not a robot's state and statistics")

    @property
    def time(self) -> float:
        """Simulated time (s) the world state is at."""
        return self.state.time

    @property
    def all_delivered(self) -> bool:
        """Every task that can be delivered is (an undeliverable one is never posted)."""
        skip = self._geo.undeliverable
        return all(t.delivered_at is not None or t.id in skip for t in self.state.tasks)

    @property
    def incidents(self) -> tuple[Incident, ...]:
        return tuple(self.state.incidents)

    @property
    def collisions(self) -> tuple[Contact, ...]:
        """Every collision so far, oldest first."""
        return tuple(self.state.collision_log)

    # -- install --------------------------------------------------------------

    def install(self, board: BoardSink, cabin_map: MapSink) -> None:
        """Put the static world on the map and the board: shelves, docks, zones, bounds."""
        sc = self.scenario
        static = frozenset({"static"})
        for shelf in sc.shelves:
            cabin_map.add(
                Feature(f"shelf:{shelf.id}", shelf.shape, "shelf", static, {"id": shelf.id})
            )
        for dock in sc.docks:
            cabin_map.add(
                Feature(f"dock:{dock.id}", Point(dock.x, dock.y), "dock", static, {"id": dock.id})
            )
        for charger in sc.chargers:
            cabin_map.add(
                Feature(
                    f"charger:{charger.id}",
                    Point(charger.x, charger.y),
                    "charger",
                    static,
                    {"id": charger.id},
                )
            )
        for zone in sc.forbidden_zones:
            cabin_map.add(
                Feature(
                    f"zone:{zone.id}",
                    zone.shape,
                    "forbidden",
                    frozenset({"safety"}),
                    {"id": zone.id, "description": zone.description},
                )
            )
            forbidden = Zone.of(zone.id, zone.polygon, description=zone.description)
            board.write(forbidden.key, forbidden.as_value(), source=DISPATCHER)
        for speed in sc.speed_zones:
            cabin_map.add(
                Feature(
                    f"zone:{speed.id}",
                    speed.shape,
                    "speed_zone",
                    frozenset({"constraint"}),
                    {"id": speed.id, "max_speed": speed.max_speed},
                )
            )
            limited = Zone.of(speed.id, speed.polygon, max_speed=speed.max_speed)
            board.write(limited.key, limited.as_value(), source=DISPATCHER)
        robot = sc.robot
        limits = RobotLimits(robot.radius, robot.max_speed, robot.max_turn_rate, robot.max_accel)
        acceptance = Acceptance(sc.acceptance.dock_tolerance, sc.acceptance.max_speed)
        board.write(WORLD_BOUNDS, sc.floor.bounds, source=WORLD)
        board.write(ROBOT_RADIUS, robot.radius, source=WORLD)
        figures = BatteryFigures(
            robot.battery_wh, robot.drain_wh_per_m, robot.drain_wh_per_s, robot.charge_wh_per_s
        )
        board.write(ROBOT_LIMITS, {**limits.as_value(), **figures.as_value()}, source=WORLD)
        board.write(ACCEPTANCE, acceptance.as_value(), source=WORLD)
        board.write(BATTERY_LOW, robot.low_battery, source=WORLD)
        board.write(DOCKS, {d.id: (d.x, d.y) for d in sc.docks}, source=DISPATCHER)
        board.write(CHARGERS, {c.id: (c.x, c.y) for c in sc.chargers}, source=DISPATCHER)

    # -- sense ----------------------------------------------------------------

    def sense(self, board: BoardSink, cabin_map: MapSink, now: float) -> None:
        """Write this tick's readings, action outcomes, obstacle sightings and goals."""
        st, sc = self.state, self.scenario
        robot, sensors = st.robot, sc.sensors
        for outcome in st.pending:
            board.write(ACTION_LAST, outcome.as_value(), source=WORLD)
        st.pending = []
        dropout = sc.failures.sensor_dropout_p > 0 and self.rng.random() < (
            sc.failures.sensor_dropout_p
        )
        if dropout:
            st.stats.pose_dropouts += 1
        else:
            nx, ny, nt = self.rng.normal(0.0, 1.0, size=3).tolist()  # the same floats
            pose = Pose(
                robot.x + nx * sensors.pose_noise,
                robot.y + ny * sensors.pose_noise,
                _wrap(robot.theta + nt * sensors.heading_noise),
            )
            board.write(POSE, pose.as_value(), ttl=sensors.pose_ttl, source=WORLD)
        velocity = Velocity(robot.v, robot.w)
        board.write(VELOCITY, velocity.as_value(), ttl=sensors.velocity_ttl, source=WORLD)
        board.write(
            BATTERY, robot.battery_wh / sc.robot.battery_wh, ttl=sensors.battery_ttl, source=WORLD
        )
        board.write(CARGO, robot.cargo, source=WORLD)
        self._sense_obstacles(cabin_map, now)
        self._scan(board)
        self._dispatch(board, now)

    def _scan(self, board: BoardSink) -> None:
        """The safety scanner: the true discs of the moving obstacles within its range, on
        the board, whatever the map shows."""
        st, sc = self.state, self.scenario
        reach = sc.sensors.scanner_range
        near: list[tuple[float, tuple[float, float, float]]] = []
        for spec, ob in zip(sc.moving_obstacles, st.obstacles, strict=True):
            gap = math.hypot(ob.x - st.robot.x, ob.y - st.robot.y) - spec.radius
            if gap <= reach:
                near.append((gap, (ob.x, ob.y, float(spec.radius))))
        near.sort(key=lambda item: item[0])
        scan = Scan(reach, tuple(disc for _, disc in near))
        board.write(SCANNER, scan.as_value(), ttl=sc.sensors.scanner_ttl, source=WORLD)

    def _sense_obstacles(self, cabin_map: MapSink, now: float) -> None:
        st, sensors = self.state, self.scenario.sensors
        seen: list[str] = []
        for index, (spec, ob) in enumerate(
            zip(self.scenario.moving_obstacles, st.obstacles, strict=True)
        ):
            feature_id = f"obstacle:{ob.id}"
            if math.hypot(ob.x - st.robot.x, ob.y - st.robot.y) > sensors.obstacle_range:
                if feature_id in st.obstacles_on_map:
                    cabin_map.discard(feature_id)
                continue
            seen.append(feature_id)
            cabin_map.add(
                Feature(
                    feature_id,
                    self._geo.footprint(index, ob.x, ob.y),
                    "obstacle",
                    frozenset({"moving", spec.kind}),
                    {
                        "id": ob.id,
                        "kind": spec.kind,
                        "radius": spec.radius,
                        "vx": ob.vx,
                        "vy": ob.vy,
                        "stamp": now,
                        "ttl": sensors.obstacle_ttl,
                    },
                ),
                replace=True,
            )
        st.obstacles_on_map = seen

    def _dispatch(self, board: BoardSink, now: float) -> None:
        undeliverable = self._geo.undeliverable
        for task, ts in zip(self.scenario.tasks, self.state.tasks, strict=True):
            if task.id in undeliverable:
                continue  # its dock cannot be reached: never posted (allow_unreachable)
            key = deliver_goal_key(task.id)
            if ts.delivered_at is not None:
                if ts.goal_posted and not ts.goal_removed:
                    board.delete(key, source=DISPATCHER)
                    ts.goal_removed = True
            elif not ts.goal_posted and now + _EPS >= task.release:
                pickup, drop = self.scenario.dock(task.pickup), self.scenario.dock(task.drop)
                goal = DeliverGoal(
                    task=task.id,
                    pickup=task.pickup,
                    drop=task.drop,
                    pickup_xy=(pickup.x, pickup.y),
                    drop_xy=(drop.x, drop.y),
                    released=task.release,
                )
                board.write(key, goal.as_value(), source=DISPATCHER)
                ts.goal_posted = True

    # -- apply ----------------------------------------------------------------

    def apply(self, commands: Iterable[CommandLike], now: float, dt: float) -> None:
        """Carry out the commands of the tick at ``now`` and advance the world by ``dt``.

        Actions are judged on the state the cabins saw (before this tick's motion).
        ``stop`` overrides any ``drive``; with no drive the robot brakes to a halt;
        ``slow(v=...)`` caps the speed a ``drive`` asks for (the lowest cap wins).
        """
        if not (math.isfinite(dt) and dt > 0):
            raise SettingError(f"dt must be a positive number of seconds, got {dt!r}")
        st = self.state
        drive: tuple[float, float] | None = None
        stop = False
        cap = math.inf
        st.charging = None
        for command in commands:
            parsed = self._parse(command, now)
            if parsed is None:
                continue
            name, args = parsed
            if name == "drive":
                drive = (float(args["v"]), float(args["w"]))
            elif name == "stop":
                stop = True
            elif name == "slow":
                cap = min(cap, float(args["v"]))
            else:
                self._act(name, args, now, dt)
        if drive is not None and cap < math.inf:
            drive = (max(-cap, min(cap, drive[0])), drive[1])
        self._move(drive, stop, dt)
        self._walk_obstacles(dt)
        self._check(now + dt)
        st.time = now + dt
        st.ticks += 1

    def _parse(self, command: CommandLike, now: float) -> tuple[str, Mapping[str, Any]] | None:
        args: object
        if isinstance(command, Command):
            cabin, name, args = command.cabin, command.name, command.args
        else:
            try:
                cabin, name, args = command
            except (TypeError, ValueError):
                self._reject(now, f"not a (cabin, name, args) command: {command!r}")
                return None
        if not isinstance(args, Mapping):
            self._reject(now, f"{cabin}: {name!r} args must be a mapping, got {args!r}")
            return None
        if name == "drive":
            for arg in ("v", "w"):
                value = args.get(arg)
                if not _is_number(value):
                    self._reject(
                        now, f"{cabin}: drive {arg} must be a finite number, got {value!r}"
                    )
                    return None
        elif name == "slow":
            value = args.get("v")
            if not _is_number(value) or float(value or 0.0) < 0:
                self._reject(now, f"{cabin}: slow v must be a finite number >= 0, got {value!r}")
                return None
        elif name not in ("stop", "pick", "drop", "charge"):
            self._reject(
                now,
                f"{cabin}: unknown command {name!r} (known: drive, stop, slow, pick, drop, charge)",
            )
            return None
        return name, args

    def _reject(self, now: float, detail: str) -> None:
        self.state.stats.commands_rejected += 1
        self.state.incidents.append(Incident(now, "command_rejected", detail))

    def _act(self, name: str, args: Mapping[str, Any], now: float, dt: float) -> None:
        if name == "charge":
            charger = args.get("charger")
            reason = self._charge_refusal(charger)
            if reason == "ok":
                self.state.charging = str(charger)
            charger_id = charger if isinstance(charger, str) else None
            self._outcome("charge", None, reason, now, charger=charger_id)
            return
        task = args.get("task")
        reason = self._pick_refusal(task) if name == "pick" else self._drop_refusal(task)
        task_id = task if isinstance(task, str) else None
        if reason != "ok":
            self._outcome(name, task_id, reason, now)
            return
        assert task_id is not None
        stats, failures = self.state.stats, self.scenario.failures
        fail_p = failures.pick_fail_p if name == "pick" else failures.drop_fail_p
        if self.rng.random() < fail_p:
            if name == "pick":
                stats.picks_failed += 1
            else:
                stats.drops_failed += 1
            self.state.incidents.append(Incident(now, f"{name}_failed", task_id))
            self._outcome(name, task_id, "failed", now)
            return
        ts = self._task_state(task_id)
        if name == "pick":
            self.state.robot.cargo = task_id
            ts.picked_at = now
        else:
            self.state.robot.cargo = None
            ts.delivered_at = now
            self.state.incidents.append(Incident(now, "delivered", task_id))
        self._outcome(name, task_id, "ok", now)

    def _outcome(
        self, action: str, task: str | None, reason: str, now: float, *, charger: str | None = None
    ) -> None:
        st = self.state
        st.action_seq += 1
        if reason not in ("ok", "failed"):
            st.stats.actions_refused += 1
        st.pending.append(
            ActionOutcome(st.action_seq, action, task, reason == "ok", reason, now, charger)
        )

    def _task_state(self, task_id: str) -> TaskState:
        return next(ts for ts in self.state.tasks if ts.id == task_id)

    def _task(self, task: object) -> tuple[Task | None, str]:
        """The scenario's task named ``task``, or None and why a command cannot name it."""
        if not isinstance(task, str):
            return None, "bad_command"
        found = next((t for t in self.scenario.tasks if t.id == task), None)
        return found, "ok" if found is not None else "unknown_task"

    def _pick_refusal(self, task: object) -> str:
        """Why a pick of ``task`` cannot happen now, or "ok"."""
        robot = self.state.robot
        spec, refusal = self._task(task)
        if spec is None:
            return refusal
        ts = self._task_state(spec.id)
        if not ts.goal_posted:
            return "not_released"
        if ts.delivered_at is not None:
            return "already_delivered"
        if robot.cargo is not None:
            return "already_carrying" if robot.cargo == task else "has_cargo"
        return self._placement(self.scenario.dock(spec.pickup), "not_at_dock")

    def _drop_refusal(self, task: object) -> str:
        """Why a drop of ``task`` cannot happen now, or "ok"."""
        robot = self.state.robot
        spec, refusal = self._task(task)
        if spec is None:
            return refusal
        if robot.cargo is None:
            return "no_cargo"
        if robot.cargo != task:
            return "wrong_cargo"
        return self._placement(self.scenario.dock(spec.drop), "not_at_dock")

    def _charge_refusal(self, charger: object) -> str:
        if not isinstance(charger, str):
            return "bad_command"
        found = [c for c in self.scenario.chargers if c.id == charger]
        if not found:
            return "unknown_charger"
        return self._placement(found[0], "not_at_charger")

    def _placement(self, spot: Any, far_reason: str) -> str:
        """The acceptance predicate: near enough to ``spot`` and nearly stopped."""
        robot, acceptance = self.state.robot, self.scenario.acceptance
        if math.hypot(robot.x - spot.x, robot.y - spot.y) > acceptance.dock_tolerance:
            return far_reason
        if abs(robot.v) > acceptance.max_speed:
            return "moving"
        return "ok"

    def _move(self, drive: tuple[float, float] | None, stop: bool, dt: float) -> None:
        robot, spec, st = self.state.robot, self.scenario.robot, self.state
        if stop:
            v = w = 0.0
        elif robot.battery_wh <= 0:
            v = w = 0.0
            if drive is not None and drive != (0.0, 0.0):
                st.stats.depleted_ticks += 1
        else:
            target_v, target_w = drive if drive is not None else (0.0, 0.0)
            target_v = _clamp(target_v, spec.max_speed)
            w = _clamp(target_w, spec.max_turn_rate)
            v = robot.v + _clamp(target_v - robot.v, spec.max_accel * dt)
        theta = robot.theta
        if abs(w) < _EPS:
            robot.x += v * dt * math.cos(theta)
            robot.y += v * dt * math.sin(theta)
        else:
            robot.x += v / w * (math.sin(theta + w * dt) - math.sin(theta))
            robot.y -= v / w * (math.cos(theta + w * dt) - math.cos(theta))
        robot.theta = _wrap(theta + w * dt)
        robot.v, robot.w = v, w
        travelled = abs(v) * dt
        robot.distance += travelled
        drain = spec.drain_wh_per_m * travelled + spec.drain_wh_per_s * dt
        gain = spec.charge_wh_per_s * dt if st.charging is not None else 0.0
        before = robot.battery_wh
        robot.battery_wh = min(spec.battery_wh, max(0.0, before - drain + gain))
        self.battery_low.update(robot.battery_wh / spec.battery_wh, st.time + dt)
        if before > 0 and robot.battery_wh <= 0:
            st.stats.battery_depleted = True
            st.incidents.append(Incident(st.time + dt, "battery_depleted", "battery at 0"))

    def _walk_obstacles(self, dt: float) -> None:
        robot = self.state.robot
        for spec, ob in zip(self.scenario.moving_obstacles, self.state.obstacles, strict=True):
            x, y, target = _walk(spec, ob.x, ob.y, ob.target, spec.speed * dt, ob.direction)
            # Kept waiting even after turning back (the robot stands where its loop goes
            # on either way): it squeezes past, keeping SQUEEZE_MARGIN from the robot.
            margin = SQUEEZE_MARGIN if ob.standoff >= 2 * spec.patience else YIELD_MARGIN
            clearance = self.scenario.robot.radius + spec.radius + margin
            gap_next = math.hypot(x - robot.x, y - robot.y)
            if gap_next < clearance and gap_next < math.hypot(ob.x - robot.x, ob.y - robot.y):
                ob.vx = ob.vy = 0.0
                ob.yielding = True
                ob.waited += dt
                ob.standoff += dt
                if ob.waited >= spec.patience:  # a stand-off: turn back the way it came
                    ob.target = (ob.target - ob.direction) % len(spec.waypoints)
                    ob.direction = -ob.direction
                    ob.waited = 0.0
                continue
            ob.vx, ob.vy = (x - ob.x) / dt, (y - ob.y) / dt
            ob.x, ob.y, ob.target = x, y, target
            ob.yielding = False
            ob.waited = 0.0
            if gap_next >= self.scenario.robot.radius + spec.radius + YIELD_MARGIN:
                ob.standoff = 0.0  # clear of the robot: a stand-off is over

    def _check(self, at: float) -> None:
        st, sc, geo = self.state, self.scenario, self._geo
        robot, r = st.robot, sc.robot.radius
        contacts = {f"shelf:{i}" for i in geo.near(geo.shelves, robot.x, robot.y, r)}
        for spec, ob in zip(sc.moving_obstacles, st.obstacles, strict=True):
            if math.hypot(ob.x - robot.x, ob.y - robot.y) < r + spec.radius:
                contacts.add(f"obstacle:{ob.id}")
        minx, miny, maxx, maxy = sc.floor.bounds
        if not (minx + r <= robot.x <= maxx - r and miny + r <= robot.y <= maxy - r):
            contacts.add("wall")
        for new in sorted(contacts.difference(st.contacts)):
            st.stats.collisions += 1
            st.incidents.append(Incident(at, "collision", f"{new} at {_at(robot)}"))
            st.collision_log.append(
                Contact(at, new, robot.x, robot.y, robot.v, robot.theta, robot.w)
            )
        st.stats.collision_ticks += bool(contacts)
        st.contacts = sorted(contacts)

        zones = geo.near(geo.forbidden, robot.x, robot.y, r)
        for new in sorted(set(zones).difference(st.zones_entered)):
            st.stats.safety_violations += 1
            st.incidents.append(Incident(at, "safety_violation", f"zone:{new} at {_at(robot)}"))
        st.stats.safety_violation_ticks += bool(zones)
        st.zones_entered = sorted(zones)

        limit = geo.speed_limit(robot.x, robot.y)
        speeding = limit is not None and abs(robot.v) > limit + _EPS
        if speeding and not st.speeding:
            st.stats.speed_violations += 1
            st.incidents.append(
                Incident(
                    at, "speed_violation", f"{abs(robot.v):.2f} m/s > {limit:g} m/s at {_at(robot)}"
                )
            )
        st.stats.speed_violation_ticks += speeding
        st.speeding = speeding

    # -- results --------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """What happened so far, as plain JSON-able values."""
        st, sc = self.state, self.scenario
        times = {
            task.id: ts.delivered_at - task.release
            for task, ts in zip(sc.tasks, st.tasks, strict=True)
            if ts.delivered_at is not None
        }
        stats = dataclasses.asdict(st.stats)
        skip = self._geo.undeliverable
        low = self.battery_low
        return {
            "scenario": sc.name,
            "time": st.time,
            "ticks": st.ticks,
            "deliveries_done": len(times),
            "deliveries_assigned": sum(ts.goal_posted for ts in st.tasks),
            "tasks_total": len(sc.tasks),
            "tasks_undeliverable": list(sc.undeliverable),
            "tasks_undelivered": [
                ts.id for ts in st.tasks if ts.delivered_at is None and ts.id not in skip
            ],
            "delivery_times": times,
            "mean_delivery_time": sum(times.values()) / len(times) if times else None,
            **stats,
            "battery_end": st.robot.battery_wh / sc.robot.battery_wh,
            "battery_min": low.level,
            "battery_min_at": low.at,
            "battery_empty_at": low.empty_at,
            "distance": st.robot.distance,
        }

    def state_digest(self) -> str:
        """sha256 of a canonical serialisation of the world state and the rng state."""
        payload = {
            "state": dataclasses.asdict(self.state),
            "rng": self.rng.bit_generator.state,
        }
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(text.encode()).hexdigest()


def _walk(
    spec: MovingObstacle, x: float, y: float, target: int, step: float, direction: int = 1
) -> tuple[float, float, int]:
    """Move ``step`` metres along the closed waypoint loop towards waypoint ``target``,
    going round the loop forwards (``direction`` 1) or backwards (-1)."""
    points = spec.waypoints
    while step > 0:
        tx, ty = points[target]
        gap = math.hypot(tx - x, ty - y)
        if gap <= step:
            x, y, step = tx, ty, step - gap
            target = (target + direction) % len(points)
        else:
            x += (tx - x) * step / gap
            y += (ty - y) * step / gap
            step = 0.0
    return x, y, target


def _is_number(value: object) -> bool:
    if type(value) is float:  # the common case, without the ABC check below
        return math.isfinite(value)
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, (bool, np.bool_))
        and math.isfinite(value)
    )


def _clamp(value: float, limit: float) -> float:
    return max(-limit, min(limit, value))


def _wrap(angle: float) -> float:
    """``angle`` in [-pi, pi)."""
    return (angle + math.pi) % (2 * math.pi) - math.pi


def _at(robot: RobotState) -> str:
    return f"({robot.x:.2f}, {robot.y:.2f})"
