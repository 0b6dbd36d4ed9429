"""The safety scanner as a ROS 2 ``sensor_msgs/LaserScan``.

One ``ScanReading`` of the board, swept by a ``ScanSweep`` (``sim.run.sweep``, which the
Foxglove profile's ``/scan`` shares), in ``base_link``: a beam that meets no disc within
``range_max`` (the scanner's range) is +inf, REP 117's "no return".
"""

from __future__ import annotations

from typing import Any

from sim.run.sweep import ScanReading, ScanSweep


def laser_scan(
    sweep: ScanSweep, reading: ScanReading, *, header: dict[str, Any], period: float
) -> Any:
    """The ``sensor_msgs/LaserScan`` of ``reading`` (one sweep a tick: ``scan_time`` is the
    tick ``period``; every ray at once: no ``time_increment``)."""
    return {
        "header": header,
        "angle_min": sweep.first_angle,
        "angle_max": sweep.last_angle,
        "angle_increment": sweep.increment,
        "time_increment": 0.0,
        "scan_time": period,
        "range_min": 0.0,
        "range_max": reading.scan.range,
        "ranges": sweep.sweep(reading),
        "intensities": [],
    }
