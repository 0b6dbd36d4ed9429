"""The executor's track keeps the route's vertices between two arc lengths, in order."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cabins.executor.track import Track

coordinate = st.floats(-50, 50, allow_nan=False)
arc = st.floats(-10, 200, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(coordinate, coordinate), min_size=1, max_size=12), arc, arc)
def test_polyline_keeps_exactly_the_vertices_strictly_between(
    points: list[tuple[float, float]], s0: float, s1: float
) -> None:
    track = Track(points)
    between = [p for p, s in zip(track.points, track.cum, strict=True) if s0 < s < s1]
    assert track.polyline(s0, s1) == [track.point_at(s0), *between, track.point_at(s1)]
