"""What a draw of the ``hard:N`` family may be told instead of drawing it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from runtime.errors import SettingError

__all__ = ["LAYOUTS", "HardSettings", "Layout"]

Layout = Literal["bays", "corridors", "fishbone", "rotated", "large"]

LAYOUTS: tuple[Layout, ...] = ("bays", "corridors", "fishbone", "rotated", "large")
"""The family's layouts; ``hard:N`` draws the one at ``N % 5``, so any five seeds in a row
hold one of each."""

MAX_FLOOR = (120.0, 80.0)
"""The largest floor the family draws (m)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class HardSettings:
    """What ``generate_hard`` draws unless it is fixed here (None: drawn)."""

    layout: Layout | None = None
    """The layout (default: ``LAYOUTS[seed % 5]``)."""
    tasks: int | None = None
    """Deliveries; drawn in 4-8."""
    movers: int | None = None
    """People and forklifts together; drawn in 5-8."""
    tight_battery: bool | None = None
    """A battery too small for some task's whole round from the charger, so that the robot
    must charge between its pick-up and its drop; drawn for half the worlds."""
    max_floor: tuple[float, float] = MAX_FLOOR
    """The largest floor drawn (width, height in m); at least 40 x 30, at most 120 x 80. A
    smaller one makes cheaper runs of the same layouts."""

    def __post_init__(self) -> None:
        if self.layout is not None and self.layout not in LAYOUTS:
            raise SettingError(f"layout must be one of {', '.join(LAYOUTS)}, got {self.layout!r}")
        for name, low, high in (("tasks", 1, 50), ("movers", 0, 20)):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high
            ):
                raise SettingError(f"{name} must be a whole number in {low}-{high}, got {value!r}")
        if self.tight_battery not in (None, True, False):
            raise SettingError(f"tight_battery must be true or false, got {self.tight_battery!r}")
        floor = self.max_floor
        if not (
            isinstance(floor, tuple)
            and len(floor) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in floor)
        ):
            raise SettingError(f"max_floor must be a pair (width, height) in m, got {floor!r}")
        w, h = floor
        if not (
            math.isfinite(w)
            and math.isfinite(h)
            and 40 <= w <= MAX_FLOOR[0]
            and 30 <= h <= MAX_FLOOR[1]
        ):
            raise SettingError(
                f"max_floor must be within 40x30 to {MAX_FLOOR[0]:g}x{MAX_FLOOR[1]:g} m, "
                f"got {w:g}x{h:g}"
            )
