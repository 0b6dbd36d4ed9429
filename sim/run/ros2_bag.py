"""A run recorded for ROS 2 tools: a rosbag2 MCAP file of standard ROS 2 messages.

``sim run --ros2 FILE.mcap`` writes, beside the tickwork recording (``--record``), a file
that ``ros2 bag info``/``play`` (storage ``mcap``), RViz through ``play`` and Foxglove open
as a ROS 2 bag: MCAP profile ``ros2``, every schema ``ros2msg``, every message CDR (encoded
by ``mcap-ros2-support``, the ``ros2`` extra), each channel's ``offered_qos_profiles``, and
the ``rosbag2`` metadata record rosbag2 writes (format version 9, as Jazzy). It is a file
of its own because a ROS 2 bag holds CDR only: ``ros2 bag play`` refuses a bag whose topics
differ in serialization format, and ROS 2 readers a schema that is not ROS 2 (tickwork's
channels are JSON).

Topics, each message stamped (header and log time) by ``ros_time`` at the tick's time:

=================== ================================ =========================================
``/tf_static``      ``tf2_msgs/msg/TFMessage``        once, latched: map → odom (identity)
``/tf``             ``tf2_msgs/msg/TFMessage``        per tick: odom → base_link
``/odom``           ``nav_msgs/msg/Odometry``         per tick: pose and velocity
``/scan``           ``sensor_msgs/msg/LaserScan``     per tick: the safety scanner
``/map``            ``nav_msgs/msg/OccupancyGrid``    once, latched: the floor
``/markers/layout`` ``visualization_msgs/msg/MarkerArray`` once, latched: the floor's things
``/markers/movers`` ``visualization_msgs/msg/MarkerArray`` per tick: people and forklifts
=================== ================================ =========================================

Each tick is recorded as the robot sensed it, right after the world's sensing: ``odom →
base_link``, ``/odom`` and the scanner's origin are the board's ``pose`` and ``velocity``
(with the sensor's noise), the scan the board's ``safety:scanner``; the movers are the
world's truth at that instant. The robot's localisation is taken as perfect, so ``odom``
is ``map`` (a real robot's odometry drifts and a localiser publishes the correction as
map → odom). A tick whose board has no readable pose records no ``/tf``, ``/odom`` or
``/scan``; one with no scanner reading no ``/scan``.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from cabins.warehouse.values import POSE, VELOCITY, Pose, Velocity
from runtime.errors import SettingError
from runtime.files import fsync_folder
from sim.run.ros2_defs import (
    LASER_SCAN,
    LATCHED,
    MARKER_ARRAY,
    OCCUPANCY_GRID,
    ODOMETRY,
    STREAMED,
    TF_MESSAGE,
    qos_yaml,
    schema_text,
)
from sim.run.ros2_map import (
    BASE_FRAME,
    MAP_FRAME,
    ODOM_FRAME,
    layout_markers,
    mover_markers,
    occupancy_grid,
)
from sim.run.ros2_scan import laser_scan
from sim.run.sweep import BoardValues, ScanReading, ScanSweep
from sim.world.scenario import Scenario
from sim.world.world import World

TOPICS: dict[str, tuple[str, dict[str, Any]]] = {
    "/tf_static": (TF_MESSAGE, LATCHED),
    "/tf": (TF_MESSAGE, STREAMED),
    "/odom": (ODOMETRY, STREAMED),
    "/scan": (LASER_SCAN, STREAMED),
    "/map": (OCCUPANCY_GRID, LATCHED),
    "/markers/layout": (MARKER_ARRAY, LATCHED),
    "/markers/movers": (MARKER_ARRAY, STREAMED),
}
"""Every topic of a ROS 2 recording: its message type and offered QoS, in channel order."""

ROSBAG2_VERSION = 9
ROS_DISTRO = "jazzy"


def ros_time(start_ns: int, sim_seconds: float) -> int:
    """The ROS time (nanoseconds since the Unix epoch) of run time ``sim_seconds`` in a run
    that started at wall-clock ``start_ns``: every stamp of a ROS 2 recording."""
    return start_ns + max(0, round(sim_seconds * 1e9))


def stamp(ns: int) -> dict[str, int]:
    """A ``builtin_interfaces/Time``."""
    return {"sec": ns // 1_000_000_000, "nanosec": ns % 1_000_000_000}


def _transform(parent: str, child: str, at: dict[str, int], pose: Pose) -> dict[str, Any]:
    half = pose.theta / 2
    return {
        "header": {"stamp": at, "frame_id": parent},
        "child_frame_id": child,
        "transform": {
            "translation": {"x": pose.x, "y": pose.y, "z": 0.0},
            "rotation": {"x": 0.0, "y": 0.0, "z": math.sin(half), "w": math.cos(half)},
        },
    }


class Ros2Recorder:
    """Writes one run's ROS 2 topics to ``output``; call ``record`` once a tick, after the
    world sensed, and ``close`` at the end (the file appears, complete, only then)."""

    def __init__(
        self,
        output: str | Path,
        scenario: Scenario,
        *,
        rate_hz: float,
        start_ns: int | None = None,
        sweep: ScanSweep | None = None,
        resolution: float = 0.1,
        run_id: str = "",
    ) -> None:
        """``start_ns``: the run's wall-clock start (default: now)."""
        try:
            from mcap.writer import CompressionType, Writer
            from mcap_ros2._dynamic import serialize_dynamic
        except ImportError:
            raise SettingError(
                "a ROS 2 recording needs the MCAP ROS 2 support library: pip install -e '.[ros2]'"
            ) from None
        if not resolution > 0:
            raise SettingError(f"the map resolution must be positive metres, got {resolution!r}")
        self.scenario = scenario
        self.period = 1.0 / rate_hz
        self.start_ns = time.time_ns() if start_ns is None else start_ns
        self.sweep = sweep or ScanSweep()
        self.resolution = resolution
        self.run_id = run_id
        self.path = Path(output)
        folder = self.path.parent
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=folder)
        self._tmp = Path(tmp)
        self._stream = os.fdopen(fd, "wb")
        self._writer = Writer(self._stream, compression=CompressionType.ZSTD, enable_data_crcs=True)
        self._writer.start(profile="ros2", library="tickwork ros2 recorder")
        self._channels: dict[str, int] = {}
        self._encoders: dict[str, Any] = {}
        schemas: dict[str, int] = {}
        for topic, (kind, qos) in TOPICS.items():
            if kind not in schemas:
                text = schema_text(kind)
                schemas[kind] = self._writer.register_schema(kind, "ros2msg", text.encode())
                self._encoders[kind] = serialize_dynamic(kind, text)[kind]
            self._channels[topic] = self._writer.register_channel(
                topic, "cdr", schemas[kind], {"offered_qos_profiles": qos_yaml(qos)}
            )
        self.counts = dict.fromkeys(TOPICS, 0)
        self._first: int | None = None
        self._last = 0
        self.closed = False

    def _put(self, topic: str, message: Any, ns: int, tick: int) -> None:
        data = self._encoders[TOPICS[topic][0]](message)
        self._writer.add_message(self._channels[topic], ns, data, ns, tick)
        self.counts[topic] += 1
        self._first = ns if self._first is None else min(self._first, ns)
        self._last = max(self._last, ns)

    def record(self, tick: int, now: float, board: BoardValues, world: World) -> None:
        """Record tick ``tick`` at run time ``now``: the static topics with the first."""
        if self.closed:
            return
        ns = ros_time(self.start_ns, now)
        at = stamp(ns)
        if self._first is None:
            self._static(tick, ns, at)
        pose = Pose.read(board.value(POSE))
        if pose is not None:
            self._put(
                "/tf", {"transforms": [_transform(ODOM_FRAME, BASE_FRAME, at, pose)]}, ns, tick
            )
            self._put(
                "/odom", self._odometry(at, pose, Velocity.read(board.value(VELOCITY))), ns, tick
            )
            reading = ScanReading.read(board)  # the Foxglove profile's /scan reads it too
            if reading is not None:
                header = {"stamp": at, "frame_id": BASE_FRAME}
                self._put(
                    "/scan",
                    laser_scan(self.sweep, reading, header=header, period=self.period),
                    ns,
                    tick,
                )
        header = {"stamp": at, "frame_id": MAP_FRAME}
        self._put(
            "/markers/movers",
            mover_markers(self.scenario, world.state.obstacles, header=header),
            ns,
            tick,
        )

    def _static(self, tick: int, ns: int, at: dict[str, int]) -> None:
        identity = Pose(0.0, 0.0, 0.0)
        self._put(
            "/tf_static",
            {"transforms": [_transform(MAP_FRAME, ODOM_FRAME, at, identity)]},
            ns,
            tick,
        )
        header = {"stamp": at, "frame_id": MAP_FRAME}
        self._put(
            "/map",
            occupancy_grid(self.scenario, resolution=self.resolution, header=header, load_time=at),
            ns,
            tick,
        )
        robot = {"stamp": at, "frame_id": BASE_FRAME}
        self._put(
            "/markers/layout", layout_markers(self.scenario, header=header, robot=robot), ns, tick
        )

    def _odometry(self, at: dict[str, int], pose: Pose, velocity: Velocity | None) -> Any:
        noise = self.scenario.sensors
        covariance = [0.0] * 36
        covariance[0] = covariance[7] = noise.pose_noise**2
        covariance[35] = noise.heading_noise**2
        moving = velocity or Velocity(0.0, 0.0)
        placed = _transform(ODOM_FRAME, BASE_FRAME, at, pose)["transform"]
        return {
            "header": {"stamp": at, "frame_id": ODOM_FRAME},
            "child_frame_id": BASE_FRAME,
            "pose": {
                "pose": {"position": placed["translation"], "orientation": placed["rotation"]},
                "covariance": covariance,
            },
            "twist": {
                "twist": {
                    "linear": {"x": moving.v, "y": 0.0, "z": 0.0},
                    "angular": {"x": 0.0, "y": 0.0, "z": moving.w},
                },
                "covariance": [0.0] * 36,
            },
        }

    def bag_metadata(self) -> dict[str, Any]:
        """What rosbag2 stores about the bag (its ``BagMetadata``, format version 9)."""
        start = self._first or self.start_ns
        duration = max(0, self._last - start)
        total = sum(self.counts.values())
        return {
            "version": ROSBAG2_VERSION,
            "storage_identifier": "mcap",
            "relative_file_paths": [self.path.name],
            "duration": {"nanoseconds": duration},
            "starting_time": {"nanoseconds_since_epoch": start},
            "message_count": total,
            "topics_with_message_count": [
                {
                    "topic_metadata": {
                        "name": topic,
                        "type": kind,
                        "serialization_format": "cdr",
                        "offered_qos_profiles": [qos],
                        "type_description_hash": "",
                    },
                    "message_count": self.counts[topic],
                }
                for topic, (kind, qos) in TOPICS.items()
            ],
            "compression_format": "",
            "compression_mode": "",
            "files": [
                {
                    "path": self.path.name,
                    "starting_time": {"nanoseconds_since_epoch": start},
                    "duration": {"nanoseconds": duration},
                    "message_count": total,
                }
            ],
            "custom_data": {
                "tickwork_run_id": self.run_id,
                "tickwork_start_ns": str(self.start_ns),
            },
            "ros_distro": ROS_DISTRO,
        }

    def close(self) -> None:
        """Write the ``rosbag2`` metadata, finish the file and put it in place (a temporary
        file until then). Safe to call twice."""
        if self.closed:
            return
        self.closed = True
        try:
            self._writer.add_metadata(
                "rosbag2",
                {
                    "serialized_metadata": json.dumps(self.bag_metadata()),
                    "ROS_DISTRO": ROS_DISTRO,
                },
            )
            self._writer.finish()  # type: ignore[no-untyped-call]
            self._stream.flush()
            os.fsync(self._stream.fileno())
            self._stream.close()
            os.chmod(self._tmp, 0o644)
            os.replace(self._tmp, self.path)
        except BaseException:
            self.discard()
            raise
        fsync_folder(self.path.parent)

    def discard(self) -> None:
        """Write nothing: drop the temporary file (a run that could not start)."""
        self.closed = True
        self._stream.close()
        self._tmp.unlink(missing_ok=True)
