"""Replay: recorded working sets fed back to fresh cabins decide exactly as recorded."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime import CabinView, ContextSpec, Outbox, configure_logging
from runtime.jsonable import to_json
from runtime.recording.format import DECISIONS, EVICTIONS, WORKING_SET
from runtime.recording.reader import Recording
from sim.analysis.replay import ReplayError, ViewBuilder, compare, replay
from sim.faults.model import parse_fault
from sim.run.harness import ExtraCabin, Simulation
from tests.support.paths import ROOT

TICKS = 600
FAULTS = (
    "missing:executor:event:action_failed*@100-300",
    "crash:planner@150",
    "crash:executor@400-405",
    "event-loss:action_*@80-120",
)


def record(path: Path, *, ticks: int = TICKS, **kwargs: Any) -> Path:
    configure_logging(level="critical")
    sim = Simulation("warehouse", seed=0, record=path, **kwargs)
    try:
        sim.run(ticks, until_done=False)
    finally:
        sim.close()
    return path


class Tally:
    """A cabin that counts in a class attribute: a fresh instance does not start over."""

    _counter = itertools.count()

    def __init__(self, spec: ContextSpec) -> None:
        self.spec = spec
        self.name = spec.name

    def step(self, view: CabinView, out: Outbox) -> None:
        if view.tick % 100 == 0:
            out.emit("tally", {"n": next(Tally._counter)})


TALLY_SPEC = ContextSpec(name="tally", board_keys=("pose",))


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(tmp_path_factory.mktemp("clean") / "run.mcap")


@pytest.fixture(scope="module")
def faulted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(
        tmp_path_factory.mktemp("faulted") / "run.mcap", faults=[parse_fault(f) for f in FAULTS]
    )


@pytest.fixture(scope="module")
def tallied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(
        tmp_path_factory.mktemp("tallied") / "run.mcap",
        extra=[ExtraCabin(spec=TALLY_SPEC, factory=Tally)],
    )


@pytest.mark.slow
def test_an_unchanged_run_replays_without_drift(clean: Path) -> None:
    report = replay(clean)
    assert report.ticks == TICKS and (report.first_tick, report.last_tick) == (0, TICKS - 1)
    assert report.cabins == ("planner", "executor", "monitor")
    assert not report.drifted and report.drifts == () and report.skipped == ()


@pytest.mark.slow
def test_a_faulted_run_replays_without_drift(faulted: Path) -> None:
    rec = Recording.open(faulted)
    failed = {
        (t, c)
        for t in (150, 400)
        for c, d in rec.at(DECISIONS, t)[0]["cabins"].items()
        if d["failed"]
    }
    assert failed == {(150, "planner"), (400, "executor")}  # the crashes are in the recording
    report = replay(rec)
    assert report.faults == FAULTS
    assert not report.drifted, [d.describe() for d in report.drifts[:3]]


@pytest.mark.slow
def test_ignoring_the_faults_shows_as_drift_at_the_crashes(
    faulted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sim.analysis.replay

    monkeypatch.setattr(sim.analysis.replay, "recorded_faults", lambda rec: [])
    report = replay(faulted)
    crashes = {(t, "executor") for t in range(400, 405)} | {(150, "planner")}
    assert crashes <= {(d.tick, d.cabin) for d in report.drifts}
    assert all("failed" in d.fields for d in report.drifts if (d.tick, d.cabin) in crashes)


@pytest.mark.slow
def test_a_nondeterministic_cabin_is_caught_where_it_differs(tallied: Path) -> None:
    report = replay(tallied, cabins=[Tally(TALLY_SPEC)])
    assert report.cabins == ("planner", "executor", "monitor", "tally")
    assert report.drift_ticks == [0, 100, 200, 300, 400, 500]
    assert {d.cabin for d in report.drifts} == {"tally"}
    assert all(d.fields == ("events",) for d in report.drifts)
    first = report.drifts[0].differences[0]
    assert first.index == 0 and first.recorded["kind"] == first.replayed["kind"] == "tally"
    assert first.recorded["data"] != first.replayed["data"]


@pytest.mark.slow
def test_a_recorded_cabin_not_given_is_skipped_not_drift(tallied: Path) -> None:
    report = replay(tallied)
    assert report.skipped == ("tally",) and not report.drifted


@pytest.mark.slow
def test_a_changed_cabin_drifts(clean: Path) -> None:
    from cabins.executor import Executor, ExecutorSettings
    from sim.analysis.replay import recorded_specs

    spec = recorded_specs(Recording.open(clean))["executor"]
    report = replay(clean, cabins=[Executor(spec, ExecutorSettings(lookahead=1.3))])
    assert report.drifted and {d.cabin for d in report.drifts} == {"executor"}
    assert "commands" in report.drifts[0].fields


@pytest.mark.slow
def test_an_unknown_cabin_is_refused(clean: Path) -> None:
    with pytest.raises(ReplayError, match="'tally' did not run"):
        replay(clean, cabins=[Tally(TALLY_SPEC)])


@pytest.mark.slow
def test_rebuilt_views_are_what_the_cabins_saw(faulted: Path) -> None:
    rec = Recording.open(faulted)
    message = rec.one(WORKING_SET, 200)
    assert message is not None
    views = ViewBuilder().views(message, rec.one(EVICTIONS, 200))
    executor = views["executor"]
    recorded = message["views"]["executor"]
    assert dict(executor.missing) == recorded["missing"] == {"event:action_failed*": "fault"}
    assert executor.suppressed == ("event:action_failed*",)
    assert list(executor) == list(recorded["items"])
    for key in executor:
        assert to_json(executor[key]) == message["items"][key]["value"]
        assert executor.provenance[key].via == recorded["items"][key]


@pytest.mark.slow
def test_a_view_of_an_item_the_working_set_lacks_is_refused(clean: Path) -> None:
    message = Recording.open(clean).one(WORKING_SET, 10)
    assert message is not None
    message["views"]["planner"]["items"]["ghost"] = "board:ghost"
    with pytest.raises(ReplayError, match="tick 10: cabin 'planner' saw 'ghost'"):
        ViewBuilder().views(message)


def test_a_note_is_rebuilt_under_its_view_key() -> None:
    from runtime.scratchpad import Note

    note = Note("route_hint", ("A1", 2.5), "a hint", None, 3)
    item = {
        "value": to_json(note),
        "importance": 0.5,
        "last_used": 1.0,
        "first_seen": 0.5,
        "source": "note",
        "stamp": None,
        "seq": 3,
    }
    message = {
        "tick": 20,
        "time": 1.0,
        "versions": {"board_seq": 1, "map_version": 0, "log_seq": 0},
        "items": {"note:walker/route_hint": item},
        "views": {
            "walker": {
                "items": {"note:route_hint": "note:scratchpad"},
                "missing": {},
                "suppressed": [],
                "nearby_map": [],
                "corridor_map": [],
                "recent_events": [],
            }
        },
    }
    view = ViewBuilder().views(WORKING_SET.parse(message))["walker"]
    assert view["note:route_hint"] == note
    assert view.provenance["note:route_hint"].via == "note:scratchpad"


def test_a_starved_run_replays_what_each_view_lost(tmp_path: Path) -> None:
    """Under capacity pressure each rebuilt view loses what the recorded one lost, with
    the recorded evictions, so a cabin that reads ``view.evicted`` replays the same."""
    path = record(tmp_path / "starved.mcap", ticks=60, capacity=12)
    rec = Recording.open(path)
    message = rec.one(WORKING_SET, 30)
    evictions = rec.one(EVICTIONS, 30)
    assert message is not None and evictions is not None
    views = ViewBuilder().views(message, evictions)
    capacity = {e["key"]: e for e in evictions["evictions"] if e["reason"] == "capacity"}
    lost_somewhere = False
    for cabin, view in views.items():
        assert list(view.evicted) == message["views"][cabin]["evicted"]
        for key, eviction in view.evicted.items():
            assert eviction.importance == capacity[key]["importance"]
            lost_somewhere = True
    assert lost_somewhere
    assert not replay(rec).drifted


def test_a_lost_note_is_rebuilt_under_its_view_key() -> None:
    message = {
        "tick": 20,
        "time": 1.0,
        "versions": {"board_seq": 1, "map_version": 0, "log_seq": 0},
        "items": {},
        "views": {
            "walker": {
                "items": {},
                "missing": {},
                "suppressed": [],
                "nearby_map": [],
                "corridor_map": [],
                "recent_events": [],
                "evicted": ["note:route_hint"],
            }
        },
    }
    gone = {
        "tick": 20,
        "evictions": [
            {
                "key": "note:walker/route_hint",
                "importance": 0.5,
                "last_used": 1.0,
                "reason": "capacity",
            }
        ],
    }
    view = ViewBuilder().views(WORKING_SET.parse(message), EVICTIONS.parse(gone))["walker"]
    assert list(view.evicted) == ["note:route_hint"]
    assert view.evicted["note:route_hint"].importance == 0.5
    with pytest.raises(ReplayError, match="lost 'note:route_hint' to capacity"):
        ViewBuilder().views(WORKING_SET.parse(message), EVICTIONS.parse({**gone, "evictions": []}))


# -- comparing decisions ---------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=5)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
decisions = st.fixed_dictionaries(
    {
        "writes": st.lists(
            st.fixed_dictionaries(
                {
                    "key": st.text(min_size=1, max_size=5),
                    "value": json_values,
                    "ttl": st.none(),
                    "delete": st.booleans(),
                }
            ),
            max_size=3,
        ),
        "events": st.lists(
            st.fixed_dictionaries(
                {"kind": st.text(min_size=1, max_size=5), "data": json_values, "tags": st.just([])}
            ),
            max_size=3,
        ),
        "commands": st.lists(
            st.fixed_dictionaries(
                {
                    "name": st.just("drive"),
                    "args": st.fixed_dictionaries({"v": st.floats(-2, 2), "w": st.floats(-2, 2)}),
                }
            ),
            max_size=2,
        ),
        "reactions": st.just([]),
        "failed": st.none(),
    }
)


@given(decisions)
def test_a_decision_equals_itself_after_a_json_round_trip(decision: dict[str, Any]) -> None:
    assert compare(json.loads(json.dumps(decision)), decision) == ()


@given(decisions.filter(lambda d: bool(d["commands"])), st.data())
def test_one_ulp_in_a_command_is_drift(decision: dict[str, Any], data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(decision["commands"]) - 1))
    changed = json.loads(json.dumps(decision))
    args = changed["commands"][index]["args"]
    args["v"] = math.nextafter(args["v"], math.inf)
    (difference,) = compare(decision, changed)
    assert (difference.field, difference.index) == ("commands", index)


def test_int_and_float_and_signed_zero_are_told_apart() -> None:
    base = {
        "writes": [],
        "events": [{"kind": "k", "data": 1, "tags": []}],
        "commands": [],
        "reactions": [],
        "failed": None,
    }
    as_float = {**base, "events": [{"kind": "k", "data": 1.0, "tags": []}]}
    assert compare(base, as_float)[0].field == "events"
    zero = {**base, "events": [{"kind": "k", "data": 0.0, "tags": []}]}
    minus = {**base, "events": [{"kind": "k", "data": -0.0, "tags": []}]}
    assert compare(zero, minus) != ()
    failed = {**base, "events": [], "failed": {"error_type": "E", "message": "m"}}
    assert [d.field for d in compare(base, failed)] == ["events", "failed"]


# -- the command line ------------------------------------------------------------------------


def sim_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "sim", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_cli_replay_of_an_unchanged_run_exits_0(clean: Path) -> None:
    done = sim_cli("replay", str(clean), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["drift"] is False and report["ticks"] == TICKS and report["drifts"] == []


WOBBLY = """
import random


class Wobbly:
    def __init__(self, spec):
        self.spec = spec
        self.name = spec.name
        self.rng = random.Random()  # seeded from the OS: differs from run to run

    def step(self, view, out):
        if view.tick % 100 == 0:
            out.emit("wobble", {"x": self.rng.random()})
"""


@pytest.mark.slow
def test_cli_replay_catches_a_nondeterministic_cabin(tmp_path: Path) -> None:
    (tmp_path / "wobbly.py").write_text(WOBBLY)
    (tmp_path / "wobbly.toml").write_text('name = "wobbly"\nboard_keys = ["pose"]\n')
    cabin = "wobbly:Wobbly@wobbly.toml"
    done = sim_cli(
        "run", "--ticks", "300", "--record", "run.mcap", "--cabin", cabin, "--json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr

    done = sim_cli("replay", "run.mcap", "--cabin", cabin, "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["drift"] is True and report["drift_ticks"] == [0, 100, 200]
    assert report["drifts_by_cabin"] == {"wobbly": 3}
    assert report["drifts"][0]["fields"] == ["events"]

    done = sim_cli("replay", "run.mcap", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "'wobbly' was not replayed" in done.stdout


def test_cli_replay_of_garbage_is_a_clear_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.mcap"
    junk.write_bytes(b"not a recording at all")
    done = sim_cli("replay", str(junk))
    assert done.returncode == 2
    assert "not an MCAP file" in done.stderr and "Traceback" not in done.stderr


def test_a_recording_whose_long_term_facts_are_damaged_is_a_clear_error(tmp_path: Path) -> None:
    from runtime.recording.reader import scan, write_recording

    made = tmp_path / "made.mcap"
    sim = Simulation("warehouse", seed=0, record=made)
    sim.run(5, until_done=False)
    sim.close()
    result = scan(made)
    result.metadata["run"]["long_term"] = json.dumps(
        {
            "scope": {"scenario": "warehouse"},
            "records": [{"content": "x", "metadata": [1], "stamp": 0.0}],
        }
    )
    broken = tmp_path / "broken.mcap"
    write_recording(result, broken)
    assert Recording.open(broken).metadata["long_term"]
    with pytest.raises(ReplayError, match="long-term memory"):
        replay(broken)
