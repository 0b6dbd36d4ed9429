"""The executor's speed zones: the cap of the zones ahead, each value parsed once, and
the cap while the constraints are hidden."""

from __future__ import annotations

import math
import pickle
from collections.abc import Sequence
from typing import Any

import pytest
from structlog.testing import capture_logs

from cabins.executor.seen import ViewReader
from cabins.executor.settings import ExecutorSettings
from cabins.executor.track import Track
from cabins.executor.zones import SpeedZones
from runtime import load_spec
from runtime.memory import WorkItem
from runtime.testing import make_view
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "executor.toml")
BAY: dict[str, Any] = {
    "zone": "bay",
    "polygon": ((10.0, -2.0), (14.0, -2.0), (14.0, 2.0), (10.0, 2.0)),
    "max_speed": 0.5,
}
TRACK = Track(((0.0, 0.0), (20.0, 0.0)))


def items(**zones: Any) -> Sequence[tuple[str, WorkItem]]:
    board = {f"constraint:speed:{name}": value for name, value in zones.items()}
    return ViewReader().read(make_view(SPEC, board=board)).speed_zones


def zones(*, slow_when_blind: bool = True) -> SpeedZones:
    return SpeedZones(ExecutorSettings(blind_max_speed=0.8), slow_when_blind=slow_when_blind)


def test_the_cap_is_that_of_a_zone_met_within_the_stopping_distance() -> None:
    cap = zones().cap
    seen = items(bay=BAY)
    assert cap(seen, {}, TRACK, 11.0, (11.0, 0.0), 1.0) == pytest.approx(0.45)  # inside
    assert cap(seen, {}, TRACK, 8.0, (8.0, 0.0), 2.5) == pytest.approx(0.45)  # entering
    assert cap(seen, {}, TRACK, 5.0, (5.0, 0.0), 2.5) == math.inf  # far before it
    assert cap(seen, {}, TRACK, 15.0, (15.0, 0.0), 2.5) == math.inf  # past it


def test_hidden_constraints_cap_the_speed_at_the_lowest_limit_seen() -> None:
    blind = {"constraint:*": "fault"}
    fresh = zones()
    assert fresh.cap((), blind, TRACK, 0.0, (0.0, 0.0), 1.0) == 0.8
    assert fresh.cap((), {"constraint:*": "absent"}, TRACK, 0.0, (0.0, 0.0), 1.0) == math.inf
    fresh.cap(items(bay=BAY), {}, TRACK, 0.0, (0.0, 0.0), 1.0)  # seen once, far off
    assert fresh.cap((), blind, TRACK, 0.0, (0.0, 0.0), 1.0) == pytest.approx(0.45)
    holding = zones(slow_when_blind=False)
    assert holding.cap((), blind, TRACK, 0.0, (0.0, 0.0), 1.0) == math.inf


def test_a_malformed_zone_is_logged_once_and_ignored() -> None:
    bad = items(bay={**BAY, "polygon": "nonsense"})
    cap = zones().cap
    with capture_logs() as logs:
        for _ in range(3):
            assert cap(bad, {}, TRACK, 11.0, (11.0, 0.0), 1.0) == math.inf
    assert [entry["event"] for entry in logs] == ["executor.bad_speed_zone"]


def test_speed_zones_pickle_with_what_they_learnt() -> None:
    learnt = zones()
    learnt.cap(items(bay=BAY), {}, TRACK, 0.0, (0.0, 0.0), 1.0)
    copy = pickle.loads(pickle.dumps(learnt))
    assert copy.cap((), {"constraint:*": "stale"}, TRACK, 0.0, (0.0, 0.0), 1.0) == pytest.approx(
        0.45
    )
