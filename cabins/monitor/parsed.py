"""Parsed values, kept while the board value they came from stays the same.

Zones and routes change seldom, and a shape is costly to build: the monitor parses a value
again only when the value changes, and compares values the cheap way first (the same
object), then by equality (shapes exactly, vertex by vertex).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

import shapely
from shapely.geometry.base import BaseGeometry

__all__ = ["Parsed", "private_copy", "same"]

_T = TypeVar("_T")


class Parsed(Generic[_T]):
    """What values parse to, by key, parsed again only when the key's value changes."""

    __slots__ = ("_limit", "_parsed")

    def __init__(self, limit: int = 256) -> None:
        self._limit = limit
        self._parsed: dict[str, tuple[Any, _T]] = {}

    def get(self, key: str, source: Any, parse: Callable[[Any], _T]) -> _T:
        hit = self._parsed.get(key)
        if hit is not None and (hit[0] is source or same(hit[0], source)):
            return hit[1]
        parsed = parse(source)
        if len(self._parsed) >= self._limit:
            self._parsed.clear()
        self._parsed[key] = (source, parsed)
        return parsed


def same(a: Any, b: Any) -> bool:
    """Whether two board values are equal (shapes: exactly, vertex by vertex)."""
    if isinstance(a, BaseGeometry) or isinstance(b, BaseGeometry):
        return (
            isinstance(a, BaseGeometry)
            and isinstance(b, BaseGeometry)
            and bool(shapely.equals_exact(a, b, 0.0))
        )
    try:
        return bool(a == b)
    except ValueError:
        return False


def private_copy(geometry: Any) -> BaseGeometry:
    """A prepared copy of ``geometry``: a view's features are shared with other cabins,
    so the monitor prepares its own copy, not theirs."""
    copied: BaseGeometry = shapely.from_wkb(shapely.to_wkb(geometry))
    shapely.prepare(copied)
    return copied
