"""Obstacles on the route ahead: the speed that stops short of the first one in the way.

People and forklifts (map features of kind ``obstacle``) are not solids the route keeps
clear of: they move, and the planner routes round the ones that stay. The executor
checks the route ahead, within a stopping distance, against the ground each of them may
cover in the next ``PREDICT_S`` seconds (``swept``), and stops before a conflict or
passes slowly where the route only comes near one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import numpy as np
import shapely
import shapely.affinity
from shapely.geometry.base import BaseGeometry

from cabins.executor.track import Track
from cabins.warehouse.shapes import points as points_of
from cabins.warehouse.values import Pose
from runtime.cabin_map import Feature

__all__ = ["PREDICT_S", "obstacle_cap", "swept"]

PREDICT_S: Final = 1.0  # s: a moving obstacle is taken to cover where it goes meanwhile
_SAMPLE_SPACING: Final = 0.1  # m between route samples checked against obstacles
_OBSTACLE_GAP: Final = 0.3  # m of route left free before the point where it would touch
_CONTACT_MARGIN: Final = 0.03  # m: a route passing closer than this to an obstacle is blocked
_PASS_SPEED: Final = 0.3  # m/s when the route passes within obstacle_margin of an obstacle
_POSE_SLACK: Final = 0.05  # m the route's place may be nearer a mover than the sensed pose


def obstacle_cap(
    obstacles: Sequence[Feature],
    track: Track,
    s: float,
    pose: Pose,
    *,
    stopping: float,
    radius: float,
    brake: float,
    margin: float,
) -> float:
    """The speed that stops short of the first obstacle the route ahead runs into.

    An obstacle counts with the ground it covers in the next ``PREDICT_S`` seconds
    at its sensed velocity, either way along it (it may turn back). A route that would
    bring the robot's disc within ``_CONTACT_MARGIN`` of that is a conflict: stop before
    it. One that only passes within ``margin`` (the ``obstacle_margin`` setting) of it
    is passed at ``_PASS_SPEED``. Only stretches where the route closes in on the
    obstacle count, unless the obstacle is ahead of the robot: driving away from
    something behind cannot hit it. Closing in is measured from the nearer of the
    sensed pose and the robot's place on the route, but never more than
    ``_POSE_SLACK`` nearer than the pose: the pose's noise (2 cm a coordinate) must not
    make a route that keeps its gap look like one closing in, and a robot truly off its
    route must not be let back onto it where that brings it into the margin.
    """
    if not obstacles:
        return math.inf
    x, y, theta = pose.x, pose.y, pose.theta
    end = min(track.length, s + stopping + radius + margin + _OBSTACLE_GAP)
    arcs, points = track.samples(s, end, _SAMPLE_SPACING)
    arcs.insert(0, s)
    points.insert(0, (x, y))
    grid = points_of(np.asarray(points, dtype=float))
    hard, soft = radius + _CONTACT_MARGIN, radius + margin
    cap = math.inf
    cos_t, sin_t = math.cos(theta), math.sin(theta)
    for feature in obstacles:
        centre = feature.geometry.centroid
        gaps = shapely.distance(grid, swept(feature))
        here = max(min(gaps[0], gaps[1]), gaps[0] - _POSE_SLACK)
        closing = gaps <= here + 1e-9
        if cos_t * (centre.x - x) + sin_t * (centre.y - y) < 0:
            closing[0] = False
            closing &= gaps < here
        hits = np.flatnonzero(closing & (gaps < hard))
        if hits.size:
            free = arcs[int(hits[0])] - s - _OBSTACLE_GAP
            cap = min(cap, math.sqrt(2.0 * brake * free) if free > 0 else 0.0)
        elif np.any(closing & (gaps < soft)):
            cap = min(cap, _PASS_SPEED)
    return cap


def swept(feature: Feature) -> BaseGeometry:
    """The obstacle's geometry, swept along its sensed velocity for ``PREDICT_S`` and as
    far the other way, in case it turns back."""
    props = feature.props
    vx, vy = props.get("vx", 0.0), props.get("vy", 0.0)
    if (
        not all(isinstance(c, (int, float)) and math.isfinite(c) for c in (vx, vy))
        or math.hypot(vx, vy) < 0.05
    ):
        return feature.geometry
    # both ways: a forklift the robot follows down an aisle may turn back at its loop's end
    moved = shapely.affinity.translate(feature.geometry, vx * PREDICT_S, vy * PREDICT_S)
    back = shapely.affinity.translate(feature.geometry, -vx * PREDICT_S, -vy * PREDICT_S)
    return shapely.convex_hull(shapely.GeometryCollection([feature.geometry, moved, back]))
