"""The route as a track: a polyline with arc length.

The executor follows a route by arc length along it: it projects the robot onto the
track (never jumping far back), steers for a point some way further on and looks at
the stretch ahead (its corners, its samples near solids and obstacles, the speed zones
it enters). ``Track`` answers those questions for one route.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from cabins.warehouse.values import Point2

__all__ = ["Track"]


class Track:
    """A polyline with arc length: projection, points at a distance, samples."""

    __slots__ = ("cum", "length", "points")

    def __init__(self, points: Sequence[Point2]) -> None:
        self.points = tuple(points)
        cum = [0.0]
        for (ax, ay), (bx, by) in zip(self.points, self.points[1:], strict=False):
            cum.append(cum[-1] + math.hypot(bx - ax, by - ay))
        self.cum = cum
        self.length = cum[-1]

    def project(self, x: float, y: float, s_min: float = -math.inf) -> float:
        """Arc length of the point of the track nearest (x, y), at or after ``s_min``."""
        best_d2, best_s = math.inf, 0.0
        pts, cum = self.points, self.cum
        for i in range(len(pts) - 1):
            if cum[i + 1] < s_min:
                continue
            (ax, ay), (bx, by) = pts[i], pts[i + 1]
            seg = cum[i + 1] - cum[i]
            t = 0.0
            if seg * seg > 0:  # a segment too short to square is a point
                t = ((x - ax) * (bx - ax) + (y - ay) * (by - ay)) / (seg * seg)
                t = min(1.0, max(0.0, t))
            px, py = ax + t * (bx - ax), ay + t * (by - ay)
            d2 = (x - px) ** 2 + (y - py) ** 2
            if d2 < best_d2:
                best_d2, best_s = d2, cum[i] + t * seg
        return best_s

    def point_at(self, s: float) -> Point2:
        pts, cum = self.points, self.cum
        if s <= 0 or len(pts) == 1:
            return pts[0]
        if s >= self.length:
            return pts[-1]
        i = min(bisect.bisect_right(cum, s) - 1, len(pts) - 2)
        seg = cum[i + 1] - cum[i]
        t = (s - cum[i]) / seg if seg > 0 else 0.0
        (ax, ay), (bx, by) = pts[i], pts[i + 1]
        return ax + t * (bx - ax), ay + t * (by - ay)

    def polyline(self, s0: float, s1: float) -> list[Point2]:
        """The track between arc lengths ``s0`` and ``s1`` (its vertices in between kept)."""
        out = [self.point_at(s0)]
        cum = self.cum  # non-decreasing: the vertices strictly between are one slice
        out.extend(self.points[bisect.bisect_right(cum, s0) : bisect.bisect_left(cum, s1)])
        out.append(self.point_at(s1))
        return out

    def samples(self, s0: float, s1: float, spacing: float) -> tuple[list[float], list[Point2]]:
        """Points every ``spacing`` metres from ``s0`` to ``s1`` (both ends included)."""
        count = max(1, math.ceil((s1 - s0) / spacing))
        arcs = [s0 + (s1 - s0) * k / count for k in range(count + 1)]
        return arcs, [self.point_at(s) for s in arcs]
