"""Tests for the event log: ordering, windowed queries, filters, retention, freezing."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from runtime.clock import SimClock
from runtime.freeze import FreezeError, FrozenDict
from runtime.log import Event, EventLog


def _filled(stamps: list[float], kind: str = "k", **kwargs: Any) -> EventLog:
    log = EventLog(**kwargs)
    for stamp in stamps:
        log.append(kind, stamp=stamp)
    return log


def _seqs(events: tuple[Event, ...]) -> list[int]:
    return [e.seq for e in events]


# --- append and seq -----------------------------------------------------------------------


def test_append_numbers_events_from_one_and_stamps_from_clock() -> None:
    clock = SimClock(start=2.0)
    log = EventLog(clock=clock)
    assert log.seq == 0
    assert len(log) == 0
    first = log.append("pose", {"x": 1}, tags=("nav",))
    clock.advance(0.5)
    second = log.append("pose")
    assert (first.seq, first.stamp, first.kind, first.tags) == (1, 2.0, "pose", frozenset({"nav"}))
    assert (second.seq, second.stamp, second.data) == (2, 2.5, None)
    assert log.seq == 2
    assert len(log) == 2
    assert log.get(1) == first
    assert log.get(2) == second


def test_explicit_stamp_overrides_clock() -> None:
    log = EventLog(clock=SimClock(start=10.0))
    assert log.append("a", stamp=12.0).stamp == 12.0


def test_no_stamp_and_no_clock_is_refused() -> None:
    log = EventLog()
    with pytest.raises(ValueError, match="no clock"):
        log.append("a")
    assert log.seq == 0


@pytest.mark.parametrize("kind", ["", None, 3])
def test_bad_kind_is_refused(kind: Any) -> None:
    log = EventLog()
    with pytest.raises((ValueError, TypeError), match="kind"):
        log.append(kind, stamp=0.0)
    assert log.seq == 0


@pytest.mark.parametrize("stamp", [float("nan"), float("inf"), "1.0", True])
def test_bad_stamp_is_refused(stamp: Any) -> None:
    log = EventLog()
    with pytest.raises((ValueError, TypeError), match="stamp"):
        log.append("a", stamp=stamp)
    assert log.seq == 0


def test_a_single_string_as_tags_is_refused() -> None:
    log = EventLog()
    with pytest.raises(TypeError, match="tags"):
        log.append("a", stamp=0.0, tags="urgent")
    with pytest.raises(TypeError, match="tags"):
        log.append("a", stamp=0.0, tags=[1])  # type: ignore[list-item]
    assert log.seq == 0


def test_events_are_slotted_and_frozen() -> None:
    event = EventLog().append("a", stamp=0.0)
    assert not hasattr(event, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.kind = "b"  # type: ignore[misc]


# --- stamps never go backwards -------------------------------------------------------------


def test_earlier_stamp_is_refused_naming_both_stamps_and_log_is_unchanged() -> None:
    log = EventLog()
    log.append("a", stamp=1.0)
    log.append("b", stamp=5.0)
    before = (log.seq, len(log), log.query(0.0, limit=None), log.last(), log.last("c"))
    with pytest.raises(ValueError, match=r"4\.5.*5\.0"):
        log.append("c", [1], stamp=4.5)
    assert (log.seq, len(log), log.query(0.0, limit=None), log.last(), log.last("c")) == before
    assert log.append("c", stamp=5.0).seq == 3  # equal stamps are fine


def test_clock_going_back_is_refused_too() -> None:
    clock = SimClock(start=3.0)
    log = EventLog(clock=clock)
    log.append("a")
    with pytest.raises(ValueError, match="never go backwards"):
        log.append("a", stamp=2.0)
    assert log.seq == 1


# --- queries --------------------------------------------------------------------------------


def test_query_returns_newest_limit_oldest_first() -> None:
    log = _filled([float(i) for i in range(10)])
    assert _seqs(log.query(0.0, limit=3)) == [8, 9, 10]
    assert _seqs(log.query(0.0, until=4.0, limit=2)) == [4, 5]
    assert _seqs(log.query(0.0, limit=None)) == list(range(1, 11))
    assert len(log.query(0.0)) == 10  # the default limit is 16


def test_query_bounds_are_inclusive() -> None:
    log = _filled([1.0, 2.0, 2.0, 3.0, 4.0])
    assert _seqs(log.query(2.0, 3.0, limit=None)) == [2, 3, 4]
    assert _seqs(log.query(2.0, 2.0, limit=None)) == [2, 3]
    assert _seqs(log.query(4.0, limit=None)) == [5]
    assert log.query(4.5) == ()
    assert log.query(3.0, 2.0) == ()  # an empty window, not an error


def test_query_filters_by_kinds_and_tags() -> None:
    log = EventLog()
    log.append("move", stamp=1.0, tags=("nav",))
    log.append("action_failed", {"action": "pick"}, stamp=2.0, tags=("arm", "urgent"))
    log.append("move", stamp=3.0)
    log.append("action_failed", stamp=4.0, tags=("nav",))
    log.append("charge", stamp=5.0, tags=("urgent",))
    assert _seqs(log.query(0.0, kinds={"action_failed"})) == [2, 4]
    assert _seqs(log.query(0.0, kinds=["move", "charge"])) == [1, 3, 5]
    assert _seqs(log.query(0.0, kinds={"move", "action_failed"}, limit=2)) == [3, 4]
    assert _seqs(log.query(0.0, tags={"urgent"})) == [2, 5]
    assert _seqs(log.query(0.0, tags={"urgent", "nav"}, limit=2)) == [4, 5]
    assert _seqs(log.query(0.0, kinds={"action_failed"}, tags={"urgent"})) == [2]
    assert _seqs(log.query(2.5, kinds={"action_failed"}, tags={"nav"})) == [4]
    assert log.query(0.0, kinds={"unknown"}) == ()
    assert log.query(0.0, kinds=()) == ()
    assert log.query(0.0, tags=()) == ()


@pytest.mark.parametrize("limit", [0, -1, 1.5, True])
def test_bad_limit_is_refused(limit: Any) -> None:
    log = _filled([0.0])
    with pytest.raises(ValueError, match="limit"):
        log.query(0.0, limit=limit)


def test_bad_query_arguments_are_refused() -> None:
    log = _filled([0.0])
    with pytest.raises(TypeError, match="kinds"):
        log.query(0.0, kinds="move")
    with pytest.raises(ValueError, match="since"):
        log.query(float("nan"))
    with pytest.raises(TypeError, match="until"):
        log.query(0.0, "later")  # type: ignore[arg-type]


def test_last_and_get() -> None:
    log = EventLog()
    assert log.last() is None
    assert log.get(1) is None
    log.append("a", stamp=1.0)
    log.append("b", stamp=2.0)
    log.append("a", stamp=3.0)
    last = log.last()
    last_b = log.last("b")
    assert last is not None and last.seq == 3
    assert last_b is not None and last_b.seq == 2
    assert log.last("c") is None
    assert log.get(0) is None
    assert log.get(4) is None


# --- listeners and the lock -------------------------------------------------------------------


def test_listeners_see_each_appended_event_in_order() -> None:
    log = EventLog()
    seen: list[Event] = []
    log.add_listener(seen.append)
    log.append("a", stamp=1.0)
    with pytest.raises(ValueError):
        log.append("b", stamp=0.0)
    log.append("c", stamp=2.0)
    assert [(e.seq, e.kind) for e in seen] == [(1, "a"), (2, "c")]


def _ignore(event: Event) -> None:
    pass


class _SpyLock:
    """An RLock that counts how often it is entered."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.entered = 0
        self.depth = 0

    def __enter__(self) -> bool:
        self._lock.acquire()
        self.entered += 1
        self.depth += 1
        return True

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.depth -= 1
        self._lock.release()


def test_every_public_method_takes_the_given_lock() -> None:
    spy = _SpyLock()
    log = EventLog(lock=spy, retention=2)  # type: ignore[arg-type]
    assert log.lock is spy  # type: ignore[comparison-overlap]
    calls: list[Callable[[], object]] = [
        lambda: log.append("a", stamp=1.0),
        lambda: log.query(0.0),
        lambda: log.last(),
        lambda: log.get(1),
        lambda: log.seq,
        lambda: log.dropped,
        lambda: len(log),
        lambda: log.add_listener(_ignore),
    ]
    for call in calls:
        before = spy.entered
        call()
        assert spy.entered > before
        assert spy.depth == 0


def test_a_lock_is_created_when_none_is_given() -> None:
    log = EventLog()
    with log.lock:  # re-entrant: public methods work while it is held
        log.append("a", stamp=0.0)
        assert log.seq == 1


# --- freezing -------------------------------------------------------------------------------


def test_data_is_deep_frozen() -> None:
    items = [1, 2]
    event = EventLog().append("a", {"items": items, "seen": {"x"}}, stamp=0.0)
    assert isinstance(event.data, FrozenDict)
    assert event.data["items"] == (1, 2)
    with pytest.raises(AttributeError):
        event.data["items"].append(3)
    with pytest.raises(TypeError):
        event.data["new"] = 1  # type: ignore[index]
    items.append(3)  # the caller's list is not shared with the log
    assert event.data["items"] == (1, 2)


def test_unfreezable_data_is_refused_naming_the_kind() -> None:
    log = EventLog()
    with pytest.raises(FreezeError, match="action_failed") as info:
        log.append("action_failed", {"handle": object()}, stamp=0.0)
    assert isinstance(info.value, TypeError)
    assert log.seq == 0
    assert log.last() is None


# --- retention ------------------------------------------------------------------------------


def test_retention_drops_oldest_in_chunks_counts_them_and_warns() -> None:
    log = EventLog(retention=8)  # drops once it holds more than 10, down to 8
    with capture_logs() as logs:
        for i in range(10):
            log.append("old" if i < 3 else "new", stamp=float(i))
        assert (len(log), log.dropped, logs) == (10, 0, [])
        log.append("new", stamp=10.0)
    assert (len(log), log.dropped, log.seq) == (8, 3, 11)
    warnings = [e for e in logs if e["event"] == "event_log_retention_dropped"]
    assert len(warnings) == 1
    assert warnings[0]["log_level"] == "warning"
    assert (warnings[0]["dropped"], warnings[0]["total_dropped"]) == (3, 3)
    assert log.get(3) is None
    assert log.get(4) is not None
    assert log.last("old") is None
    assert log.query(0.0, kinds={"old"}) == ()
    assert _seqs(log.query(0.0, limit=None)) == list(range(4, 12))

    with capture_logs() as logs:
        for i in range(11, 14):
            log.append("new", stamp=float(i))
    assert (len(log), log.dropped) == (8, 6)
    assert [(e["dropped"], e["total_dropped"]) for e in logs] == [(3, 6)]


@pytest.mark.parametrize("retention", [0, -3, 2.5])
def test_bad_retention_is_refused(retention: Any) -> None:
    with pytest.raises(ValueError, match="retention"):
        EventLog(retention=retention)


# --- property: query equals a brute-force scan -----------------------------------------------

_KINDS = ("a", "b", "c")
_TAGS = ("x", "y", "z")

_entries = st.lists(
    st.tuples(
        st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.5]),  # stamp step: equal stamps are common
        st.sampled_from(_KINDS),
        st.frozensets(st.sampled_from(_TAGS)),
    ),
    max_size=60,
)
_filters = st.tuples(
    st.none() | st.frozensets(st.sampled_from((*_KINDS, "d"))),
    st.none() | st.frozensets(st.sampled_from((*_TAGS, "w"))),
    st.none() | st.integers(min_value=1, max_value=12),
)


def _bounds(stamps: list[float]) -> st.SearchStrategy[float]:
    """Query bounds that often sit exactly on, or just beside, an appended stamp."""
    anywhere = st.integers(min_value=-2, max_value=80).map(lambda n: n / 4)
    if not stamps:
        return anywhere
    near = st.sampled_from(stamps)
    return st.one_of(near, near.map(lambda s: s - 0.25), near.map(lambda s: s + 0.25), anywhere)


def _reference(
    held: list[Event],
    since: float,
    until: float | None,
    kinds: frozenset[str] | None,
    tags: frozenset[str] | None,
    limit: int | None,
) -> tuple[Event, ...]:
    found = [
        e
        for e in held
        if since <= e.stamp
        and (until is None or e.stamp <= until)
        and (kinds is None or e.kind in kinds)
        and (tags is None or e.tags & tags)
    ]
    return tuple(found if limit is None else found[-limit:])


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    entries=_entries,
    retention=st.none() | st.integers(min_value=1, max_value=20),
    data=st.data(),
)
def test_query_matches_a_brute_force_scan(
    entries: list[tuple[float, str, frozenset[str]]],
    retention: int | None,
    data: st.DataObject,
) -> None:
    log = EventLog(retention=retention)
    appended: list[Event] = []
    stamp = 0.0
    with capture_logs():
        for step, kind, tags in entries:
            stamp += step
            appended.append(log.append(kind, {"n": len(appended)}, stamp=stamp, tags=tags))

    assert log.seq == len(appended)
    assert log.dropped + len(log) == len(appended)
    if retention is not None:
        assert min(len(appended), retention) <= len(log) <= retention * 1.25
    held = appended[log.dropped :]

    bounds = _bounds([e.stamp for e in appended])
    for _ in range(data.draw(st.integers(min_value=1, max_value=8), label="queries")):
        since = data.draw(bounds, label="since")
        until = data.draw(st.none() | bounds, label="until")
        kinds, wanted_tags, limit = data.draw(_filters, label="filters")
        expected = _reference(held, since, until, kinds, wanted_tags, limit)
        assert log.query(since, until, kinds=kinds, tags=wanted_tags, limit=limit) == expected
    for which in (None, *_KINDS):
        of_kind = [e for e in held if which is None or e.kind == which]
        assert log.last(which) == (of_kind[-1] if of_kind else None)
    for event in appended:
        assert log.get(event.seq) == (event if event.seq > log.dropped else None)
