"""The world moves a precomputed disc onto each sensed obstacle instead of buffering a
point every tick; the polygon must be the one buffering gives, vertex for vertex."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import Point

from sim.world.scenario import Scenario, load_scenario
from sim.world.world import _Geometry


@cache
def _warehouse() -> Scenario:
    return load_scenario("warehouse")  # loading it is 60 ms: once, not per example


centre = st.floats(-500, 500, allow_nan=False) | st.integers(-500, 500).map(float)


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(centre, centre, st.floats(0.01, 5, allow_nan=False))
def test_a_moved_footprint_is_the_buffered_point(x: float, y: float, radius: float) -> None:
    scenario = _warehouse()
    obstacles = [o.model_copy(update={"radius": radius}) for o in scenario.moving_obstacles]
    geometry = _Geometry(scenario.model_copy(update={"moving_obstacles": obstacles}))
    assert geometry.footprint(0, x, y).wkb == Point(x, y).buffer(radius).wkb
