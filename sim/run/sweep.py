"""The safety scanner as a sweep of laser beams: what both recording profiles show of it.

The simulated scanner (``safety:scanner`` on the board, written by ``sim.world.world``)
reports the discs (x, y, radius) of the people and forklifts within its range, not a
sweep of rays. A ``ScanReading`` is one tick's reading with the pose it is swept from: the
board's ``pose`` (the robot's sensed pose, with the sensor's noise) and ``safety:scanner``,
as the world's sensing wrote them. A ``ScanSweep`` turns it into the ranges a 2-D laser
scanner at that pose would measure: ``beams`` rays spread evenly over a full turn,
counter-clockwise from straight behind (-pi), each the distance to the nearest disc it
meets, or +inf where it meets none within the scanner's range. Shelves and walls are not in
the scanner's reading, so not in the sweep.

The ROS 2 profile (``sim.run.ros2_scan``) and the Foxglove one (``/scan`` of
``sim.run.view``) both read and sweep the reading here; each writes a beam with no return
its own way (ROS 2: +inf, as REP 117 says; Foxglove's JSON has no infinity).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from cabins.warehouse.values import POSE, SCANNER, Pose, Scan


class BoardValues(Protocol):
    """The board as a recorder reads it."""

    def value(self, key: str, default: Any = None) -> Any: ...


@dataclass(frozen=True, slots=True)
class ScanReading:
    """One tick's scanner reading (``scan``) and the sensed pose it is swept from
    (``origin``)."""

    origin: Pose
    scan: Scan

    @classmethod
    def read(cls, board: BoardValues) -> ScanReading | None:
        """The board's ``pose`` and ``safety:scanner`` (stale or not), or None when either
        is missing or unreadable."""
        origin = Pose.read(board.value(POSE))
        scan = Scan.read(board.value(SCANNER))
        return None if origin is None or scan is None else cls(origin, scan)


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

    @property
    def first_angle(self) -> float:
        """The first beam's angle (rad, robot frame): straight behind."""
        return -math.pi

    @property
    def last_angle(self) -> float:
        """The last beam's angle (rad, robot frame): one increment short of a full turn."""
        return -math.pi + self.increment * (self.beams - 1)

    def angles(self) -> np.ndarray[Any, np.dtype[np.float64]]:
        """Each beam's angle in the robot's frame (radians, 0 straight ahead)."""
        return self.first_angle + self.increment * np.arange(self.beams, dtype=np.float64)

    def ranges(self, pose: Pose, scan: Scan) -> list[float]:
        """Each beam's range from ``pose`` to the nearest disc of ``scan`` (0 when the
        robot stands inside one), +inf past ``scan.range`` or where no disc is."""
        ranges: list[float] = self.distances(pose, scan).tolist()
        return ranges

    def distances(self, pose: Pose, scan: Scan) -> np.ndarray[Any, np.dtype[np.float64]]:
        """``ranges`` as an array."""
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
        return out

    def sweep(self, reading: ScanReading) -> list[float]:
        """The ranges of ``reading``, swept from its origin."""
        return self.ranges(reading.origin, reading.scan)
