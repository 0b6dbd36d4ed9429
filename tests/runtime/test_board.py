"""The state board and deep freezing at the write."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from runtime import FreezeError, FrozenDict, SimClock, StateBoard


@pytest.fixture
def board() -> StateBoard:
    return StateBoard(clock=SimClock(start=10.0))


def test_reading_carries_stamp_ttl_source_seq(board: StateBoard) -> None:
    r = board.write("pose", (1.0, 2.0, 0.0), ttl=0.5, source="sensor")
    assert (r.key, r.value, r.stamp, r.ttl, r.source, r.seq) == (
        "pose",
        (1.0, 2.0, 0.0),
        10.0,
        0.5,
        "sensor",
        1,
    )
    assert board.read("pose") == r
    assert board.read("nothing") is None


def test_staleness_is_strictly_after_ttl(board: StateBoard) -> None:
    r = board.write("pose", 1, ttl=0.5)
    assert not r.is_stale(10.5)
    assert r.is_stale(10.5001)
    assert not board.write("goal:x", 1).is_stale(1e9)


def test_seq_grows_with_every_write_and_delete(board: StateBoard) -> None:
    board.write("a", 1)
    board.write("a", 2)
    assert board.seq == 2
    assert board.delete("a")
    assert board.seq == 3
    assert not board.delete("a")
    assert board.seq == 3


def test_keys_with_globs(board: StateBoard) -> None:
    for key in ["goal:deliver:1", "goal:deliver:2", "goal:charge", "goals", "safety:hv", "pose"]:
        board.write(key, 0)
    assert board.keys("goal:*") == ("goal:charge", "goal:deliver:1", "goal:deliver:2")
    assert board.keys("goal:deliver:?") == ("goal:deliver:1", "goal:deliver:2")
    assert board.keys("pose") == ("pose",)
    assert board.keys("nope") == ()
    assert board.keys("*") == tuple(sorted(board.keys("*")))
    assert len(board.keys()) == 6


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["w", "d"]),
            st.text(alphabet="ab:*", min_size=1, max_size=5).filter(lambda k: "*" not in k),
        ),
        max_size=30,
    ),
    st.text(alphabet="ab:*?", min_size=1, max_size=5),
)
def test_keys_equal_a_scan(ops: list[tuple[str, str]], pattern: str) -> None:
    import fnmatch

    board = StateBoard(clock=SimClock())
    for op, key in ops:
        if op == "w":
            board.write(key, 1)
        else:
            board.delete(key)
    live = sorted(board.keys())
    assert list(board.keys(pattern)) == [k for k in live if fnmatch.fnmatchcase(k, pattern)]


def test_values_are_deep_frozen(board: StateBoard) -> None:
    source = {"route": [[0, 0], [1, 1]], "tags": {"a"}, "grid": np.zeros((2, 2))}
    value = board.write("plan", source).value
    assert isinstance(value, FrozenDict)
    assert value["route"] == ((0, 0), (1, 1))
    assert value["tags"] == frozenset({"a"})
    with pytest.raises(TypeError):
        value["route"] = ()  # type: ignore[index]
    with pytest.raises(ValueError):
        value["grid"][0, 0] = 1.0
    source["route"].append([2, 2])
    source["grid"][0, 0] = 5.0
    assert board.value("plan")["route"] == ((0, 0), (1, 1))
    assert board.value("plan")["grid"][0, 0] == 0.0


class Pose(BaseModel):
    x: float
    y: float
    history: list[float] = []


def test_pydantic_model_becomes_frozen(board: StateBoard) -> None:
    pose = Pose(x=1, y=2, history=[1.0])
    value = board.write("pose", pose).value
    assert (value.x, value.y, value.history) == (1, 2, (1.0,))
    with pytest.raises(Exception, match="frozen"):
        value.x = 5
    pose.x = 9
    assert board.value("pose").x == 1


def test_unfreezable_value_refused_naming_key_and_type(board: StateBoard) -> None:
    class Handle:
        pass

    with pytest.raises(FreezeError, match=r"key 'robot:handle'.*Handle"):
        board.write("robot:handle", {"h": Handle()})
    with pytest.raises(TypeError, match="not frozen"):
        board.write("x", dataclasses.make_dataclass("D", ["a"])(1))
    assert board.read("robot:handle") is None
    assert board.seq == 0


@pytest.mark.parametrize("key", ["", "goal:*", "a b"])
def test_bad_keys_refused(board: StateBoard, key: str) -> None:
    with pytest.raises(ValueError, match="board key"):
        board.write(key, 1)


def test_bad_ttl_refused(board: StateBoard) -> None:
    with pytest.raises(ValueError, match="ttl"):
        board.write("pose", 1, ttl=0)


def test_two_boards_share_nothing() -> None:
    a, b = StateBoard(clock=SimClock()), StateBoard(clock=SimClock())
    a.write("k", 1)
    assert b.read("k") is None and b.seq == 0


def test_frozen_values_stay_frozen_through_pickle() -> None:
    import pickle

    value: Any = freeze_value({"grid": np.ones(2), "nested": {"a": [1]}})
    back = pickle.loads(pickle.dumps(value))
    assert back["nested"] == {"a": (1,)}
    assert np.array_equal(back["grid"], np.ones(2))
    assert not back["grid"].flags.writeable
    with pytest.raises(TypeError):
        back["nested"]["a"] = 2


def freeze_value(value: object) -> object:
    from runtime.freeze import freeze

    return freeze(value)


def test_keys_with_the_highest_code_point_after_the_prefix() -> None:
    import fnmatch

    board = StateBoard(clock=SimClock())
    keys = ["goal:x", "goal:\U0010ffff:y", "a", "a\U0010ffff", "a\U0010ffffb", "ab", "b"]
    for key in keys:
        board.write(key, 1)
    for pattern in ["goal:*", "a*", "a*b", "a?", "a[!x]*", "\U0010ffff*", "*"]:
        assert board.keys(pattern) == tuple(
            k for k in sorted(keys) if fnmatch.fnmatchcase(k, pattern)
        ), pattern


def test_ttl_takes_real_numbers_not_bools() -> None:
    board = StateBoard(clock=SimClock())
    assert board.write("k", 1, ttl=np.float32(0.5)).ttl == np.float32(0.5)
    with pytest.raises(ValueError, match="ttl"):
        board.write("k", 1, ttl=True)
