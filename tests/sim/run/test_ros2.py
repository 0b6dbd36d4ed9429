"""The ROS 2 bag of a run (``sim run --ros2``), read back by two ROS 2 readers.

Every message is decoded with ``mcap_ros2``'s decoder (the schemas the file carries) and,
independently, with ``rosbags`` (its own copies of the standard Humble and Jazzy types),
and the file is held to what ``ros2 bag`` needs of an MCAP bag: profile ``ros2``, schemas
``ros2msg`` named ``pkg/msg/Type``, CDR messages, each channel's ``offered_qos_profiles``
and the ``rosbag2`` metadata record, which rosbags' bag reader accepts as ``metadata.yaml``.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from mcap.reader import make_reader
from shapely.geometry import LineString, Point

from cabins.warehouse.values import POSE, SCANNER, Pose, Scan
from sim.run.harness import Simulation
from sim.run.ros2_bag import TOPICS, Ros2Recorder, ros_time
from sim.run.ros2_defs import (
    LASER_SCAN,
    MARKER_ARRAY,
    OCCUPANCY_GRID,
    ODOMETRY,
    TF_MESSAGE,
    schema_text,
)
from sim.run.ros2_map import FORBIDDEN_CELL, FREE, OCCUPIED, grid_shape
from sim.run.sweep import ScanSweep
from sim.world.families import load_world
from sim.world.scenario import Scenario

rosbags = pytest.importorskip("rosbags")
mcap_ros2 = pytest.importorskip("mcap_ros2")

from mcap_ros2.decoder import DecoderFactory  # noqa: E402
from rosbags.rosbag2 import Reader  # noqa: E402
from rosbags.rosbag2.metadata import parse_qos  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402
from ruamel.yaml import YAML  # noqa: E402

START_NS = 1_700_000_000_123_456_789
TYPES = (TF_MESSAGE, ODOMETRY, LASER_SCAN, OCCUPANCY_GRID, MARKER_ARRAY)


class Sensed:
    """Every value the world wrote to the board under ``pose`` and ``safety:scanner``, by
    run time: what the bag's tick at that time must show."""

    def __init__(self) -> None:
        self.writes: dict[str, list[tuple[float, Any]]] = {POSE: [], SCANNER: []}

    def __call__(self, reading: Any, key: str) -> None:
        if reading is not None and key in self.writes:
            self.writes[key].append((reading.stamp, reading.value))

    def at(self, key: str, now: float) -> Any:
        """The value of ``key`` on the board at run time ``now`` (the last write by then)."""
        found = None
        for stamp, value in self.writes[key]:
            if stamp <= now + 1e-9:
                found = value
        return found


def _run(tmp_path: Path, world: str | Scenario, ticks: int, seed: int = 0) -> tuple[Path, Sensed]:
    path = tmp_path / "run.ros2.mcap"
    sim = Simulation(world, seed=seed)
    sensed = Sensed()
    sim.board.add_listener(sensed)
    sim.ros2 = Ros2Recorder(path, sim.scenario, rate_hz=sim.rate_hz, start_ns=START_NS)
    try:
        sim.run(ticks, until_done=False)
    finally:
        sim.close()
    return path, sensed


def _decoded(path: Path) -> Iterator[tuple[str, int, Any]]:
    """(topic, log time, message) of every message, by ``mcap_ros2``'s decoder."""
    with path.open("rb") as fh:
        reader = make_reader(fh, decoder_factories=[DecoderFactory()])
        for _, channel, message, decoded in reader.iter_decoded_messages():
            yield channel.topic, message.log_time, decoded


def _ns(time: Any) -> int:
    return int(time.sec) * 1_000_000_000 + int(time.nanosec)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Sensed]:
    """narrow_aisles: people walk within the scanner's range from the first tick."""
    return _run(tmp_path_factory.mktemp("ros2"), "narrow_aisles", 120, seed=3)


# -- the file ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", TYPES)
def test_schemas_are_the_standard_definitions(kind: str) -> None:
    """rosbags' copy of the ROS 2 Humble interfaces, printed as a concatenated definition."""
    expected, _ = get_typestore(Stores.ROS2_HUMBLE).generate_msgdef(kind, ros_version=2)
    assert schema_text(kind) == expected


def test_the_file_is_an_mcap_bag_as_ros2_bag_reads_it(warehouse: tuple[Path, Sensed]) -> None:
    path, _ = warehouse
    with path.open("rb") as fh:
        reader = make_reader(fh)
        assert reader.get_header().profile == "ros2"
        summary = reader.get_summary()
        assert summary is not None and summary.statistics is not None
        for schema in summary.schemas.values():
            assert schema.encoding == "ros2msg"
            assert schema.name in TYPES
        topics = {c.topic: c for c in summary.channels.values()}
        assert list(topics) == list(TOPICS)
        for topic, channel in topics.items():
            assert channel.message_encoding == "cdr"
            assert summary.schemas[channel.schema_id].name == TOPICS[topic][0]
            (qos,) = parse_qos(channel.metadata["offered_qos_profiles"])
            latched = topic in ("/tf_static", "/map", "/markers/layout")
            assert qos.durability.name == ("TRANSIENT_LOCAL" if latched else "VOLATILE")
        records = list(reader.iter_metadata())
    (record,) = [r for r in records if r.name == "rosbag2"]
    assert record.metadata["ROS_DISTRO"] == "jazzy"
    bag = YAML(typ="safe").load(record.metadata["serialized_metadata"])
    assert bag["version"] == 9 and bag["storage_identifier"] == "mcap"
    assert bag["message_count"] == summary.statistics.message_count
    assert bag["starting_time"]["nanoseconds_since_epoch"] == summary.statistics.message_start_time
    counts = {
        t["topic_metadata"]["name"]: t["message_count"] for t in bag["topics_with_message_count"]
    }
    by_id = summary.statistics.channel_message_counts
    assert counts == {c.topic: by_id.get(i, 0) for i, c in summary.channels.items()}


def test_rosbags_opens_it_as_a_file_and_as_a_bag_folder(
    warehouse: tuple[Path, Sensed], tmp_path: Path
) -> None:
    """A bag folder is the file beside a ``metadata.yaml`` holding its ``rosbag2`` record."""
    path, _ = warehouse
    with path.open("rb") as fh:
        record = next(r for r in make_reader(fh).iter_metadata() if r.name == "rosbag2")
    folder = tmp_path / "bag"
    folder.mkdir()
    (folder / path.name).write_bytes(path.read_bytes())
    yaml = YAML(typ="safe")
    text = StringIO()
    info = yaml.load(record.metadata["serialized_metadata"])
    yaml.dump({"rosbag2_bagfile_information": info}, text)
    (folder / "metadata.yaml").write_text(text.getvalue())
    counts = []
    for where in (path, folder):
        with Reader(where) as reader:
            assert {t: i.msgtype for t, i in reader.topics.items()} == {
                t: kind for t, (kind, _) in TOPICS.items()
            }
            counts.append(sum(1 for _ in reader.messages()))
            if where == folder:
                assert reader.ros_distro == "jazzy"
    assert counts[0] == counts[1] == info["message_count"]


def test_every_message_reads_back_alike_with_both_readers(warehouse: tuple[Path, Sensed]) -> None:
    path, _ = warehouse
    ours = list(_decoded(path))
    store = get_typestore(Stores.ROS2_JAZZY)
    with Reader(path) as reader:
        theirs = [
            (c.topic, t, store.deserialize_cdr(bytes(raw), c.msgtype))
            for c, t, raw in reader.messages()
        ]
    assert len(ours) == len(theirs) > 0
    assert sorted((t, n) for t, n, _ in ours) == sorted((t, n) for t, n, _ in theirs)
    mine = {(t, n): m for t, n, m in ours}
    for topic, log_time, other in theirs:
        message = mine[topic, log_time]
        if topic in ("/tf", "/tf_static"):
            for a, b in zip(message.transforms, other.transforms, strict=True):
                assert _ns(a.header.stamp) == _ns(b.header.stamp) == log_time
                assert a.transform.translation.x == b.transform.translation.x
        elif topic == "/odom":
            assert message.pose.pose.position.y == other.pose.pose.position.y
            assert list(message.pose.covariance) == list(other.pose.covariance)
        elif topic == "/scan":
            assert list(message.ranges) == other.ranges.tolist()
        elif topic == "/map":
            assert list(message.data) == other.data.tolist()
            assert message.info.width == other.info.width
        else:
            assert [m.ns for m in message.markers] == [m.ns for m in other.markers]
            assert [m.type for m in message.markers] == [m.type for m in other.markers]


def test_the_default_recording_is_unchanged(tmp_path: Path) -> None:
    """A run without a ROS 2 bag writes none, and a bag does not change the run."""
    plain = Simulation("warehouse", seed=3)
    try:
        expected = plain.run(60, until_done=False)
    finally:
        plain.close()
    assert plain.ros2 is None
    sim = Simulation("warehouse", seed=3, ros2=tmp_path / "r.mcap")
    try:
        got = sim.run(60, until_done=False)
    finally:
        sim.close()
    for key in ("board_digest", "world_digest", "memory_digest", "log_digest"):
        assert got[key] == expected[key]
    assert (tmp_path / "r.mcap").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["r.mcap"]  # no temporary file left


def test_stamps_are_the_run_start_plus_run_time() -> None:
    assert ros_time(START_NS, 0.0) == START_NS
    assert ros_time(START_NS, 1.25) == START_NS + 1_250_000_000
    assert ros_time(0, 3.0) == 3_000_000_000


# -- what the messages say -----------------------------------------------------------------


def _check_tick_by_tick(path: Path, sensed: Sensed, scenario: Scenario, rate_hz: float) -> None:
    """The tf tree, odometry, scan and movers of every tick against the board."""
    sweep = ScanSweep()
    by_topic: dict[str, list[tuple[int, Any]]] = {t: [] for t in TOPICS}
    for topic, log_time, message in _decoded(path):
        by_topic[topic].append((log_time, message))
    ((_, static),) = by_topic["/tf_static"]
    (link,) = static.transforms
    assert (link.header.frame_id, link.child_frame_id) == ("map", "odom")
    assert (link.transform.translation.x, link.transform.translation.y) == (0.0, 0.0)
    assert link.transform.rotation.w == 1.0
    odom = dict(by_topic["/odom"])
    scans = dict(by_topic["/scan"])
    assert len(by_topic["/tf"]) == len(odom) > 0
    for log_time, tf in by_topic["/tf"]:
        (moved,) = tf.transforms
        assert (moved.header.frame_id, moved.child_frame_id) == ("odom", "base_link")
        assert _ns(moved.header.stamp) == log_time
        now = (log_time - START_NS) / 1e9
        pose = Pose.read(sensed.at(POSE, now))
        assert pose is not None
        o = odom[log_time]
        assert (o.header.frame_id, o.child_frame_id) == ("odom", "base_link")
        assert _ns(o.header.stamp) == log_time
        assert (o.pose.pose.position.x, o.pose.pose.position.y) == (pose.x, pose.y)
        q = o.pose.pose.orientation
        assert (q.x, q.y) == (0.0, 0.0) and math.isclose(q.z**2 + q.w**2, 1.0)
        assert math.isclose(math.atan2(2 * q.w * q.z, 1 - 2 * q.z**2), pose.theta, abs_tol=1e-9)
        t = moved.transform
        assert (t.translation.x, t.translation.y) == (pose.x, pose.y)
        assert (t.rotation.z, t.rotation.w) == (q.z, q.w)
        scan = Scan.read(sensed.at(SCANNER, now))
        if scan is None:
            assert log_time not in scans
            continue
        laser = scans[log_time]
        assert laser.header.frame_id == "base_link"
        assert len(laser.ranges) == sweep.beams
        assert math.isclose(
            laser.angle_min + laser.angle_increment * (sweep.beams - 1),
            laser.angle_max,
            rel_tol=1e-6,
        )
        assert laser.range_max == pytest.approx(scan.range)
        assert laser.scan_time == pytest.approx(1 / rate_hz)
        expected = sweep.ranges(pose, scan)
        for got, want in zip(laser.ranges, expected, strict=True):
            assert got == pytest.approx(want, rel=1e-6, abs=1e-6) or (
                math.isinf(got) and math.isinf(want)
            )
    movers = by_topic["/markers/movers"]
    assert len(movers) >= len(by_topic["/tf"])
    kinds = [o.kind for o in scenario.moving_obstacles]
    for _, array in movers:
        assert [m.ns for m in array.markers] == [
            "people" if k == "person" else "forklifts" for k in kinds
        ]
        assert [m.id for m in array.markers] == list(range(len(kinds)))
        assert all(m.header.frame_id == "map" for m in array.markers)


def _check_grid(path: Path, scenario: Scenario) -> None:
    """The grid covers the floor, walls it in and marks every shelf occupied; the places the
    robot stops at are free to stand on."""
    ((_, grid),) = [(t, m) for topic, t, m in _decoded(path) if topic == "/map"]
    info = grid.info
    assert grid.header.frame_id == "map"
    assert len(grid.data) == info.width * info.height
    f, res = scenario.floor, info.resolution
    ox, oy = info.origin.position.x, info.origin.position.y
    assert ox <= f.min_x - res + 1e-6 and oy <= f.min_y - res + 1e-6
    assert ox + info.width * res >= f.max_x + res - 1e-4
    assert oy + info.height * res >= f.max_y + res - 1e-4
    assert (info.width, info.height) == grid_shape(scenario, 0.1)[:2]

    def cell(x: float, y: float) -> int:
        column, row = int((x - ox) / res), int((y - oy) / res)
        return int(grid.data[row * info.width + column])

    for column in range(info.width):
        assert grid.data[column] == grid.data[(info.height - 1) * info.width + column] == OCCUPIED
    for shelf in scenario.shelves:
        inside = shelf.shape.representative_point()
        assert cell(inside.x, inside.y) == OCCUPIED
        inner = shelf.shape.buffer(-1e-3, join_style="mitre")
        for x, y in inner.exterior.coords:  # by the corners: the cell holds part of the shelf
            assert cell(x, y) == OCCUPIED
    for zone in scenario.forbidden_zones:
        inside = zone.shape.representative_point()
        assert cell(inside.x, inside.y) >= FORBIDDEN_CELL
    for spot in (*scenario.docks, *scenario.chargers):
        assert cell(spot.x, spot.y) < 65  # nav2's default occupied threshold
    assert FREE in set(grid.data)


@pytest.mark.slow
def test_the_warehouse_run_in_ros2(warehouse: tuple[Path, Sensed]) -> None:
    path, sensed = warehouse
    scenario = load_world("narrow_aisles")
    returns = [m for t, _, m in _decoded(path) if t == "/scan" and min(m.ranges) < math.inf]
    assert len(returns) > 10  # the scan is checked against readings that saw someone
    _check_tick_by_tick(path, sensed, scenario, scenario.rate_hz)
    _check_grid(path, scenario)


@pytest.mark.slow
@settings(
    max_examples=6,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a whole run each: no shrinking
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(seed=st.integers(0, 500), world_seed=st.integers(0, 10_000))
def test_generated_worlds_in_ros2(tmp_path: Path, seed: int, world_seed: int) -> None:
    scenario = load_world(f"gen:{world_seed}")
    folder = Path(tempfile.mkdtemp(dir=tmp_path))  # a folder of its own for each example
    path, sensed = _run(folder, scenario, 80, seed=seed)
    _check_tick_by_tick(path, sensed, scenario, scenario.rate_hz)
    _check_grid(path, scenario)


# -- the scanner's sweep -------------------------------------------------------------------

coordinate = st.floats(-8.0, 8.0, allow_nan=False)
discs = st.lists(
    st.tuples(coordinate, coordinate, st.floats(0.1, 1.5, allow_nan=False)), max_size=6
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    x=coordinate,
    y=coordinate,
    theta=st.floats(-math.pi, math.pi),
    hits=discs,
    reach=st.floats(0.5, 10.0),
    beams=st.integers(1, 720),
)
def test_each_beam_stops_at_the_nearest_disc_it_meets(
    x: float,
    y: float,
    theta: float,
    hits: list[tuple[float, float, float]],
    reach: float,
    beams: int,
) -> None:
    """Checked with shapely's distances, not the sweep's own algebra."""
    sweep = ScanSweep(beams)
    ranges = sweep.ranges(Pose(x, y, theta), Scan(reach, tuple(hits)))
    assert len(ranges) == beams
    origin = Point(x, y)
    for angle, found in zip(sweep.angles(), ranges, strict=True):
        heading = theta + float(angle)
        dx, dy = math.cos(heading), math.sin(heading)
        if any(origin.distance(Point(cx, cy)) <= r for cx, cy, r in hits):
            assert found == 0.0  # the robot stands in a disc
            continue
        length = reach if math.isinf(found) else found
        assert length <= reach
        ray = LineString([(x, y), (x + dx * length * (1 - 1e-9), y + dy * length * (1 - 1e-9))])
        for cx, cy, r in hits:  # nothing nearer on the way
            assert ray.distance(Point(cx, cy)) >= r - 1e-6
        if not math.isinf(found):
            end = Point(x + dx * found, y + dy * found)
            assert min(abs(end.distance(Point(cx, cy)) - r) for cx, cy, r in hits) < 1e-6


# -- the command line ----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.e2e
def test_sim_run_writes_both_recordings_and_refuses_clashes(tmp_path: Path) -> None:
    from runtime.recording.reader import Recording
    from tests.sim.cli.test_cli import sim

    record, bag = tmp_path / "run.mcap", tmp_path / "run.ros2.mcap"
    done = sim("run", "--ticks", "20", "--record", str(record), "--ros2", str(bag), "--json")
    assert done.returncode == 0, done.stderr
    assert Recording.open(record).counts()["/tf"] == 20  # tickwork's own, as before
    with Reader(bag) as reader:
        assert reader.topics["/odom"].msgcount == 20
    clash = sim(
        "run", "--ticks", "5", "--record", str(tmp_path / "x"), "--ros2", str(tmp_path / "x")
    )
    assert clash.returncode == 2 and "same file" in clash.stderr
    resumed = sim("run", "--resume", str(tmp_path / "none.ckpt"), "--ros2", str(tmp_path / "y"))
    assert resumed.returncode == 2 and "--ros2" in resumed.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.mcap", "run.ros2.mcap"]
