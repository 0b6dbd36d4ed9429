"""The monitor's view read once: what a ``Seen`` holds, and the bad readings found on the
way (radius, pose, velocity), in that order; no part of the monitor reads the view after
the reader."""

from __future__ import annotations

from typing import Any

import pytest
from shapely.geometry import box

from cabins.monitor import Monitor
from cabins.monitor.incidents import Incidents
from cabins.monitor.seen import Seen, ViewReader
from cabins.monitor.settings import MonitorSettings
from runtime import Feature, load_spec
from runtime.cabin import Outbox
from runtime.testing import make_view
from tests.cabins.monitor.test_monitor import board
from tests.support.paths import ROOT
from tests.support.sealed import RealViewReader, SealedView

SPEC = load_spec(ROOT / "specs" / "monitor.toml")
ZONE = {"zone": "z", "polygon": ((2.0, -1.0), (3.0, -1.0), (3.0, 1.0))}
SLOW = ((0.0, -1.0), (2.0, -1.0), (2.0, 1.0), (0.0, 1.0))
SHELF = Feature("shelf:s", box(2.2, -1.0, 3.0, 1.0), "shelf")


def read(board: dict[str, Any], **kwargs: Any) -> tuple[Seen, Outbox]:
    """What the reader read, and the alarms the monitor raises for its bad readings."""
    seen = ViewReader(SPEC.route_key).read(make_view(SPEC, board=board, **kwargs))
    out = Outbox("monitor")
    Incidents(MonitorSettings(episode_gap=1.0)).bad_readings(
        out, seen.bad, tick=seen.tick, time=seen.time
    )
    return seen, out


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
    assert (
        [key for key, _ in seen.bad]
        == [e.data["key"] for e in out.events]
        == [
            "robot:limits",
            "robot:radius",
            "pose",
            "velocity",
        ]
    )
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
        "pose": (0.0, 0.0, 0.0),
        "velocity": (0.5, 0.0),
    }
    seen, _ = read(board)
    assert list(seen.forbidden) == [
        ("safety:forbidden:a", "unreadable"),
        ("safety:forbidden:b", ZONE),
    ]
    assert [k for k, _ in seen.speed_zones] == ["constraint:speed:s"]
    assert [k for k, _ in seen.late] == ["late:llm"]
    unknown, _ = read({k: v for k, v in board.items() if k != "velocity"})  # no speed known
    assert unknown.speed_zones == () and unknown.forbidden == seen.forbidden


@pytest.mark.parametrize("capacity", [64, 1])
def test_the_overflow_is_read_only_while_pinned_items_overflow_memory(capacity: int) -> None:
    board = {"safety:forbidden:a": ZONE, "safety:forbidden:b": ZONE, "pose": (0.0, 0.0, 0.0)}
    seen, _ = read(board, capacity=capacity)
    if capacity == 64:
        assert seen.overflow is None
    else:
        assert seen.overflow is not None and seen.overflow.capacity == 1


def test_no_part_of_the_monitor_reads_the_view_after_the_reader() -> None:
    """Every part runs (bad readings, missing readings and the fail-safe, deviation, the
    stop guards and the scanner, contact, speeding, the battery, late cabins, events, the
    status) on a view that fails on any read; only the reader reads the real one."""
    moving = board(
        pose=(1.2, 0.0, 0.0),
        velocity=(0.8, 0.0),
        battery=0.1,
        world__bounds=(-5.0, -5.0, 20.0, 5.0),
        constraint__speed__slow={"zone": "slow", "polygon": SLOW, "max_speed": 0.5},
        late__llm={"cabin": "llm", "since_tick": 0, "limit": 2},
        safety__scanner={"range": 5.0, "hits": ((1.0, 1.5, 0.3),)},
    )
    failed = ("cabin_failed", {"cabin": "planner", "error_type": "KeyError", "tick": 0}, 9.9)
    ticks: list[dict[str, Any]] = [
        {"board": moving, "events": [failed], "features": [SHELF]},
        {"board": {**moving, "pose": ("north",)}},
        {"board": moving, "suppress": ["safety:*"]},
        {"board": {**moving, "pose": (1.2, 1.2, 0.0), "velocity": (0.0, 0.0)}},
    ]
    monitor = Monitor(SPEC)
    reader = monitor._reader = RealViewReader(monitor._reader)  # type: ignore[assignment]
    outs = []
    for n, given in enumerate(ticks):
        reader.view = make_view(SPEC, tick=n, now=10.0 + 0.5 * n, **given)
        out = Outbox(monitor.name)
        monitor.step(SealedView(), out)  # type: ignore[arg-type]
        outs.append(out)
    kinds = {e.data["kind"] for o in outs for e in o.events if e.kind == "alarm"}
    assert kinds >= {"cabin_failed", "speed", "battery", "cabin_late", "bad_reading", "deviation"}
    assert {r.reaction for o in outs for r in o.reactions} >= {"stop:protective", "stop:fail_safe"}
    assert [c.name for c in outs[0].commands] == ["stop"]
    assert all(any(w.key == "monitor:status" for w in o.writes) for o in outs[::3])
