"""The robot's battery figures: how fast it drains and charges, as the world publishes them.

A robot's maker states its battery's capacity, what driving and standing cost, and how
fast a charger fills it; a planner may honestly know those figures. The world writes them
beside the robot's limits, as extra fields of the ``robot:limits`` board value (a reader
of the limits alone ignores them):

- ``battery_wh``: the capacity (Wh, > 0);
- ``drain_wh_per_m``: what a metre driven costs (Wh/m, >= 0);
- ``drain_wh_per_s``: what a second costs, moving or not (Wh/s, >= 0);
- ``charge_wh_per_s``: what a second at a charger gains (Wh/s, > 0).

``BatteryFigures.read`` takes them from that value (None when any is missing or out of
bounds); ``share_per_m`` and ``share_per_s`` give the drain as shares of a full battery,
the unit of the ``battery`` reading.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cabins.warehouse.values import positive
from runtime.position import finite

__all__ = ["BatteryFigures"]


@dataclass(frozen=True, slots=True)
class BatteryFigures:
    """The battery's capacity (Wh), drain per metre (Wh/m) and per second (Wh/s), and
    charge rate (Wh/s)."""

    battery_wh: float
    drain_wh_per_m: float
    drain_wh_per_s: float
    charge_wh_per_s: float

    @classmethod
    def read(cls, value: Any) -> BatteryFigures | None:
        """The figures in a ``robot:limits`` value, or None when it does not hold all four
        within their bounds."""
        if not isinstance(value, Mapping):
            return None
        capacity = positive(value.get("battery_wh"))
        per_m = finite(value.get("drain_wh_per_m"))
        per_s = finite(value.get("drain_wh_per_s"))
        charge = positive(value.get("charge_wh_per_s"))
        if capacity is None or per_m is None or per_s is None or charge is None:
            return None
        if per_m < 0 or per_s < 0:
            return None
        return cls(capacity, per_m, per_s, charge)

    @property
    def share_per_m(self) -> float:
        """What a metre driven costs, as a share of a full battery."""
        return self.drain_wh_per_m / self.battery_wh

    @property
    def share_per_s(self) -> float:
        """What a second costs, as a share of a full battery."""
        return self.drain_wh_per_s / self.battery_wh

    def as_value(self) -> dict[str, float]:
        """The fields the world adds to the ``robot:limits`` board value."""
        return {
            "battery_wh": self.battery_wh,
            "drain_wh_per_m": self.drain_wh_per_m,
            "drain_wh_per_s": self.drain_wh_per_s,
            "charge_wh_per_s": self.charge_wh_per_s,
        }
