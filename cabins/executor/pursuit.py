"""Pure pursuit: the (v, w) that follows a track within the robot's limits and keeps clear.

Each tick the executor steers for a point of the track some way ahead (``lookahead`` at
speed, less at a crawl, nearer still while the straight way there would bring the disc
too close to a solid, so that a corner is never cut). It turns on the spot for a point
far off its heading (braking first when fast, turning on the way when that keeps as
clear of solids as braking straight). Its speed is the least of: what still stops at
the end of the track, the robot's limits, the caller's cap, the speed zones ahead
(``zones``), the obstacles ahead (``obstacles``), and what slows in time for each sharp
corner and each narrow stretch of the track ahead. When no straight way back to the
track is clear it holds, and says so (``cut_off``).
"""

from __future__ import annotations

import math
from typing import Final

from cabins.executor.obstacles import obstacle_cap
from cabins.executor.seen import Seen
from cabins.executor.settings import ExecutorSettings
from cabins.executor.track import Track
from cabins.executor.zones import SpeedZones
from cabins.warehouse.clearance import braking_path, path_geometry
from cabins.warehouse.motion import BRAKE_FRACTION, REACTION_S, TICK_S
from cabins.warehouse.shapes import point
from cabins.warehouse.values import Point2, Pose, RobotLimits

__all__ = ["HOLD", "Pursuit"]

HOLD: Final = (0.0, 0.0)
"""The command that holds the robot: ``drive(v=0, w=0)``."""

_ROTATE_THRESHOLD: Final = 0.8  # rad: turn on the spot when the target is further off
_TURN_GAIN: Final = 2.0  # rad/s per rad of heading error when turning on the spot
_SPIN_SPEED: Final = 0.25  # m/s: turn on the spot only once slower than this
_FACE_ANGLE: Final = 0.2  # rad: held by an obstacle, turn to face a route further off
_CREEP_SPEED: Final = 0.08  # m/s: the least speed while short of the target
_MIN_LOOKAHEAD: Final = 0.4  # m: the pursuit's lookahead at a crawl (it grows with speed)
_CHORD_CLEARANCE: Final = 0.12  # m the disc keeps from solids on the way to its pursuit point
_CORNER_CUT: Final = 0.1  # m an arc through a route corner may cut inside it
_CORNER_SPEED: Final = 0.2  # m/s at a corner too sharp to take on an arc
_FULL_CLEARANCE: Final = 0.2  # m of clearance beyond which the route is driven at full speed
_NEAR_MARGIN: Final = 1e-6  # m: measured exactly a little beyond _FULL_CLEARANCE
_CLEAR_SPEED: Final = 0.3  # m/s: the least speed a narrow stretch is driven at
_PATH_SPACING: Final = 0.2  # m between route samples checked for clearance
_TOUCH_GAP: Final = 0.02  # m: a straight way back to the route closer than this is cut off


class Pursuit:
    """Pure pursuit along a track (see the module docstring). ``cut_off`` tells whether the
    last ``pursue`` found no clear straight way back to the track."""

    __slots__ = ("_here_gap", "_here_xy", "_settings", "cut_off", "zones")

    def __init__(self, settings: ExecutorSettings, zones: SpeedZones) -> None:
        self._settings = settings
        self.zones = zones
        self.cut_off = False
        # the disc's clearance from the solids, and where it was measured (by the last
        # _pursuit_point, for the _path_cap of the same pursue)
        self._here_gap = 0.0
        self._here_xy: Point2 = (0.0, 0.0)

    def pursue(
        self,
        seen: Seen,
        track: Track,
        s: float,
        pose: Pose,
        speed: float,
        target: Point2,
        tolerance: float,
        cap: float,
    ) -> tuple[float, float]:
        """Pure pursuit along ``track`` from arc length ``s``: the (v, w) to command."""
        self.cut_off = False
        limits = seen.limits
        x, y, theta = pose.x, pose.y, pose.theta
        (gx, gy), chord_gap = self._pursuit_point(seen, track, s, pose, speed)
        if chord_gap < _TOUCH_GAP:
            self.cut_off = True
            dx, dy = gx - x, gy - y
            heading = math.atan2(dy, dx)
            alpha = (heading - theta + math.pi) % (2 * math.pi) - math.pi
            return self._brake(seen, pose, speed, alpha) if abs(speed) > _SPIN_SPEED else HOLD
        dx, dy = gx - x, gy - y
        cos_t, sin_t = math.cos(theta), math.sin(theta)
        lx, ly = cos_t * dx + sin_t * dy, -sin_t * dx + cos_t * dy
        alpha = math.atan2(ly, lx)
        if abs(alpha) > _ROTATE_THRESHOLD:
            if abs(speed) > _SPIN_SPEED:
                return self._brake(seen, pose, speed, alpha)
            return 0.0, _clamp(_TURN_GAIN * alpha, limits.max_turn_rate)
        d2 = lx * lx + ly * ly
        kappa = 2.0 * ly / d2 if d2 > 1e-12 else 0.0
        brake = BRAKE_FRACTION * limits.max_accel
        remaining = max(track.length - s, math.hypot(target[0] - x, target[1] - y))
        v = min(
            limits.max_speed,
            cap,
            max(_CREEP_SPEED, math.sqrt(2.0 * brake * max(0.0, remaining - tolerance / 2))),
        )
        v *= math.cos(alpha)
        if abs(kappa) * v > limits.max_turn_rate:
            v = limits.max_turn_rate / abs(kappa)
        moving = max(abs(speed), v)
        stopping = moving * moving / (2.0 * brake) + moving * REACTION_S
        v, obstacles = self._cap_ahead(seen, track, s, pose, v, stopping, brake)
        if v == 0.0 and obstacles == 0.0 and abs(alpha) > _FACE_ANGLE and abs(speed) <= _SPIN_SPEED:
            # Stopped for an obstacle its heading points at, while the route leads off to
            # the side (away from a mover it waited beside, say): turn on the spot to face
            # the route, which sweeps no new ground; ahead along the route may be clear.
            return 0.0, _clamp(_TURN_GAIN * alpha, limits.max_turn_rate)
        return v, _clamp(v * kappa, limits.max_turn_rate)

    def _cap_ahead(
        self,
        seen: Seen,
        track: Track,
        s: float,
        pose: Pose,
        v: float,
        stopping: float,
        brake: float,
    ) -> tuple[float, float]:
        """``v`` capped for the speed zones, the obstacles and the corners and narrow
        stretches ahead (never below 0), and the obstacles' cap alone."""
        v = min(v, self.zones.cap(seen.speed_zones, seen.missing, track, s, pose.xy, stopping))
        obstacles = obstacle_cap(
            seen.obstacles(),
            track,
            s,
            pose,
            stopping=stopping,
            radius=seen.limits.radius,
            brake=brake,
            margin=self._settings.obstacle_margin,
        )
        v = min(v, obstacles, self._path_cap(seen, track, s, brake))
        return max(0.0, v), obstacles

    def _pursuit_point(
        self, seen: Seen, track: Track, s: float, pose: Pose, speed: float
    ) -> tuple[Point2, float]:
        """The point of ``track`` to steer for, and the clearance of the straight way to it:
        ``lookahead`` ahead at speed, less at a crawl, and nearer still while the straight
        way to it would bring the disc closer than ``_CHORD_CLEARANCE`` to a solid (so that
        a corner is never cut)."""
        look = max(_MIN_LOOKAHEAD, min(self._settings.lookahead, 0.3 + 0.4 * abs(speed)))
        solids = seen.solids
        here = pose.xy
        if not solids:
            return track.point_at(s + look), math.inf
        radius = seen.limits.radius
        now = solids.gap(point(*here)) - radius
        self._here_gap = now
        self._here_xy = here
        need = min(_CHORD_CLEARANCE, now - 0.01)
        target = track.point_at(s + look)
        reach = math.dist(here, target)
        if now - reach >= need:  # no solid near enough to come within need of the way there
            return target, now - reach
        best, best_gap = track.point_at(s), -math.inf
        for fraction in (1.0, 0.5, 0.25, 0.1):
            target = track.point_at(s + look * fraction)
            gap = solids.gap(path_geometry([here, target])) - radius
            if gap >= need:
                return target, gap
            if gap > best_gap:
                best, best_gap = target, gap
        return best, best_gap

    def _brake(self, seen: Seen, pose: Pose, speed: float, alpha: float) -> tuple[float, float]:
        """Brake for a target far off the heading: turning towards it on the way when that
        path keeps clear of solids at least as well as braking straight, else straight."""
        limits = seen.limits
        turn = _clamp(_TURN_GAIN * alpha, limits.max_turn_rate)
        if not seen.solids:
            return 0.0, turn
        gaps = []
        for w in (turn, 0.0):
            path = braking_path(
                pose.x,
                pose.y,
                pose.theta,
                speed,
                w,
                accel=limits.max_accel,
                dt=TICK_S,  # 20 Hz steps, whatever the run's rate (warehouse.motion)
                extra_ticks=0,
            )
            gaps.append(seen.solids.gap(path_geometry(path)) - limits.radius)
        turning, straight = gaps
        return (0.0, turn) if turning >= min(_CHORD_CLEARANCE, straight) else HOLD

    def _path_cap(self, seen: Seen, track: Track, s: float, brake: float) -> float:
        """The speed from which the robot can still slow down in time for each sharp
        corner of the route ahead and for each stretch that passes close to a solid."""
        limits, solids = seen.limits, seen.solids
        horizon = limits.max_speed**2 / (2.0 * brake) + 0.5
        end = min(track.length, s + horizon)
        cap = math.inf
        pts, cum = track.points, track.cum
        for i in range(1, len(pts) - 1):
            if cum[i] <= s or cum[i] > end:
                continue
            corner = _corner_speed(_turn_angle(pts[i - 1], pts[i], pts[i + 1]), limits)
            cap = min(cap, math.sqrt(corner * corner + 2.0 * brake * max(0.0, cum[i] - s - 0.1)))
        # every sample is within ``end - s`` (plus the robot's offset from the route) of
        # the robot: when the robot is far enough from every solid, none is near one
        offset = math.dist(track.point_at(s), self._here_xy)
        if solids and end > s and self._here_gap - (end - s) - offset < _FULL_CLEARANCE:
            arcs, points = track.samples(s, end, _PATH_SPACING)
            # a sample _FULL_CLEARANCE or more from every solid allows full speed: only
            # the nearer ones need their exact gap (the margin covers the rounding of
            # ``gap - radius``)
            near = _FULL_CLEARANCE + limits.radius + _NEAR_MARGIN
            gaps = solids.gaps_within(points, near) - limits.radius
            for arc, gap in zip(arcs, gaps.tolist(), strict=True):
                allowed = max(_CLEAR_SPEED, limits.max_speed * min(1.0, gap / _FULL_CLEARANCE))
                if allowed < limits.max_speed:
                    cap = min(cap, math.sqrt(allowed * allowed + 2.0 * brake * (arc - s)))
        return cap


def _clamp(value: float, limit: float) -> float:
    return max(-limit, min(limit, value))


def _turn_angle(a: Point2, b: Point2, c: Point2) -> float:
    """How sharply a route turns at ``b`` (0: straight on, pi: straight back)."""
    h1 = math.atan2(b[1] - a[1], b[0] - a[0])
    h2 = math.atan2(c[1] - b[1], c[0] - b[0])
    return abs((h2 - h1 + math.pi) % (2 * math.pi) - math.pi)


def _corner_speed(angle: float, limits: RobotLimits) -> float:
    """The speed a corner of ``angle`` can be taken at: on an arc that cuts it by at most
    ``_CORNER_CUT``, turning at 80% of the turn rate; slowly enough to turn on the spot
    when it is sharper than the pursuit turns on an arc."""
    if angle >= _ROTATE_THRESHOLD:
        return _CORNER_SPEED
    if angle < 1e-3:
        return limits.max_speed
    radius = _CORNER_CUT / (1.0 / math.cos(angle / 2.0) - 1.0)
    return max(_CORNER_SPEED, min(limits.max_speed, 0.8 * limits.max_turn_rate * radius))
