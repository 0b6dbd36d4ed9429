"""How the robot is driven, as the cabins that predict its motion assume it.

The executor plans its braking with ``BRAKE_FRACTION`` of the robot's ``max_accel`` and
adds ``REACTION_S`` of delay, before a command acts, to its stopping distances; the
planner, which starts a new route where the robot can stop (``cabins.planner.departure``),
assumes the same, so both must read them here.

``TICK_S`` is the tick that braking predictions step by (``clearance.braking_path``: the
executor's check that turning while it brakes keeps clear, the monitor's contact
forecast, which also counts one tick of travel before braking starts). It is 0.05 s, the
world's default rate of 20 Hz (a scenario's ``rate_hz``), fixed here rather than read
from the run: in a world run at another rate the predictions still step by 20 Hz ticks.
"""

from __future__ import annotations

from typing import Final

__all__ = ["BRAKE_FRACTION", "REACTION_S", "TICK_S"]

BRAKE_FRACTION: Final = 0.8
"""The share of ``max_accel`` the executor plans its braking with."""

REACTION_S: Final = 0.1
"""Seconds before a command acts, added to stopping distances."""

TICK_S: Final = 0.05
"""Seconds per step of a braking prediction: one tick at 20 Hz (see the module docstring)."""
