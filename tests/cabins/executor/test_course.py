"""The executor's course: progress along the route never jumps far back; leaving the
route is reported once per route and plan revision."""

from __future__ import annotations

import math

import pytest

from cabins.executor.course import BACKTRACK, Course
from cabins.warehouse.values import Pose

HAIRPIN = ((0.0, 0.0), (10.0, 0.0), (10.0, 1.0), (0.0, 1.0))
"""Out along y = 0 and back along y = 1: the two legs pass 1 m apart."""


def test_progress_stays_on_the_later_leg_of_a_route_that_passes_near_itself() -> None:
    course = Course()
    track, s = course.locate(HAIRPIN, Pose(5.0, 1.0, math.pi))
    assert s == pytest.approx(16.0)
    # nearer the outward leg now, but that is more than BACKTRACK behind
    assert track.project(5.0, 0.4) == pytest.approx(5.0)
    _, s = course.locate(HAIRPIN, Pose(5.0, 0.4, math.pi))
    assert s == pytest.approx(16.0)


def test_progress_may_go_back_a_little() -> None:
    course = Course()
    course.locate(HAIRPIN, Pose(5.0, 0.0, 0.0))
    _, s = course.locate(HAIRPIN, Pose(5.0 - BACKTRACK / 2, 0.0, 0.0))
    assert s == pytest.approx(5.0 - BACKTRACK / 2)


def test_a_new_route_starts_a_new_track_and_progress() -> None:
    course = Course()
    first, _ = course.locate(HAIRPIN, Pose(5.0, 1.0, 0.0))
    assert course.locate(HAIRPIN, Pose(5.0, 1.0, 0.0))[0] is first
    straight = ((0.0, 0.4), (10.0, 0.4))
    track, s = course.locate(straight, Pose(5.0, 0.4, 0.0))
    assert track is not first and track.points == straight and s == pytest.approx(5.0)


def test_leaving_the_route_is_reported_once_per_route_and_revision() -> None:
    course = Course()
    assert course.first_off(HAIRPIN, 1)
    assert not course.first_off(HAIRPIN, 1)
    assert course.first_off(HAIRPIN, 2)
    assert course.first_off(HAIRPIN[:2], 2)
