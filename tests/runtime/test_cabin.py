"""The cabin wrapper base: a wrapper is its inner cabin, but for what it changes."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from runtime import (
    Asynchronous,
    Cabin,
    CabinView,
    CabinWrapper,
    ContextSpec,
    DropLate,
    Outbox,
    RecheckLate,
)
from runtime.cabin import innermost, late_policy, latency_share, recheck, timing_of
from runtime.testing import make_view, run_step
from runtime.timing import Timing

SPEC = ContextSpec(name="inner", board_keys=("pose",))


class Declaring:
    """A cabin that declares every optional member, and records its calls."""

    def __init__(self) -> None:
        self.steps: list[int] = []
        self.rechecked: list[int] = []
        self.timing = Timing(mode="async", max_age=3, latency=0.2)
        self.uses_notes = True

    @property
    def name(self) -> str:
        return "inner"

    @property
    def spec(self) -> ContextSpec:
        return SPEC

    def step(self, view: CabinView, out: Outbox) -> None:
        self.steps.append(view.tick)
        out.write("pose", view.tick)

    def recheck(self, decided: CabinView, current: CabinView, out: Outbox) -> bool:
        self.rechecked.append(current.tick)
        return current.tick % 2 == 0

    def latency_share(self) -> float:
        return 0.25

    late_policy = RecheckLate()


class Bare:
    """A cabin with nothing but the protocol."""

    name = "bare"
    spec = ContextSpec(name="bare", board_keys=("pose",))

    def step(self, view: CabinView, out: Outbox) -> None:
        out.emit("stepped")


class Quick(CabinWrapper):
    """A wrapper that changes one thing: its decisions take no time."""

    def latency_share(self) -> float:
        return 0.0


def _view(tick: int, pose: float = 1.0) -> CabinView:
    return make_view(SPEC, board={"pose": pose}, tick=tick)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_a_wrapper_of_any_depth_is_its_inner_cabin(depth: int) -> None:
    inner = Declaring()
    cabin: Cabin = inner
    for _ in range(depth):
        cabin = CabinWrapper(cabin)
    assert isinstance(cabin, Cabin)
    assert innermost(cabin) is inner and innermost(inner) is inner
    assert cabin.name == "inner" and cabin.spec is SPEC
    assert getattr(cabin, "uses_notes", None) is True
    assert timing_of(cabin) is inner.timing
    assert latency_share(cabin) == 0.25
    out = run_step(cabin, _view(7))
    assert inner.steps == [7] and [w.value for w in out.writes] == [7]
    assert recheck(cabin, _view(7), _view(8), out) is True
    assert recheck(cabin, _view(7), _view(9), out) is False
    assert inner.rechecked == [8, 9]
    assert late_policy(cabin) is Declaring.late_policy  # not the timing's on_late (drop)


def test_a_wrapper_of_a_bare_cabin_gives_the_defaults() -> None:
    wrapped = CabinWrapper(CabinWrapper(Bare()))
    assert wrapped.uses_notes is False
    assert wrapped.timing == Timing()  # the spec's, which declares none
    assert wrapped.latency_share() == 1.0
    assert isinstance(late_policy(wrapped), DropLate)  # the timing's on_late
    out = run_step(wrapped, make_view(Bare.spec, board={"pose": 1.0}))
    assert [e.kind for e in out.events] == ["stepped"]
    same, moved = (make_view(Bare.spec, board={"pose": p}) for p in (1.0, 2.0))
    assert wrapped.recheck(same, make_view(Bare.spec, board={"pose": 1.0}), out) is True
    assert wrapped.recheck(same, moved, out) is False  # the view changed: by same_view


def test_what_a_wrapper_changes_holds_through_the_wrappers_around_it() -> None:
    inner = Declaring()
    quick = Quick(inner)
    assert latency_share(CabinWrapper(quick)) == 0.0  # the change, seen from outside
    assert timing_of(CabinWrapper(quick)) is inner.timing  # the rest, the inner cabin's
    late = Asynchronous(CabinWrapper(quick), max_age=9)
    assert late.timing.max_age == 9 and late.timing.mode == "async"
    assert late.timing.latency == 0.2  # from the innermost cabin's timing
    assert late.latency_share() == 0.0 and late.uses_notes is True and late.name == "inner"


@pytest.mark.parametrize(
    ("make", "wins"),
    [
        (lambda inner: Asynchronous(inner), "inner"),
        (lambda inner: Asynchronous(inner, max_age=9), "inner"),
        (lambda inner: Asynchronous(inner, on_late="drop"), "drop"),
        (lambda inner: Asynchronous(inner, on_late="recheck"), "recheck"),
        (lambda inner: Asynchronous(inner, timing=Timing(max_age=2)), "drop"),
        (lambda inner: Asynchronous(inner, timing=Timing(on_late="recheck")), "recheck"),
        (lambda inner: CabinWrapper(Asynchronous(inner, on_late="drop")), "drop"),
        (lambda inner: Asynchronous(CabinWrapper(inner), on_late="drop"), "drop"),
        (lambda inner: Asynchronous(CabinWrapper(inner)), "inner"),
    ],
)
def test_an_asynchronous_wrapper_given_a_timing_or_on_late_decides_late_decisions(
    make: Any, wins: str
) -> None:
    """The inner cabin's own late policy (``RecheckLate``, its timing saying ``drop``)
    holds unless the ``Asynchronous`` around it was given a ``timing`` or an ``on_late``:
    then that timing's ``on_late`` does, as the wrapper's timing says."""
    inner = Declaring()
    wrapped = make(inner)
    policy = late_policy(wrapped)
    if wins == "inner":
        assert policy is Declaring.late_policy
        assert wrapped.late_policy is Declaring.late_policy
    else:
        assert policy is not Declaring.late_policy
        assert policy.name == wins == timing_of(wrapped).on_late
        assert isinstance(policy, RecheckLate if wins == "recheck" else DropLate)
        assert wrapped.late_policy is None


def test_a_wrapper_pickles_with_its_inner_cabin() -> None:
    wrapped = Asynchronous(CabinWrapper(Declaring()), deadline=0.5)
    copy = pickle.loads(pickle.dumps(wrapped))
    assert copy.timing == wrapped.timing and copy.name == "inner"
    assert isinstance(copy.inner, CabinWrapper) and isinstance(copy.inner.inner, Declaring)
