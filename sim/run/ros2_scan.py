"""The safety scanner as a ROS 2 ``sensor_msgs/LaserScan``.

The simulated scanner (``safety:scanner`` on the board, written by ``sim.world.world``)
reports the discs (x, y, radius) of the people and forklifts within its range, not a
sweep of rays. A ``ScanSweep`` turns one reading into the ranges a 2-D laser scanner at
the robot's pose would measure: ``beams`` rays spread evenly over a full turn, counter-
clockwise from straight behind (``angle_min`` -pi), each the distance to the nearest disc
it meets, or +inf where it meets none within ``range_max`` (the scanner's range; REP 117's
"no return"). Shelves and walls are not in the scanner's reading, so not in the scan:
they are on ``/map``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from cabins.warehouse.values import Pose, Scan


@dataclass(frozen=True, slots=True)
class ScanSweep:
    """How a scanner reading is swept into ranges: ``beams`` rays over a full turn."""

    beams: int = 360

    def __post_init__(self) -> None:
        if self.beams < 1:
            raise ValueError(f"a sweep needs at least one beam, got {self.beams}")

    @property
    def increment(self) -> float:
        return 2.0 * math.pi / self.beams

    def angles(self) -> np.ndarray[Any, np.dtype[np.float64]]:
        """Each beam's angle in the robot's frame (radians, 0 straight ahead)."""
        return -math.pi + self.increment * np.arange(self.beams, dtype=np.float64)

    def ranges(self, pose: Pose, scan: Scan) -> list[float]:
        """Each beam's range from ``pose`` to the nearest disc of ``scan`` (0 when the
        robot stands inside one), +inf past ``scan.range`` or where no disc is."""
        out = np.full(self.beams, np.inf)
        if scan.hits:
            heading = pose.theta + self.angles()
            direction = np.stack([np.cos(heading), np.sin(heading)], axis=1)  # (beams, 2)
            discs = np.asarray(scan.hits, dtype=np.float64)  # (n, 3)
            offset = discs[:, :2] - np.array([pose.x, pose.y])  # (n, 2)
            along = direction @ offset.T  # (beams, n): distance to the closest approach
            outside = np.sum(offset**2, axis=1) - discs[:, 2] ** 2  # (n,) > 0: outside it
            square = along**2 - outside
            with np.errstate(invalid="ignore"):
                near = along - np.sqrt(square)
            hit = np.where((square >= 0) & (near >= 0), near, np.inf)
            hit = np.where(outside <= 0, 0.0, hit)
            out = np.min(hit, axis=1)
            out[out > scan.range] = np.inf
        return [float(r) for r in out]

    def message(self, pose: Pose, scan: Scan, *, header: dict[str, Any], period: float) -> Any:
        """The ``sensor_msgs/LaserScan`` of ``scan`` seen from ``pose`` (one sweep a tick:
        ``scan_time`` is the tick ``period``; every ray at once: no ``time_increment``)."""
        return {
            "header": header,
            "angle_min": -math.pi,
            "angle_max": -math.pi + self.increment * (self.beams - 1),
            "angle_increment": self.increment,
            "time_increment": 0.0,
            "scan_time": period,
            "range_min": 0.0,
            "range_max": scan.range,
            "ranges": self.ranges(pose, scan),
            "intensities": [],
        }
