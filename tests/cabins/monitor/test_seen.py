"""The monitor's view read once: what a ``Seen`` holds, and the bad readings found on the
way (radius, pose, velocity), in that order."""

from __future__ import annotations

from typing import Any

import pytest

from cabins.monitor.incidents import Incidents
from cabins.monitor.seen import Seen, ViewReader
from runtime import load_spec
from runtime.cabin import Outbox
from runtime.testing import make_view
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "monitor.toml")
ZONE = {"zone": "z", "polygon": ((2.0, -1.0), (3.0, -1.0), (3.0, 1.0))}


def read(board: dict[str, Any], **kwargs: Any) -> tuple[Seen, Outbox]:
    out = Outbox("monitor")
    view = make_view(SPEC, board=board, **kwargs)
    return ViewReader(SPEC.route_key, Incidents(1.0)).read(view, out), out


def test_the_robot_is_read_from_pose_velocity_and_radius() -> None:
    seen, out = read({"pose": (1.0, 2.0, 0.0), "velocity": (0.5, 0.1), "robot:radius": 0.4})
    assert out.events == []
    assert seen.pose is not None and seen.here is not None and seen.robot is not None
    assert (seen.here.x, seen.here.y) == (1.0, 2.0)
    assert (seen.robot.cos, seen.robot.sin, seen.robot.speed, seen.robot.turn) == (
        1.0,
        0.0,
        0.5,
        0.1,
    )
    assert seen.radius == seen.robot.radius == 0.4


def test_without_a_velocity_the_robot_has_no_speed_and_without_a_pose_there_is_none() -> None:
    seen, _ = read({"pose": (0.0, 0.0, 0.0)})
    assert seen.robot is not None and seen.robot.speed is None and seen.robot.turn == 0.0
    seen, _ = read({"velocity": (0.5, 0.0)})
    assert seen.robot is None and seen.here is None and seen.velocity is not None


def test_bad_readings_come_radius_first_then_pose_then_velocity() -> None:
    board = {
        "pose": ("north", 0.0),
        "velocity": (1.0,),
        "robot:limits": {"radius": -1.0},
        "robot:radius": "big",
    }
    seen, out = read(board)
    assert [e.data["key"] for e in out.events] == [
        "robot:limits",
        "robot:radius",
        "pose",
        "velocity",
    ]
    assert seen.radius == 0.35  # the default
    assert seen.limits_value == {"radius": -1.0} and seen.radius_value == "big"


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
    seen, _ = read(board)
    assert list(seen.forbidden) == [
        ("safety:forbidden:a", "unreadable"),
        ("safety:forbidden:b", ZONE),
    ]
    assert [k for k, _ in seen.speed_zones] == ["constraint:speed:s"]
    assert [k for k, _ in seen.late] == ["late:llm"]


@pytest.mark.parametrize("capacity", [64, 1])
def test_the_overflow_is_read_only_while_pinned_items_overflow_memory(capacity: int) -> None:
    board = {"safety:forbidden:a": ZONE, "safety:forbidden:b": ZONE, "pose": (0.0, 0.0, 0.0)}
    seen, _ = read(board, capacity=capacity)
    if capacity == 64:
        assert seen.overflow is None
    else:
        assert seen.overflow is not None and seen.overflow.capacity == 1
