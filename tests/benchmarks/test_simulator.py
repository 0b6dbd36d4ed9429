"""The simulator benchmark's profile names every part of the loop's tick.

Nothing here times anything: the figures themselves come from ``python -m benchmarks``.
"""

from __future__ import annotations

import pytest

from benchmarks.simulator import profile_simulator


def test_every_part_of_the_tick_shows_in_the_profile_and_the_parts_add_up() -> None:
    profile = profile_simulator(ticks=20)
    assert profile["ticks"] == 20
    parts = profile["share_of_tick_percent"]
    # each of these runs on every tick of the default scenario: a share of 0 is a part
    # the profile failed to find (as world sensing once was, matched by a stale path)
    for label, share in parts.items():
        assert share is not None and share > 0.0, label
    assert sum(parts.values()) == pytest.approx(100.0, abs=0.5)
    for label, share in profile["within_tick_percent"].items():
        assert share is not None and 0.0 < share < 100.0, label
