"""The sizes a simulated world can have: the bounds every scenario number, tick rate and
run length is checked against (in scenario files and on the command line alike), so that a
run either starts or is refused with a clear error, and never overflows or hangs."""

from __future__ import annotations

MAX_MAGNITUDE = 1e6
"""The largest size of any number in a scenario (m, s, m/s, Wh...): beyond it a product
of two would stop being a distance the world can simulate."""

MAX_FLOOR_SIDE = 500.0
"""The longest side of a floor (m): the planner's grid of 0.25 m cells stays a few million
cells, so a route is found within a tick's budget."""

MIN_RATE_HZ = 0.1
"""The slowest tick rate (Hz): one tick is at most 10 s of the world."""

MAX_RATE_HZ = 1000.0
"""The fastest tick rate (Hz)."""

MAX_DURATION = 1e6
"""The longest run (simulated seconds, about 11.6 days)."""

MAX_TICKS = 10**9
"""The most ticks one run can be asked for."""

__all__ = [
    "MAX_DURATION",
    "MAX_FLOOR_SIDE",
    "MAX_MAGNITUDE",
    "MAX_RATE_HZ",
    "MAX_TICKS",
    "MIN_RATE_HZ",
]
