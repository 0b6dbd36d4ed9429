"""The monitor's view read once: what a ``Sight`` holds, and the bad readings found on the
way (radius, pose, velocity), in that order."""

from __future__ import annotations

from typing import Any

import pytest

from cabins.monitor.incidents import Incidents
from cabins.monitor.sight import Reader, Sight
from runtime import load_spec
from runtime.cabin import Outbox
from runtime.testing import make_view
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "monitor.toml")
ZONE = {"zone": "z", "polygon": ((2.0, -1.0), (3.0, -1.0), (3.0, 1.0))}


def read(board: dict[str, Any], **kwargs: Any) -> tuple[Sight, Outbox]:
    out = Outbox("monitor")
    view = make_view(SPEC, board=board, **kwargs)
    return Reader(SPEC.route_key, Incidents(1.0)).read(view, out), out


def test_the_robot_is_read_from_pose_velocity_and_radius() -> None:
    sight, out = read({"pose": (1.0, 2.0, 0.0), "velocity": (0.5, 0.1), "robot:radius": 0.4})
    assert out.events == []
    assert sight.pose is not None and sight.here is not None and sight.robot is not None
    assert (sight.here.x, sight.here.y) == (1.0, 2.0)
    assert (sight.robot.cos, sight.robot.sin, sight.robot.speed, sight.robot.turn) == (
        1.0,
        0.0,
        0.5,
        0.1,
    )
    assert sight.radius == sight.robot.radius == 0.4


def test_without_a_velocity_the_robot_has_no_speed_and_without_a_pose_there_is_none() -> None:
    sight, _ = read({"pose": (0.0, 0.0, 0.0)})
    assert sight.robot is not None and sight.robot.speed is None and sight.robot.turn == 0.0
    sight, _ = read({"velocity": (0.5, 0.0)})
    assert sight.robot is None and sight.here is None and sight.velocity is not None


def test_bad_readings_come_radius_first_then_pose_then_velocity() -> None:
    board = {
        "pose": ("north", 0.0),
        "velocity": (1.0,),
        "robot:limits": {"radius": -1.0},
        "robot:radius": "big",
    }
    sight, out = read(board)
    assert [e.data["key"] for e in out.events] == [
        "robot:limits",
        "robot:radius",
        "pose",
        "velocity",
    ]
    assert sight.radius == 0.35  # the default
    assert sight.limits_value == {"radius": -1.0} and sight.radius_value == "big"


def test_a_route_held_as_none_is_shown_not_absent() -> None:
    shown, _ = read({"route": None})
    absent, _ = read({})
    assert (shown.route_shown, shown.route) == (True, None)
    assert (absent.route_shown, absent.route) == (False, None)


def test_zones_come_in_key_order_with_their_values() -> None:
    board = {
        "safety:forbidden:b": ZONE,
        "safety:forbidden:a": "unreadable",
        "constraint:speed:s": {"zone": "s"},
        "late:llm": {"cabin": "llm"},
    }
    sight, _ = read(board)
    assert list(sight.forbidden) == [
        ("safety:forbidden:a", "unreadable"),
        ("safety:forbidden:b", ZONE),
    ]
    assert [k for k, _ in sight.speed_zones] == ["constraint:speed:s"]
    assert [k for k, _ in sight.late] == ["late:llm"]


@pytest.mark.parametrize("capacity", [64, 1])
def test_the_overflow_is_read_only_while_pinned_items_overflow_memory(capacity: int) -> None:
    board = {"safety:forbidden:a": ZONE, "safety:forbidden:b": ZONE, "pose": (0.0, 0.0, 0.0)}
    sight, _ = read(board, capacity=capacity)
    if capacity == 64:
        assert sight.overflow is None
    else:
        assert sight.overflow is not None and sight.overflow.capacity == 1
