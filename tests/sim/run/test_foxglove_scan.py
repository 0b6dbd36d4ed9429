"""The Foxglove profile's ``/scan``: the safety scanner, once a tick, in the robot frame.

Checked against the board's own writes as the recording holds them on ``/board`` (not
against the sweep's code): placed in the world through ``/tf`` and the message's
``pose``, every beam starts at the board's sensed pose, every return lies on the edge of a
disc of the board's ``safety:scanner`` reading, and every beam with no return (range
``reach + 1``, intensity 0) passes every disc within the reach. The ROS 2 profile's
``/scan`` of the same run has the same ranges (+inf for no return).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any

import pytest
from shapely.geometry import LineString, Point

from cabins.warehouse.values import POSE, SCANNER, Pose, Scan
from runtime.jsonable import from_json
from runtime.recording.format import BOARD, SCAN, TF
from runtime.recording.reader import Recording
from runtime.recording.timebase import TimeBase
from sim.run.harness import Simulation
from sim.run.view import NO_RETURN, NO_RETURN_MARGIN, RETURN

START = TimeBase(1_767_225_600_000_000_000)
TICKS = 120
HAS_ROS2 = importlib.util.find_spec("mcap_ros2") is not None


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Recording, Path | None]:
    """narrow_aisles: people walk within the scanner's reach from the first tick."""
    folder = tmp_path_factory.mktemp("scan")
    ros2 = folder / "run.ros2.mcap" if HAS_ROS2 else None
    sim = Simulation(
        "narrow_aisles", seed=3, record=folder / "run.mcap", ros2=ros2, time_base=START
    )
    try:
        sim.run(TICKS, until_done=False)
    finally:
        sim.close()
    return Recording.open(folder / "run.mcap"), ros2


def _sensed(recording: Recording) -> dict[int, tuple[Pose, Scan]]:
    """Tick → the board's ``pose`` and ``safety:scanner`` at the end of that tick, replayed
    from the recording's ``/board`` writes."""
    values: dict[str, Any] = {}
    out: dict[int, tuple[Pose, Scan]] = {}
    for tick in recording.ticks():
        for write in recording.at(BOARD, tick):
            if write["key"] in (POSE, SCANNER):
                values[write["key"]] = None if write["deleted"] else from_json(write["value"])
        pose, scan = Pose.read(values.get(POSE)), Scan.read(values.get(SCANNER))
        if pose is not None and scan is not None:
            out[tick] = (pose, scan)
    return out


def _ns(stamp: Any) -> int:
    return int(stamp["sec"]) * 1_000_000_000 + int(stamp["nsec"])


def _yaw(q: Any) -> float:
    assert (q["x"], q["y"]) == (0.0, 0.0) and math.isclose(q["z"] ** 2 + q["w"] ** 2, 1.0)
    return math.atan2(2 * q["w"] * q["z"], 1 - 2 * q["z"] ** 2)


def _origin(tf: Any, scan: Any) -> tuple[float, float, float]:
    """Where the sweep starts in the world: ``/tf``'s robot frame, then the scan's pose."""
    robot = _yaw(tf["rotation"])
    at, turn = scan["pose"]["position"], _yaw(scan["pose"]["orientation"])
    x = tf["translation"]["x"] + math.cos(robot) * at["x"] - math.sin(robot) * at["y"]
    y = tf["translation"]["y"] + math.sin(robot) * at["x"] + math.cos(robot) * at["y"]
    return x, y, robot + turn


def test_one_scan_a_tick_in_the_robot_frame_that_the_board_reading_explains(
    run: tuple[Recording, Path | None],
) -> None:
    recording, _ = run
    sensed = _sensed(recording)
    assert len(sensed) == len(recording.ticks()) == TICKS  # a reading every tick
    returns = quiet = 0
    for tick in recording.ticks():
        (message,) = recording.at(SCAN, tick)  # exactly one a tick
        (tf,) = recording.at(TF, tick)
        assert message["frame_id"] == tf["child_frame_id"] == "robot"
        assert message["timestamp"] == tf["timestamp"]
        ranges, intensities = message["ranges"], message["intensities"]
        assert len(ranges) == len(intensities) == 360
        assert message["start_angle"] == -math.pi
        step = (message["end_angle"] - message["start_angle"]) / (len(ranges) - 1)
        assert step == pytest.approx(2 * math.pi / 360)
        pose, scan = sensed[tick]
        x, y, theta = _origin(tf, message)
        assert (x, y) == pytest.approx((pose.x, pose.y), abs=1e-9)
        assert math.remainder(theta - pose.theta, 2 * math.pi) == pytest.approx(0.0, abs=1e-9)
        discs = [(Point(cx, cy), r) for cx, cy, r in scan.hits]
        for i, (reach, intensity) in enumerate(zip(ranges, intensities, strict=True)):
            angle = theta + message["start_angle"] + i * step
            dx, dy = math.cos(angle), math.sin(angle)
            if intensity == NO_RETURN:
                quiet += 1
                assert reach == scan.range + NO_RETURN_MARGIN
                beam = LineString([(x, y), (x + scan.range * dx, y + scan.range * dy)])
                assert all(beam.distance(c) >= r - 1e-9 for c, r in discs), (tick, i)
                continue
            returns += 1
            assert intensity == RETURN and 0.0 <= reach <= scan.range
            end = Point(x + reach * dx, y + reach * dy)
            assert any(abs(end.distance(c) - r) < 1e-6 for c, r in discs) or (
                reach == 0.0 and any(Point(x, y).distance(c) <= r for c, r in discs)
            ), (tick, i)
    assert returns > 0 and quiet > 0


@pytest.mark.skipif(not HAS_ROS2, reason="the ROS 2 profile needs mcap-ros2-support")
def test_the_ros2_profile_scans_the_same_ranges(run: tuple[Recording, Path | None]) -> None:
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    recording, ros2 = run
    assert ros2 is not None
    theirs: dict[int, Any] = {}
    with ros2.open("rb") as fh:
        reader = make_reader(fh, decoder_factories=[DecoderFactory()])
        for _, channel, message, decoded in reader.iter_decoded_messages(topics=["/scan"]):
            assert channel.topic == "/scan"
            theirs[message.log_time] = decoded
    ours = {_ns(m["timestamp"]): m for m in recording.messages(SCAN)}
    assert sorted(ours) == sorted(theirs) and len(ours) == TICKS
    for log_time, message in ours.items():
        laser = theirs[log_time]
        assert laser.angle_min == pytest.approx(message["start_angle"])
        assert laser.angle_max == pytest.approx(message["end_angle"])
        beyond = laser.range_max + NO_RETURN_MARGIN
        for got, want in zip(message["ranges"], laser.ranges, strict=True):
            if math.isinf(want):
                assert got == pytest.approx(beyond)
            else:
                assert got == pytest.approx(want, rel=1e-6, abs=1e-6)
