"""``Solids.gaps`` prunes by bounding boxes and must still give every pair's minimum."""

from __future__ import annotations

import numpy as np
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import Polygon, box

from cabins.clearance import Solids

coordinate = st.floats(-20, 20, allow_nan=False)
size = st.floats(0.01, 5, allow_nan=False)


@st.composite
def shapes(draw: st.DrawFn) -> shapely.Geometry:
    x, y, w, h = draw(coordinate), draw(coordinate), draw(size), draw(size)
    if draw(st.booleans()):
        return box(x, y, x + w, y + h)
    lean = draw(st.floats(-1, 1))
    return Polygon([(x, y), (x + w, y + lean), (x + w / 2, y + h)])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(shapes(), min_size=1, max_size=8),
    st.lists(st.tuples(coordinate, coordinate), min_size=1, max_size=30),
)
def test_gaps_equal_the_minimum_over_every_solid_exactly(
    solids: list[shapely.Geometry], points: list[tuple[float, float]]
) -> None:
    found = Solids(np.array(solids, dtype=object), tuple(str(i) for i in range(len(solids))))
    grid = shapely.points(np.asarray(points, dtype=float))
    every_pair = shapely.distance(grid[:, None], found.shapes[None, :]).min(axis=1)
    assert np.array_equal(found.gaps(points), every_pair)


def test_gaps_without_solids_are_infinite() -> None:
    none = Solids.of(())
    assert np.all(np.isinf(none.gaps([(0.0, 0.0), (1.0, 2.0)])))
