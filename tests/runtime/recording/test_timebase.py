"""Log time = the run's wall-clock start + run time (runtime.recording.timebase), in the
recording and its Foxglove timestamps, and nothing the run decides depends on the start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.errors import SettingError
from runtime.recording.format import CHANNELS, FOXGLOVE_CHANNELS, TF, WORKING_SET
from runtime.recording.reader import scan
from runtime.recording.timebase import EPOCH, MAX_START_NS, NS, TimeBase
from sim.run.harness import Simulation, deterministic_fields

STARTS = st.integers(min_value=0, max_value=MAX_START_NS - 10**18)
SECONDS = st.floats(min_value=0, max_value=1e7, allow_nan=False)


@given(STARTS, SECONDS)
def test_log_time_is_start_plus_run_time_and_maps_back(start: int, seconds: float) -> None:
    base = TimeBase(start)
    log_time = base.log_time(seconds)
    assert log_time - start == round(seconds * NS)
    assert base.stamp(seconds) == divmod(log_time, NS)
    assert abs(base.run_seconds(log_time) - seconds) <= 1e-9 + 1e-15 * seconds


@given(STARTS)
def test_the_start_survives_the_run_metadata(start: int) -> None:
    base = TimeBase(start)
    assert TimeBase.from_metadata(base.metadata()) == base


def test_no_start_is_run_time_and_bad_starts_are_refused() -> None:
    assert EPOCH.log_time(1.5) == 1_500_000_000 and EPOCH.metadata() == {}
    assert TimeBase.from_metadata({"seed": "0"}) == EPOCH
    assert TimeBase.at(1_767_225_600.5).metadata() == {
        "start_time_ns": "1767225600500000000",
        "start_time": "2026-01-01T00:00:00.500Z",
    }
    for bad in ("-1", "1e9", "", " 5", "9" * 30):
        with pytest.raises(SettingError, match="start_time_ns"):
            TimeBase.from_metadata({"start_time_ns": bad})
    with pytest.raises(SettingError):
        TimeBase(-1)
    with pytest.raises(SettingError):
        TimeBase(True)


def _record(path: Path, base: TimeBase) -> dict[str, object]:
    sim = Simulation("warehouse", seed=5, record=path, time_base=base)
    try:
        sim.run(40, until_done=False)
        return deterministic_fields(sim.summary())
    finally:
        sim.close()


def test_a_recording_is_stamped_from_its_start_and_the_run_does_not_depend_on_it(
    tmp_path: Path,
) -> None:
    start = TimeBase(1_767_225_600_000_000_000)
    with_start = _record(tmp_path / "a.mcap", start)
    without = _record(tmp_path / "b.mcap", EPOCH)
    assert with_start == without  # every digest and count: the start changes no decision
    a, b = scan(tmp_path / "a.mcap"), scan(tmp_path / "b.mcap")
    assert TimeBase.from_metadata(a.metadata["run"]) == start
    topics = {cid: c.topic for cid, c in a.channels.items()}
    assert all(m.log_time >= start.start_ns for m in a.messages)
    # the same messages, each later by the start; tickwork's own fields are run seconds
    assert [m.log_time - start.start_ns for m in a.messages] == [m.log_time for m in b.messages]
    same = {t for t in CHANNELS if t != "/stats"}  # /stats holds measured compute times
    for m, n in zip(a.messages, b.messages, strict=True):
        if topics[m.channel_id] in same:
            assert m.data == n.data, topics[m.channel_id]
    for m in a.messages:
        body = json.loads(m.data)
        if topics[m.channel_id] == WORKING_SET.topic:
            assert m.log_time == start.log_time(body["time"])
        if topics[m.channel_id] == TF.topic:  # Foxglove's timestamps: the same instant
            assert body["timestamp"]["sec"] * NS + body["timestamp"]["nsec"] == m.log_time
    assert {topics[m.channel_id] for m in a.messages} >= set(FOXGLOVE_CHANNELS) - {"/log"}


def test_a_resumed_run_keeps_its_start_in_every_log_time(tmp_path: Path) -> None:
    from sim.run.checkpoint import RunPlan, resume, save

    start = TimeBase(1_767_225_600_000_000_000)
    record, ckpt = tmp_path / "run.mcap", tmp_path / "run.ckpt"
    sim = Simulation("warehouse", seed=2, record=record, time_base=start)
    plan = RunPlan(ticks=30, record=str(record), every=10, path=str(ckpt))
    try:
        sim.run(10, until_done=False)
        save(sim, plan, ckpt)
    finally:
        sim.close()
    resumed = resume(ckpt)
    try:
        assert resumed.sim.time_base == start
        resumed.sim.run(10, until_done=False)
    finally:
        resumed.sim.close()
    found = scan(record)
    topics = {cid: c.topic for cid, c in found.channels.items()}
    ticks = [m for m in found.messages if topics[m.channel_id] == WORKING_SET.topic]
    assert [m.sequence for m in ticks] == list(range(20))
    assert all(m.log_time == start.log_time(json.loads(m.data)["time"]) for m in ticks)
    assert TimeBase.from_metadata(found.metadata["run"]) == start


def test_the_command_line_stores_when_the_run_started(tmp_path: Path) -> None:
    import time

    from sim.cli.app import main

    record = tmp_path / "run.mcap"
    before = time.time_ns()
    assert main(["run", "--ticks", "2", "--record", str(record), "--json"]) == 0
    after = time.time_ns()
    start = TimeBase.from_metadata(scan(record).metadata["run"])
    assert before <= start.start_ns <= after
