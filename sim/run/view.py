"""The run as Foxglove shows it: the warehouse in 3D, the robot's pose, a log, plot series.

A ``FoxgloveView`` turns what happens in a simulation into the messages of the Foxglove
well-known channels of ``runtime.recording.format`` (``/scene``, ``/tf``, ``/robot/pose``,
``/scan``, ``/log``) and tickwork's ``/series``, and hands them to the run's recorder,
which writes them beside tickwork's own channels (and to a live view, if one is attached).

The scene is thinned to changes: the layout (floor, shelves, docks, chargers, zones) is
sent at the start and again every ``layout_every`` seconds of run time (so that a player
that seeks still has it); the robot, the people and forklifts when they moved or turned
more than a little; the route when it changed; a marker where an incident happened.

``/scan`` is the safety scanner, once a tick, as the ROS 2 profile's ``/scan`` shows it:
the board's reading swept from the sensed pose (``sim.run.sweep``, shared by both), in the
``robot`` frame of ``/tf``, its ``pose`` the sweep's origin in that frame (a few cm off:
the sensor's noise, and the tick's motion, as ``/tf`` shows the robot after it moved).
``foxglove.LaserScan`` has no range limits and JSON no infinity, so a beam with no return
(+inf in ROS 2) has range ``scan range + NO_RETURN_MARGIN`` (the ``range_max + 1``
of ``pointcloud_to_laserscan`` without infinities) and intensity 0, a beam that met
someone intensity 1: Foxglove's 3D panel draws every range, and the shipped layout colours
intensity 0 transparent, so only returns show.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np
import shapely
from shapely.geometry import LineString, Point, Polygon

from cabins.warehouse.values import route_points
from runtime.log import Event
from runtime.loop import TickResult
from runtime.recording.format import (
    LINE_TYPES,
    LOG,
    LOG_LEVELS,
    ROBOT_POSE,
    SCAN,
    SCENE,
    SERIES,
    TF,
    Channel,
    ColorRecord,
    LaserScanRecord,
    LogRecord,
    PoseRecord,
    SceneEntityRecord,
    TimeRecord,
    Vector3Record,
)
from runtime.recording.timebase import EPOCH, TimeBase
from runtime.snapshot import JsonValue, StateError
from sim.run.sweep import ScanReading, ScanSweep
from sim.world.scenario import Scenario
from sim.world.world import RobotState, World

WORLD_FRAME = "world"
ROBOT_FRAME = "robot"

ERROR_KINDS = frozenset({"collision", "safety_violation", "emergency_stop"})
WARNING_KINDS = frozenset(
    {"alarm", "fault", "action_failed", "cabin_failed", "fail_safe", "capacity_pressure"}
)
MARKED_KINDS = frozenset({"collision", "safety_violation", "emergency_stop", "alarm", "fault"})
"""The events that leave a marker in the scene where the robot was."""

NO_RETURN_MARGIN = 1.0
"""How far beyond the scanner's reach (m) ``/scan`` puts a beam with no return."""
RETURN, NO_RETURN = 1.0, 0.0
"""``/scan``'s intensity of a beam that met someone, and of one that met no one."""


class Sink(Protocol):
    """Where the view's messages go: the run's recorder."""

    def put(self, channel: Channel[Any], message: Mapping[str, Any], stamp: float) -> None: ...


def _rgba(r: float, g: float, b: float, a: float = 1.0) -> ColorRecord:
    return {"r": r, "g": g, "b": b, "a": a}


FLOOR = _rgba(0.85, 0.85, 0.82)
SHELF = _rgba(0.55, 0.38, 0.2)
DOCK = _rgba(0.2, 0.45, 0.9)
CHARGER = _rgba(0.15, 0.7, 0.3)
FORBIDDEN = _rgba(0.9, 0.1, 0.1, 0.35)
SPEED_ZONE = _rgba(0.95, 0.8, 0.1, 0.3)
PERSON = _rgba(1.0, 0.55, 0.0)
FORKLIFT = _rgba(0.55, 0.2, 0.75)
ROBOT = _rgba(0.1, 0.1, 0.1)
ROUTE_COLOUR = _rgba(0.0, 0.6, 0.9)
MARKER = {"WARNING": _rgba(1.0, 0.7, 0.0, 0.8), "ERROR": _rgba(0.9, 0.0, 0.0, 0.9)}
LABEL = _rgba(0.1, 0.1, 0.1)


def stamp_of(seconds: float, base: TimeBase = EPOCH) -> TimeRecord:
    """Run time ``seconds`` as a Foxglove time: its log time on ``base``'s axis."""
    sec, nsec = base.stamp(seconds)
    return {"sec": sec, "nsec": nsec}


def _v(x: float, y: float, z: float = 0.0) -> Vector3Record:
    return {"x": float(x), "y": float(y), "z": float(z)}


def pose_of(x: float, y: float, z: float = 0.0, theta: float = 0.0) -> PoseRecord:
    half = theta / 2.0
    return {
        "position": _v(x, y, z),
        "orientation": {"x": 0.0, "y": 0.0, "z": math.sin(half), "w": math.cos(half)},
    }


def entity(entity_id: str, stamp: TimeRecord, **primitives: Any) -> SceneEntityRecord:
    """A scene entity in the world frame that lasts until replaced; every list present."""
    record: dict[str, Any] = {
        "timestamp": stamp,
        "frame_id": WORLD_FRAME,
        "id": entity_id,
        "lifetime": {"sec": 0, "nsec": 0},
        "frame_locked": False,
        "metadata": [],
        "arrows": [],
        "cubes": [],
        "spheres": [],
        "cylinders": [],
        "lines": [],
        "triangles": [],
        "texts": [],
        "models": [],
    }
    record.update(primitives)
    return record  # type: ignore[return-value]


def _label(text: str, x: float, y: float, z: float = 0.6, size: float = 0.35) -> dict[str, Any]:
    return {
        "pose": pose_of(x, y, z),
        "billboard": True,
        "font_size": size,
        "scale_invariant": False,
        "color": LABEL,
        "text": text,
    }


def _disc(x: float, y: float, radius: float, height: float, colour: ColorRecord) -> Any:
    return {
        "pose": pose_of(x, y, height / 2.0),
        "size": _v(2 * radius, 2 * radius, height),
        "bottom_scale": 1.0,
        "top_scale": 1.0,
        "color": colour,
    }


def _outline(points: Sequence[tuple[float, float]], colour: ColorRecord, z: float) -> Any:
    return {
        "type": LINE_TYPES["LINE_LOOP"],
        "pose": pose_of(0.0, 0.0),
        "thickness": 0.05,
        "scale_invariant": False,
        "points": [_v(x, y, z) for x, y in points],
        "color": {**colour, "a": 1.0},
        "colors": [],
        "indices": [],
    }


def _fill(polygon: Polygon, colour: ColorRecord, z: float) -> Any:
    """The polygon as flat triangles (constrained Delaunay: concave outlines stay true)."""
    triangles = shapely.constrained_delaunay_triangles(polygon)
    points: list[Vector3Record] = []
    for tri in shapely.get_parts(triangles):
        points.extend(_v(x, y, z) for x, y in list(tri.exterior.coords)[:3])
    return {
        "pose": pose_of(0.0, 0.0),
        "points": points,
        "color": colour,
        "colors": [],
        "indices": [],
    }


def _area(
    entity_id: str,
    stamp: TimeRecord,
    points: Sequence[tuple[float, float]],
    colour: ColorRecord,
    *,
    z: float,
    label: str,
    height: float = 0.0,
) -> SceneEntityRecord:
    polygon = Polygon(points)
    centre = polygon.representative_point()
    return entity(
        entity_id,
        stamp,
        triangles=[_fill(polygon, colour, z + height)],
        lines=[_outline(points, colour, z + height)],
        texts=[_label(label, centre.x, centre.y, z + height + 0.3)],
    )


def layout(scenario: Scenario, stamp: TimeRecord) -> list[SceneEntityRecord]:
    """The static warehouse: floor, shelves, docks, chargers, forbidden and speed zones."""
    f = scenario.floor
    out = [
        entity(
            "floor",
            stamp,
            cubes=[
                {
                    "pose": pose_of((f.min_x + f.max_x) / 2, (f.min_y + f.max_y) / 2, -0.01),
                    "size": _v(f.max_x - f.min_x, f.max_y - f.min_y, 0.02),
                    "color": FLOOR,
                }
            ],
        )
    ]
    for shelf in scenario.shelves:
        out.append(
            _area(
                f"shelf:{shelf.id}",
                stamp,
                shelf.polygon,
                SHELF,
                z=0.0,
                height=1.0,
                label=f"shelf {shelf.id}",
            )
        )
    for zone in scenario.forbidden_zones:
        out.append(
            _area(
                f"zone:{zone.id}",
                stamp,
                zone.polygon,
                FORBIDDEN,
                z=0.01,
                label=f"forbidden {zone.id}",
            )
        )
    for speed in scenario.speed_zones:
        out.append(
            _area(
                f"zone:{speed.id}",
                stamp,
                speed.polygon,
                SPEED_ZONE,
                z=0.01,
                label=f"{speed.id}: max {speed.max_speed:g} m/s",
            )
        )
    for dock in scenario.docks:
        out.append(
            entity(
                f"dock:{dock.id}",
                stamp,
                cylinders=[_disc(dock.x, dock.y, 0.3, 0.05, DOCK)],
                texts=[_label(f"dock {dock.id}", dock.x, dock.y)],
            )
        )
    for charger in scenario.chargers:
        out.append(
            entity(
                f"charger:{charger.id}",
                stamp,
                cylinders=[_disc(charger.x, charger.y, 0.3, 0.05, CHARGER)],
                texts=[_label(f"charger {charger.id}", charger.x, charger.y)],
            )
        )
    return out


def level_of(kind: str) -> str:
    if kind in ERROR_KINDS:
        return "ERROR"
    if kind in WARNING_KINDS:
        return "WARNING"
    return "INFO"


def who(event: Event) -> str:
    """The cabin an event came from (its ``cabin:`` tag or ``cabin`` field), else world."""
    for tag in sorted(event.tags):
        if tag.startswith("cabin:"):
            return tag[len("cabin:") :]
    data = event.data
    if isinstance(data, Mapping) and isinstance(data.get("cabin"), str):
        return str(data["cabin"])
    return "world"


def log_record(event: Event, data_json: Any, stamp: TimeRecord) -> LogRecord:
    text = json.dumps(data_json, separators=(",", ":"), sort_keys=True, default=str)
    return {
        "timestamp": stamp,
        "level": LOG_LEVELS[level_of(event.kind)],
        "message": f"{event.kind} {text}" if text not in ("{}", "null") else event.kind,
        "name": who(event),
        "file": "",
        "line": 0,
    }


def laser_scan(
    sweep: ScanSweep, reading: ScanReading, robot: RobotState, stamp: TimeRecord
) -> LaserScanRecord:
    """``reading`` swept by ``sweep``, in the frame of ``robot`` (the robot's pose as
    ``/tf`` shows it), a beam with no return ``NO_RETURN_MARGIN`` past the reach."""
    ranges = sweep.distances(reading.origin, reading.scan)
    missed = np.isinf(ranges)
    origin = reading.origin
    dx, dy = origin.x - robot.x, origin.y - robot.y
    cos, sin = math.cos(robot.theta), math.sin(robot.theta)
    return {
        "timestamp": stamp,
        "frame_id": ROBOT_FRAME,
        "pose": pose_of(cos * dx + sin * dy, cos * dy - sin * dx, 0.0, origin.theta - robot.theta),
        "start_angle": sweep.first_angle,
        "end_angle": sweep.last_angle,
        "ranges": np.where(missed, reading.scan.range + NO_RETURN_MARGIN, ranges).tolist(),
        "intensities": np.where(missed, NO_RETURN, RETURN).tolist(),
    }


def _line(value: Any, where: str) -> None:
    if value is not None and not (isinstance(value, (LineString, Point)) and value.is_valid):
        raise StateError(f"{where}: not a route line")


class FoxgloveView:
    """Feeds a run's Foxglove channels to ``sink``; call ``on_event`` for every event and
    ``after_tick`` after each tick's recording."""

    def __init__(
        self,
        sink: Sink,
        scenario: Scenario,
        *,
        layout_every: float = 10.0,
        min_move: float = 0.25,
        min_turn: float = 0.25,
        time_base: TimeBase = EPOCH,
        sweep: ScanSweep | None = None,
    ) -> None:
        self.sink: Any = sink  # None until a resumed run is given its recorder
        self.time_base = time_base  # Foxglove timestamps: the run's start + run time
        self.scenario = scenario
        self.layout_every = layout_every
        self.min_move = min_move
        self.min_turn = min_turn
        self.sweep = sweep or ScanSweep()
        self._layout_at: float | None = None
        self._shown: dict[str, tuple[float, float, float]] = {}
        self._route: tuple[tuple[float, float], ...] | None = None
        self._route_line: LineString | None = None
        self._markers: list[SceneEntityRecord] = []
        self._marked = 0
        self._robot_xy = (scenario.robot.start.x, scenario.robot.start.y)
        self.scene_messages = 0

    _derived = ("sink", "time_base", "layout_every", "min_move", "min_turn", "sweep")
    """A checkpoint holds what was shown, not where it went (the recorder of the resumed
    run, whose time base the view takes), nor the view's settings."""
    _state_types: ClassVar[dict[str, Any]] = {
        "_layout_at": float | None,
        "_shown": dict[str, tuple[float, float, float]],
        "_route": tuple[tuple[float, float], ...] | None,
        "_route_line": _line,
        "_markers": list[dict[str, JsonValue]],
        "_marked": int,
        "_robot_xy": tuple[float, float],
        "scene_messages": int,
    }

    def on_event(self, event: Event) -> None:
        from runtime.jsonable import to_json

        stamp = stamp_of(event.stamp, self.time_base)
        self.sink.put(LOG, log_record(event, to_json(event.data), stamp), event.stamp)
        if event.kind in MARKED_KINDS:
            self._marked += 1
            x, y = self._robot_xy
            colour = MARKER["ERROR" if event.kind in ERROR_KINDS else "WARNING"]
            self._markers.append(
                entity(
                    f"marker:{self._marked}",
                    stamp,
                    spheres=[
                        {"pose": pose_of(x, y, 1.2), "size": _v(0.3, 0.3, 0.3), "color": colour}
                    ],
                    texts=[_label(event.kind, x, y, 1.6, 0.3)],
                    metadata=[
                        {"key": "kind", "value": event.kind},
                        {"key": "by", "value": who(event)},
                    ],
                )
            )

    def _cross_track(self, x: float, y: float) -> dict[str, float]:
        """The robot's distance from its route (0 with no route), left out when the
        route's numbers (a cabin's output) give no finite distance."""
        if self._route_line is None:
            return {"cross_track_error": 0.0}
        distance = float(self._route_line.distance(Point(x, y)))
        return {"cross_track_error": distance} if math.isfinite(distance) else {}

    def after_tick(
        self,
        result: TickResult,
        world: World,
        route_value: Any,
        scan: ScanReading | None = None,
    ) -> None:
        """``scan``: the tick's scanner reading (none: no ``/scan`` message this tick)."""
        now = result.time
        robot = world.state.robot
        self._robot_xy = (robot.x, robot.y)
        pose = pose_of(robot.x, robot.y, 0.0, robot.theta)
        stamp = stamp_of(now, self.time_base)
        self.sink.put(
            TF,
            {
                "timestamp": stamp,
                "parent_frame_id": WORLD_FRAME,
                "child_frame_id": ROBOT_FRAME,
                "translation": pose["position"],
                "rotation": pose["orientation"],
            },
            now,
        )
        self.sink.put(ROBOT_POSE, {"timestamp": stamp, "frame_id": WORLD_FRAME, "pose": pose}, now)
        if scan is not None:
            self.sink.put(SCAN, laser_scan(self.sweep, scan, robot, stamp), now)
        entities = self._scene(now, stamp, world, route_value)
        ws = result.working_set
        if entities:
            self.sink.put(SCENE, {"deletions": [], "entities": entities}, now)
            self.scene_messages += 1
        self.sink.put(
            SERIES,
            {
                "tick": result.tick,
                "time": now,
                "battery": robot.battery_wh / self.scenario.robot.battery_wh,
                "speed": abs(robot.v),
                "x": float(robot.x),
                "y": float(robot.y),
                "heading": float(robot.theta),
                **self._cross_track(robot.x, robot.y),
                "working_set": len(ws.items),
                "compute_ms": result.compute_seconds * 1e3,
                "overrun": result.overrun,
                "held": ws.occupancy.held,
                "capacity": ws.occupancy.capacity,
                "pressure": len(ws.pressure),
                "lost": sum(len(keys) for keys in ws.pressure.values()),
                "missing": [
                    {
                        "cabin": view.cabin,
                        "missing": len(view.missing),
                        "evicted": len(view.evicted),
                    }
                    for view in result.views
                ],
            },
            now,
        )

    def _scene(
        self, now: float, stamp: TimeRecord, world: World, route_value: Any
    ) -> list[SceneEntityRecord]:
        out: list[SceneEntityRecord] = []
        if self._layout_at is None or now - self._layout_at >= self.layout_every:
            self._layout_at = now
            out.extend(layout(self.scenario, stamp))
            self._shown.clear()  # send the moving things again with the layout
        robot = world.state.robot
        if self._moved("robot", robot.x, robot.y, robot.theta):
            r = self.scenario.robot.radius
            out.append(
                entity(
                    "robot",
                    stamp,
                    cylinders=[_disc(robot.x, robot.y, r, 0.4, ROBOT)],
                    arrows=[
                        {
                            "pose": pose_of(robot.x, robot.y, 0.45, robot.theta),
                            "shaft_length": r,
                            "shaft_diameter": 0.08,
                            "head_length": 0.25,
                            "head_diameter": 0.2,
                            "color": ROUTE_COLOUR,
                        }
                    ],
                    texts=[
                        _label(
                            "robot" + (f" [{robot.cargo}]" if robot.cargo else ""),
                            robot.x,
                            robot.y,
                            0.9,
                        )
                    ],
                )
            )
        kinds = {o.id: o for o in self.scenario.moving_obstacles}
        for obstacle in world.state.obstacles:
            spec = kinds.get(obstacle.id)
            if spec is None or not self._moved(
                f"obstacle:{obstacle.id}", obstacle.x, obstacle.y, 0.0
            ):
                continue
            colour = PERSON if spec.kind == "person" else FORKLIFT
            height = 1.7 if spec.kind == "person" else 2.0
            out.append(
                entity(
                    f"obstacle:{obstacle.id}",
                    stamp,
                    cylinders=[_disc(obstacle.x, obstacle.y, spec.radius, height, colour)],
                    texts=[
                        _label(f"{spec.kind} {obstacle.id}", obstacle.x, obstacle.y, height + 0.3)
                    ],
                )
            )
        route = route_points(route_value) or ()
        if route != self._route or "route" not in self._shown:
            self._route = route
            self._shown["route"] = (0.0, 0.0, 0.0)
            self._route_line = LineString(route) if len(route) >= 2 else None
            out.append(
                entity(
                    "route",
                    stamp,
                    lines=[
                        {
                            "type": LINE_TYPES["LINE_STRIP"],
                            "pose": pose_of(0.0, 0.0),
                            "thickness": 0.08,
                            "scale_invariant": False,
                            "points": [_v(x, y, 0.05) for x, y in route],
                            "color": ROUTE_COLOUR,
                            "colors": [],
                            "indices": [],
                        }
                    ],
                )
            )
        out.extend(self._markers)
        self._markers = []
        return out

    def _moved(self, key: str, x: float, y: float, theta: float) -> bool:
        last = self._shown.get(key)
        if last is not None and (
            math.hypot(x - last[0], y - last[1]) < self.min_move
            and abs(theta - last[2]) < self.min_turn
        ):
            return False
        self._shown[key] = (x, y, theta)
        return True
