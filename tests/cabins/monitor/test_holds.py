"""The stop rule for one shape and its holds: stop when closing in within the margin, let a
robot moving away go, hold a robot at rest facing the shape with a free tick now and then."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest
from shapely.geometry import Point, box

from cabins.monitor import MonitorSettings
from cabins.monitor.holds import Holds
from cabins.monitor.seen import Robot

WALL = box(2.0, -1.0, 3.0, 1.0)  # its near edge at x = 2
MARGIN = 0.1
RADIUS = 0.35


def robot(x: float, theta: float = 0.0, speed: float | None = 0.0, turn: float = 0.0) -> Robot:
    return Robot(Point(x, 0.0), math.cos(theta), math.sin(theta), speed, turn, RADIUS)


def test_closing_in_within_the_margin_stops_and_gives_the_gap() -> None:
    holds = Holds(MonitorSettings())
    gap = holds.must_stop(WALL, robot(1.6, speed=0.5), MARGIN, "wall", 10.0)
    assert gap == pytest.approx(0.05)
    assert holds.must_stop(WALL, robot(1.5, speed=0.5), MARGIN, "wall", 10.0) is None  # 0.15 off


@pytest.mark.parametrize(
    ("theta", "speed", "turn"),
    [(math.pi, 0.5, 0.0), (0.0, -0.5, 0.0), (math.pi / 2, 0.5, 0.0), (0.0, 0.0, 1.0)],
    ids=["heading-away", "reversing-away", "alongside", "turning-on-the-spot"],
)
def test_a_robot_moving_away_alongside_or_turning_is_let_go(
    theta: float, speed: float, turn: float
) -> None:
    holds = Holds(MonitorSettings())
    assert holds.must_stop(WALL, robot(1.62, theta, speed, turn), MARGIN, "wall", 10.0) is None


def test_unknown_velocity_or_a_centre_inside_stops() -> None:
    holds = Holds(MonitorSettings())
    assert holds.must_stop(WALL, robot(1.6, math.pi, speed=None), MARGIN, "wall", 10.0) is not None
    inside = holds.must_stop(WALL, robot(2.5, math.pi, speed=0.5), MARGIN, "wall", 10.0)
    assert inside == pytest.approx(-RADIUS)


def test_a_hold_gives_a_free_tick_after_hold_release_doubling_when_pushed_on() -> None:
    holds = Holds(MonitorSettings(hold_release=1.0))
    at_rest = robot(1.62)  # 0.03 m off, facing the wall: within hold_fraction of the margin
    free_ticks = []
    now = 0.0
    for tick in range(400):
        now = tick * 0.05
        pushing = tick - 1 in free_ticks  # the driver pushes on in the tick after a free one
        gap = holds.must_stop(
            WALL, robot(1.62, speed=0.5) if pushing else at_rest, MARGIN, "w", now
        )
        holds.next_tick()
        if gap is None:
            free_ticks.append(tick)
    waits = [b - a for a, b in pairwise(free_ticks)]
    assert free_ticks[0] == 20  # after hold_release (1 s at 20 Hz)
    assert waits[:3] == [41, 81, 161]  # each push doubles the wait: 2, 4, 8 s (and the push)


def test_a_held_robot_stays_held_within_twice_the_margin_but_not_beyond() -> None:
    holds = Holds(MonitorSettings())
    assert holds.must_stop(WALL, robot(1.62), MARGIN, "w", 0.0) is not None
    holds.next_tick()
    assert holds.must_stop(WALL, robot(1.53), MARGIN, "w", 0.05) is not None  # 0.12: noise
    holds.next_tick()
    assert holds.must_stop(WALL, robot(1.4), MARGIN, "w", 0.1) is None  # 0.25: it moved
    holds.next_tick()
    assert holds.must_stop(WALL, robot(1.53), MARGIN, "w", 0.15) is None  # no hold now


def test_a_hold_not_kept_in_a_tick_ends() -> None:
    holds = Holds(MonitorSettings())
    assert holds.must_stop(WALL, robot(1.62), MARGIN, "w", 0.0) is not None
    holds.next_tick()
    holds.next_tick()  # a tick in which the shape was not guarded (out of reach)
    assert holds.must_stop(WALL, robot(1.53), MARGIN, "w", 0.1) is None
