"""Fault injection: gates between the world and the runtime, and cabins that crash on cue.

A ``FaultInjector`` applies a ``FaultPlan`` to one simulation: it hides items from
views (through the loop's suppression hook), drops the world's writes to frozen
board keys and hidden map features (through ``GatedBoard`` and ``GatedMap``, which
the world's sensors write through), takes lost map features off the map and puts
them back when the fault ends, drops lost events from cabins' outboxes, and makes
cabins raise (an asynchronous cabin, which gets no view while it decides, raises in
the first decision it starts at or after the crash tick). Every fault that starts or
ends is logged as a ``fault`` event.
"""

from __future__ import annotations

from typing import Any, ClassVar

from runtime import (
    Cabin,
    CabinMap,
    CabinView,
    CabinWrapper,
    EventLog,
    Feature,
    Outbox,
    StateBoard,
)
from runtime.errors import TickworkError
from runtime.patterns import matches
from runtime.snapshot import StateError
from sim.faults.model import Fault, FaultPlan


def _features(value: Any, where: str) -> None:
    """Features taken off the map: id → a ``Feature`` of that id."""
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(f, Feature) and f.id == k for k, f in value.items()
    ):
        raise StateError(f"{where}: not features by id")


class InjectedCrash(TickworkError, RuntimeError):
    """The exception a crash fault makes a cabin raise."""


def _hit(key: str, patterns: list[str]) -> bool:
    return any(matches(key, p) for p in patterns)


class GatedBoard:
    """The board as the world's sensors see it: writes to frozen keys are dropped."""

    _state_types: ClassVar[dict[str, Any]] = {"frozen": list[str], "dropped": int}

    def __init__(self, board: StateBoard) -> None:
        self.board = board
        self.frozen: list[str] = []
        self.dropped = 0

    def write(self, key: str, value: Any, *, ttl: float | None = None, source: str = "") -> Any:
        if self.frozen and _hit(key, self.frozen):
            self.dropped += 1
            return None
        return self.board.write(key, value, ttl=ttl, source=source)

    def delete(self, key: str, *, source: str = "") -> bool:
        if self.frozen and _hit(key, self.frozen):
            self.dropped += 1
            return False
        return self.board.delete(key, source=source)


class GatedMap:
    """The map as the world's sensors see it: hidden features are not added."""

    _state_types: ClassVar[dict[str, Any]] = {"hidden": list[str]}

    def __init__(self, cabin_map: CabinMap) -> None:
        self.cabin_map = cabin_map
        self.hidden: list[str] = []

    def add(self, feature: Feature, *, replace: bool = False) -> None:
        if self.hidden and _hit(feature.id, self.hidden):
            self.cabin_map.discard(feature.id)
            return
        self.cabin_map.add(feature, replace=replace)

    def discard(self, feature_id: str) -> Feature | None:
        return self.cabin_map.discard(feature_id)


class FaultyCabin(CabinWrapper):
    """A cabin under a fault plan: it may crash, and its lost events are dropped. All else
    is the wrapped cabin's (``CabinWrapper``)."""

    _derived = ("plan",)  # the run's input
    _state_types: ClassVar[dict[str, Any]] = {
        "lost_events": int,
        "_last_tick": int | None,
        "_crashed": bool,
    }

    def __init__(self, inner: Cabin, plan: FaultPlan) -> None:
        super().__init__(inner)
        self.plan = plan
        self.lost_events = 0
        self._last_tick: int | None = None
        self._crashed = False

    def latency_share(self) -> float:
        """The wrapped cabin's, for a decision it made (a crash takes no time)."""
        return 0.0 if self._crashed else super().latency_share()

    def step(self, view: CabinView, out: Outbox) -> None:
        self._crashed = False
        # an asynchronous cabin skips the ticks it is deciding on: a crash due at one of
        # them hits its next decision
        since = view.tick if self._last_tick is None else min(self._last_tick + 1, view.tick)
        self._last_tick = view.tick
        due = next(
            (t for t in range(since, view.tick + 1) if self.plan.crashes(t, self.name)), None
        )
        if due is not None:
            self._crashed = True
            at = f"tick {view.tick}" if due == view.tick else f"tick {view.tick} (due at {due})"
            raise InjectedCrash(f"injected crash of {self.name} at {at}")
        self.inner.step(view, out)
        lost = self.plan.lost_events(view.tick)
        if lost:
            kept = [e for e in out.events if not _hit(e.kind, lost)]
            self.lost_events += len(out.events) - len(kept)
            out.events[:] = kept


class FaultInjector:
    """Applies a fault plan to one simulation, tick by tick."""

    _derived = ("plan",)  # the run's input
    _state_types: ClassVar[dict[str, Any]] = {
        "_taken": _features,
        "applied": list[tuple[int, str, str]],
    }

    def __init__(
        self, plan: FaultPlan, *, board: StateBoard, cabin_map: CabinMap, log: EventLog
    ) -> None:
        self.plan = plan
        self.board = GatedBoard(board)
        self.cabin_map = GatedMap(cabin_map)
        self.log = log
        self._taken: dict[str, Feature] = {}
        self.applied: list[tuple[int, str, str]] = []

    def wrap(self, cabins: list[Cabin]) -> list[Cabin]:
        if not self.plan:
            return cabins
        return [FaultyCabin(c, self.plan) for c in cabins]

    def suppress(self, tick: int, cabin: str) -> list[str]:
        return self.plan.suppress(tick, cabin)

    def before_sense(self, tick: int) -> None:
        """Log the faults that start or end now and set the gates for this tick."""
        for fault in self.plan.ending(tick):
            self._log(tick, fault, "end")
        for fault in self.plan.starting(tick):
            self._log(tick, fault, "start")
        self.board.frozen = self.plan.frozen_keys(tick)
        hidden = self.plan.hidden_features(tick)
        self.cabin_map.hidden = hidden
        live = self.cabin_map.cabin_map
        for feature_id, feature in list(self._taken.items()):
            if not _hit(feature_id, hidden):
                del self._taken[feature_id]
                if feature_id not in live and not feature_id.startswith("obstacle:"):
                    live.add(feature)
        if hidden:
            for feature in live.features():
                if _hit(feature.id, hidden):
                    self._taken[feature.id] = feature
                    live.discard(feature.id)

    def _log(self, tick: int, fault: Fault, phase: str) -> None:
        self.applied.append((tick, fault.label, phase))
        self.log.append(
            "fault",
            {
                "fault": fault.label,
                "kind": fault.kind,
                "phase": phase,
                "tick": tick,
                "start": fault.start,
                "end": fault.end,
            },
            tags=("fault",),
        )
