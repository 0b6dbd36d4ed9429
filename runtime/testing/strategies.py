"""Hypothesis strategies for tickwork's own values, for users' property-based tests.

The third thing users of a working-memory runtime do, after writing a spec and a cabin, is
test their eviction policy and their specs over many generated cases. These strategies draw
valid values of the runtime's types, small enough to shrink well:

- ``keys()``: board keys (``goal:a``, ``pose``, ``s:3``, ...) from a small alphabet, so
  patterns match often;
- ``work_items()``: ``WorkItem``\\ s with finite ``last_used`` and importance in [0, 1];
- ``readings()``: (key, value, ttl) triples a ``StateBoard.write`` takes;
- ``events()``: (kind, data) pairs an ``EventLog.append`` takes;
- ``specs()``: ``ContextSpec``\\ s over those keys, with weights, required patterns and,
  drawn or not, a map window and an event window;
- ``small_worlds()``: a ``SmallWorld`` (board values, point features, events, notes) whose
  ``sources()`` builds the board, map and log at a given time.

Requires hypothesis (the ``testing`` extra: ``pip install "tickwork[testing]"``); importing
``runtime.testing`` alone does not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from shapely.geometry import Point

from runtime.board import StateBoard
from runtime.cabin_map import CabinMap, Feature
from runtime.clock import SimClock
from runtime.log import EventLog
from runtime.memory import WorkItem
from runtime.spec import ContextSpec

__all__ = [
    "EVENT_KINDS",
    "FEATURE_KINDS",
    "KEYS",
    "SmallWorld",
    "events",
    "keys",
    "readings",
    "small_worlds",
    "specs",
    "work_items",
]

KEYS = (
    "pose",
    "battery",
    "route",
    "goal:a",
    "goal:b",
    "safety:x",
    "constraint:speed",
    "s:1",
    "s:2",
    "s:3",
    "s:4",
    "s:5",
)
"""The board keys drawn: two pinned by default (``goal:*``, ``safety:*``) and a family
(``s:*``) for globs."""
PATTERNS = ("pose", "battery", "route", "goal:*", "safety:*", "constraint:*", "s:*", "s:1")
FEATURE_KINDS = ("shelf", "obstacle", "dock")
EVENT_KINDS = ("action_done", "action_failed", "alarm")

_TIMES = st.floats(0.0, 100.0, allow_nan=False, allow_infinity=False)
_WEIGHTS = st.floats(0.0, 1.0, allow_nan=False)
_VALUES = st.one_of(
    st.integers(-1000, 1000),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.text(max_size=8),
    st.tuples(st.floats(-50, 50, allow_nan=False), st.floats(-50, 50, allow_nan=False)),
)


def keys() -> st.SearchStrategy[str]:
    """A board key from ``KEYS``."""
    return st.sampled_from(KEYS)


@st.composite
def work_items(
    draw: st.DrawFn,
    *,
    key: st.SearchStrategy[str] | None = None,
    times: st.SearchStrategy[float] = _TIMES,
) -> WorkItem:
    """A ``WorkItem`` with a drawn importance, ``last_used`` (finite) and value."""
    return WorkItem(
        key=draw(key if key is not None else keys()),
        value=draw(_VALUES),
        importance=draw(_WEIGHTS),
        last_used=draw(times),
    )


def readings() -> st.SearchStrategy[tuple[str, Any, float | None]]:
    """``(key, value, ttl)`` for ``StateBoard.write(key, value, ttl=ttl)``; ttl None or
    positive."""
    ttls = st.one_of(st.none(), st.floats(0.1, 30.0, allow_nan=False))
    return st.tuples(keys(), _VALUES, ttls)


def events() -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """``(kind, data)`` for ``EventLog.append(kind, data)``."""
    data = st.dictionaries(st.sampled_from(("task", "reason", "n")), _VALUES, max_size=3)
    return st.tuples(st.sampled_from(EVENT_KINDS), data)


@st.composite
def specs(draw: st.DrawFn, *, name: str | None = None) -> ContextSpec:
    """A valid ``ContextSpec`` over ``KEYS``: board patterns, weights, required patterns
    among them, and, drawn, a map window around ``pose`` and an event window."""
    chosen = draw(st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=5, unique=True))
    weight_keys = [*chosen, "map:*", "event:*"]
    weights = draw(st.dictionaries(st.sampled_from(weight_keys), _WEIGHTS, max_size=4))
    required = draw(st.lists(st.sampled_from(chosen), max_size=2, unique=True))
    settings: dict[str, Any] = {}
    if draw(st.booleans()):
        settings |= {
            "map_center": "pose",
            "map_radius": draw(st.floats(0.5, 20.0, allow_nan=False)),
            "map_limit": draw(st.one_of(st.none(), st.integers(1, 8))),
        }
    if draw(st.booleans()):
        settings |= {
            "event_window": draw(st.floats(0.5, 20.0, allow_nan=False)),
            "event_limit": draw(st.integers(1, 8)),
        }
    return ContextSpec(
        name=name if name is not None else draw(st.sampled_from(("a", "b", "c"))),
        board_keys=tuple(chosen),
        weights=weights,
        default_weight=draw(_WEIGHTS),
        required=tuple(required),
        **settings,
    )


@dataclass(frozen=True)
class SmallWorld:
    """What a world holds at one freeze: board values, point features ``(id, x, y, kind)``,
    events ``(kind, data)`` and notes (scratchpad keys)."""

    board: dict[str, Any]
    features: tuple[tuple[str, float, float, str], ...]
    events: tuple[tuple[str, dict[str, Any]], ...]
    notes: tuple[str, ...]

    def sources(self, now: float = 10.0) -> tuple[SimClock, StateBoard, CabinMap, EventLog]:
        """A clock at ``now`` and a board, map and log holding this world (board values and
        features written at 0, events logged at ``now``)."""
        clock = SimClock()
        board = StateBoard(clock=clock)
        cabin_map = CabinMap()
        log = EventLog(clock=clock)
        for key, value in self.board.items():
            board.write(key, value)
        for fid, x, y, kind in self.features:
            cabin_map.add(Feature(fid, Point(x, y), kind))
        clock.sleep_until(now)
        for kind, data in self.events:
            log.append(kind, data)
        return clock, board, cabin_map, log


@st.composite
def small_worlds(draw: st.DrawFn, *, max_features: int = 12) -> SmallWorld:
    """A ``SmallWorld`` on a 40 x 40 m floor around the origin, the robot's ``pose`` on the
    board when drawn."""
    board: dict[str, Any] = draw(st.dictionaries(keys(), _VALUES, max_size=len(KEYS)))
    if "pose" in board or draw(st.booleans()):
        x, y = draw(st.tuples(st.floats(-20, 20), st.floats(-20, 20)))
        board["pose"] = (x, y, 0.0)
    coords = st.floats(-20, 20, allow_nan=False).filter(math.isfinite)
    features = draw(
        st.lists(st.tuples(coords, coords, st.sampled_from(FEATURE_KINDS)), max_size=max_features)
    )
    return SmallWorld(
        board=board,
        features=tuple((f"f{n}", x, y, kind) for n, (x, y, kind) in enumerate(features)),
        events=tuple(draw(st.lists(events(), max_size=8))),
        notes=tuple(draw(st.lists(st.sampled_from(("n:1", "n:2", "n:3")), unique=True))),
    )
