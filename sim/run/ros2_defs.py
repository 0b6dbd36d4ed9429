"""The ROS 2 message definitions and QoS profiles a ROS 2 recording declares.

A ROS 2 MCAP file carries, for each message type, a schema of encoding ``ros2msg``: the
type's ``.msg`` text followed by the text of every type it uses, each after a line of
80 ``=`` and a ``MSG: package/Type`` line (depth first, each type once). The texts below
are the standard definitions of ROS 2 Humble (constants included); Jazzy adds only the
constant ``Marker.ARROW_STRIP``, so the wire format is the same on both.

A topic's QoS goes in its channel's ``offered_qos_profiles`` (rosbag2 metadata format 9,
as Jazzy writes it): ``ros2 bag play`` offers what was recorded, so a latched topic
(``LATCHED``: transient local, the last message kept) reaches a subscriber that comes late.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

TF_MESSAGE = "tf2_msgs/msg/TFMessage"
ODOMETRY = "nav_msgs/msg/Odometry"
LASER_SCAN = "sensor_msgs/msg/LaserScan"
OCCUPANCY_GRID = "nav_msgs/msg/OccupancyGrid"
MARKER_ARRAY = "visualization_msgs/msg/MarkerArray"

_TEXT: dict[str, str] = {
    "builtin_interfaces/Time": "int32 sec\nuint32 nanosec",
    "builtin_interfaces/Duration": "int32 sec\nuint32 nanosec",
    "std_msgs/Header": "builtin_interfaces/Time stamp\nstring frame_id",
    "std_msgs/ColorRGBA": "float32 r\nfloat32 g\nfloat32 b\nfloat32 a",
    "geometry_msgs/Vector3": "float64 x\nfloat64 y\nfloat64 z",
    "geometry_msgs/Point": "float64 x\nfloat64 y\nfloat64 z",
    "geometry_msgs/Quaternion": "float64 x\nfloat64 y\nfloat64 z\nfloat64 w",
    "geometry_msgs/Pose": "geometry_msgs/Point position\ngeometry_msgs/Quaternion orientation",
    "geometry_msgs/Transform": (
        "geometry_msgs/Vector3 translation\ngeometry_msgs/Quaternion rotation"
    ),
    "geometry_msgs/TransformStamped": (
        "std_msgs/Header header\nstring child_frame_id\ngeometry_msgs/Transform transform"
    ),
    "geometry_msgs/Twist": "geometry_msgs/Vector3 linear\ngeometry_msgs/Vector3 angular",
    "geometry_msgs/PoseWithCovariance": "geometry_msgs/Pose pose\nfloat64[36] covariance",
    "geometry_msgs/TwistWithCovariance": "geometry_msgs/Twist twist\nfloat64[36] covariance",
    "tf2_msgs/TFMessage": "geometry_msgs/TransformStamped[] transforms",
    "nav_msgs/Odometry": (
        "std_msgs/Header header\nstring child_frame_id\n"
        "geometry_msgs/PoseWithCovariance pose\ngeometry_msgs/TwistWithCovariance twist"
    ),
    "nav_msgs/MapMetaData": (
        "builtin_interfaces/Time map_load_time\nfloat32 resolution\nuint32 width\n"
        "uint32 height\ngeometry_msgs/Pose origin"
    ),
    "nav_msgs/OccupancyGrid": "std_msgs/Header header\nnav_msgs/MapMetaData info\nint8[] data",
    "sensor_msgs/LaserScan": (
        "std_msgs/Header header\nfloat32 angle_min\nfloat32 angle_max\n"
        "float32 angle_increment\nfloat32 time_increment\nfloat32 scan_time\n"
        "float32 range_min\nfloat32 range_max\nfloat32[] ranges\nfloat32[] intensities"
    ),
    "sensor_msgs/CompressedImage": "std_msgs/Header header\nstring format\nuint8[] data",
    "visualization_msgs/UVCoordinate": "float32 u\nfloat32 v",
    "visualization_msgs/MeshFile": "string filename\nuint8[] data",
    "visualization_msgs/Marker": (
        "int32 ARROW=0\nint32 CUBE=1\nint32 SPHERE=2\nint32 CYLINDER=3\nint32 LINE_STRIP=4\n"
        "int32 LINE_LIST=5\nint32 CUBE_LIST=6\nint32 SPHERE_LIST=7\nint32 POINTS=8\n"
        "int32 TEXT_VIEW_FACING=9\nint32 MESH_RESOURCE=10\nint32 TRIANGLE_LIST=11\n"
        "int32 ADD=0\nint32 MODIFY=0\nint32 DELETE=2\nint32 DELETEALL=3\n"
        "std_msgs/Header header\nstring ns\nint32 id\nint32 type\nint32 action\n"
        "geometry_msgs/Pose pose\ngeometry_msgs/Vector3 scale\nstd_msgs/ColorRGBA color\n"
        "builtin_interfaces/Duration lifetime\nbool frame_locked\n"
        "geometry_msgs/Point[] points\nstd_msgs/ColorRGBA[] colors\n"
        "string texture_resource\nsensor_msgs/CompressedImage texture\n"
        "visualization_msgs/UVCoordinate[] uv_coordinates\nstring text\n"
        "string mesh_resource\nvisualization_msgs/MeshFile mesh_file\n"
        "bool mesh_use_embedded_materials"
    ),
    "visualization_msgs/MarkerArray": "visualization_msgs/Marker[] markers",
}

_SEPARATOR = "=" * 80


def _short(name: str) -> str:
    """``pkg/msg/Type`` as ``pkg/Type`` (how definitions name the types they use)."""
    package, _, rest = name.partition("/")
    return f"{package}/{rest.rpartition('/')[2]}"


def _used(name: str) -> Iterator[str]:
    """The types the definition of ``name`` uses, in field order."""
    for line in _TEXT[name].splitlines():
        kind = line.split()[0].partition("[")[0]
        if "/" in kind and "=" not in line:
            yield kind


def schema_text(name: str) -> str:
    """The ``ros2msg`` schema of message type ``name`` (``pkg/msg/Type``): its definition,
    then each type it uses, depth first, once."""
    top = _short(name)
    seen = {top}
    parts = [_TEXT[top]]

    def visit(current: str) -> None:
        for used in _used(current):
            if used not in seen:
                seen.add(used)
                parts.append(f"{_SEPARATOR}\nMSG: {used}\n{_TEXT[used]}")
                visit(used)

    visit(top)
    return "\n".join(parts) + "\n"


MARKER_TYPES = {
    "CUBE": 1,
    "CYLINDER": 3,
    "LINE_STRIP": 4,
    "TEXT_VIEW_FACING": 9,
    "TRIANGLE_LIST": 11,
}
"""The ``visualization_msgs/Marker`` shapes a recording uses, by their constant."""


_INFINITE = {"sec": 9223372036, "nsec": 854775807}
"""rosbag2's "infinite" duration (a deadline, lifespan or lease that never ends)."""


def qos(*, durability: str, depth: int) -> dict[str, Any]:
    """A reliable keep-last QoS profile in rosbag2 metadata format 9."""
    return {
        "history": "keep_last",
        "depth": depth,
        "reliability": "reliable",
        "durability": durability,
        "deadline": dict(_INFINITE),
        "lifespan": dict(_INFINITE),
        "liveliness": "automatic",
        "liveliness_lease_duration": dict(_INFINITE),
        "avoid_ros_namespace_conventions": False,
    }


def qos_yaml(profile: dict[str, Any]) -> str:
    """A channel's ``offered_qos_profiles``: the one-profile list as rosbag2 writes it."""
    lines: list[str] = []
    for key, value in profile.items():
        if isinstance(value, dict):
            lines.append(f"{key}:")
            lines.extend(f"  {k}: {v}" for k, v in value.items())
        else:
            lines.append(f"{key}: {str(value).lower() if isinstance(value, bool) else value}")
    return "- " + "\n  ".join(lines)


STREAMED = qos(durability="volatile", depth=10)
"""The QoS of a topic published every tick: reliable, volatile."""
LATCHED = qos(durability="transient_local", depth=1)
"""The QoS of a topic published once (``/tf_static``, ``/map``): a late subscriber gets it."""
