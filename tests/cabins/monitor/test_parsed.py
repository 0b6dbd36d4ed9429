"""Values parsed once per change: a value equal to the last one (a shape vertex by vertex)
is not parsed again; one that differs, or that cannot be compared, is."""

from __future__ import annotations

from typing import Any

import numpy as np
import shapely
from shapely.geometry import Point, box

from cabins.monitor.parsed import Parsed, private_copy, same


def test_a_value_is_parsed_again_only_when_it_changes() -> None:
    parsed: Parsed[int] = Parsed()
    calls: list[Any] = []

    def parse(value: Any) -> int:
        calls.append(value)
        return len(calls)

    assert parsed.get("k", (1, 2), parse) == 1
    assert parsed.get("k", (1, 2), parse) == 1  # an equal value, another object
    assert parsed.get("k", (1, 3), parse) == 2
    assert parsed.get("other", (1, 3), parse) == 3  # by key
    assert len(calls) == 3


def test_the_cache_is_bounded() -> None:
    parsed: Parsed[str] = Parsed(limit=2)
    for key in "abc":
        parsed.get(key, key, str.upper)
    assert len(parsed._parsed) <= 2


def test_sameness_of_shapes_arrays_and_plain_values() -> None:
    assert same(box(0, 0, 1, 1), box(0, 0, 1, 1))
    assert not same(box(0, 0, 1, 1), box(0, 0, 1, 2))
    assert not same(box(0, 0, 1, 1), ((0, 0), (1, 0), (1, 1), (0, 1)))
    assert not same(np.array([1.0, 2.0]), np.array([1.0, 2.0]))  # ambiguous: parse again
    assert same({"zone": "a"}, {"zone": "a"})


def test_a_private_copy_is_equal_prepared_and_not_the_shared_shape() -> None:
    shared = Point(0, 0).buffer(1.0)
    copied = private_copy(shared)
    assert copied is not shared and same(copied, shared)
    assert shapely.is_prepared(copied) and not shapely.is_prepared(shared)
