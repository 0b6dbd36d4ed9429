"""The obstacle cap: stop short of a mover the route runs into, not of one it keeps beside."""

from __future__ import annotations

import math

from hypothesis import assume, given
from hypothesis import strategies as st
from shapely.geometry import Point

from cabins.executor.obstacles import _CONTACT_MARGIN, _POSE_SLACK, obstacle_cap
from cabins.executor.track import Track
from cabins.warehouse.values import Pose
from runtime.cabin_map import Feature

RADIUS = 0.35  # the robot's disc
BRAKE = 0.5
NORTH = math.pi / 2


def _mover(x: float, y: float, r: float = 0.6, vx: float = 0.0, vy: float = 0.0) -> Feature:
    return Feature(
        "obstacle:forklift1",
        Point(x, y).buffer(r),
        "obstacle",
        frozenset({"moving", "forklift"}),
        {"vx": vx, "vy": vy},
    )


def _cap(mover: Feature, track: Track, pose: Pose, *, stopping: float = 0.5) -> float:
    s = track.project(pose.x, pose.y)
    return obstacle_cap(
        [mover], track, s, pose, stopping=stopping, radius=RADIUS, brake=BRAKE, margin=0.25
    )


NORTHWARD = Track([(0.0, 0.0), (0.0, 5.0)])
# a stopped forklift beside and behind the robot, 0.027 m from the route's disc at its start
BESIDE_BEHIND = _mover(0.93, -0.3)


def test_the_pose_noise_alone_does_not_stop_a_robot_driving_away_from_a_mover_beside_it() -> None:
    # the sensed pose 3 cm west of the route (farther from the forklift than the route is
    # here) or 3 cm east of it: the route ahead only opens its gap, nothing closes in
    assert _cap(BESIDE_BEHIND, NORTHWARD, Pose(-0.03, 0.0, NORTH)) == math.inf
    assert _cap(BESIDE_BEHIND, NORTHWARD, Pose(0.03, 0.0, NORTH)) == math.inf


def test_a_robot_truly_off_its_route_is_not_let_back_onto_it_beside_a_mover() -> None:
    # 10 cm west of a route that runs within the contact margin of the forklift: more
    # than the pose's noise, so driving on would bring it into the margin
    assert _cap(BESIDE_BEHIND, NORTHWARD, Pose(-0.10, 0.0, NORTH)) == 0.0


@given(
    beside=st.floats(0.6, 1.3),
    behind=st.floats(0.05, 0.8),
    r=st.floats(0.2, 0.6),
    off=st.floats(-0.3, 0.3),
)
def test_beside_a_mover_behind_the_pose_noise_is_forgiven_and_no_more(
    beside: float, behind: float, r: float, off: float
) -> None:
    """Driving on away from a stopped mover behind: within ``_POSE_SLACK`` of its place on
    the route the robot goes on; farther from the mover than that, with the route's place
    inside the contact margin, it stops."""
    mover = _mover(beside, -behind, r)
    pose, here = Point(off, 0.0), Point(0.0, 0.0)
    pose_gap, route_gap = pose.distance(mover.geometry), here.distance(mover.geometry)
    cap = _cap(mover, NORTHWARD, Pose(off, 0.0, NORTH))
    if abs(pose_gap - route_gap) <= _POSE_SLACK - 1e-9:
        assert cap == math.inf
    elif pose_gap - route_gap > _POSE_SLACK and route_gap < RADIUS + _CONTACT_MARGIN:
        assert cap == 0.0


def test_a_route_bending_into_a_mover_beside_the_robot_still_stops_it() -> None:
    towards = Track([(0.0, 0.0), (0.0, 0.2), (0.5, 0.2)])
    assert _cap(BESIDE_BEHIND, towards, Pose(-0.03, 0.0, NORTH)) == 0.0


@given(
    ahead=st.floats(1.0, 4.0),
    lateral=st.floats(-0.5, 0.5),
    r=st.floats(0.2, 0.6),
    noise=st.floats(-0.06, 0.06),
    vx=st.floats(-1.0, 1.0),
)
def test_the_cap_stops_short_of_a_mover_the_route_runs_into(
    ahead: float, lateral: float, r: float, noise: float, vx: float
) -> None:
    """Whatever the pose's lateral noise, the speed allowed brakes to a stop before the
    route's first sample within the contact margin of the mover's swept ground."""
    track = Track([(0.0, 0.0), (6.0, 0.0)])
    mover = _mover(ahead, lateral, r, vx=vx)
    cap = _cap(mover, track, Pose(0.0, noise, 0.0), stopping=6.0)
    sweep = abs(vx) if abs(vx) >= 0.05 else 0.0  # a mover slower than 5 cm/s is not swept
    touch = r + RADIUS + 0.03  # centre to centre, within the contact margin
    assume(abs(lateral) < touch)
    first_contact = ahead - sweep - math.sqrt(touch**2 - lateral**2)
    assert cap * cap / (2.0 * BRAKE) <= max(0.0, first_contact) + 1e-6
