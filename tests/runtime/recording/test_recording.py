"""Recordings read back: inspect and diff answer what the runtime froze, damaged files are
read up to the break and repaired, garbage gets a clear error (never a traceback)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcap.writer import Writer

from runtime import configure_logging
from runtime.jsonable import from_json
from runtime.loop import TickResult
from runtime.recording import format as fmt
from runtime.recording.format import BOARD, EVENTS, PER_TICK, SCHEMA_VERSION
from runtime.recording.inspect import (
    InspectError,
    brief,
    compress,
    diff_report,
    key_history,
    open_recording,
    repair_report,
    tick_ranges,
    tick_report,
)
from runtime.recording.reader import Recording, RecordingError, repair, scan
from sim.cli import main
from sim.faults.model import parse_fault
from sim.run.harness import Simulation
from tests.support.edit_loop import few_and_many
from tests.support.paths import ROOT

TICKS = 300
CAPACITY = 6  # small enough that required constraint:* items get evicted every tick
FAULTS = ("missing:executor:event:action_failed*@50-150", "crash:planner@120")


@dataclass(repr=False)
class Run:
    path: Path
    results: dict[int, TickResult]
    board_changes: int
    log_seq: int

    def __repr__(self) -> str:  # failure messages print it: keep it short
        return f"Run({self.path.name}, {len(self.results)} ticks)"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    configure_logging(level="critical")
    path = tmp_path_factory.mktemp("recording") / "run.mcap"
    sim = Simulation(
        "warehouse", seed=0, capacity=CAPACITY, faults=[parse_fault(f) for f in FAULTS], record=path
    )
    results: dict[int, TickResult] = {}
    sim.add_tick_listener(lambda r: results.__setitem__(r.tick, r))
    try:
        summary = sim.run(TICKS, until_done=False)
    finally:
        sim.close()
    return Run(path, results, summary["board_writes"], sim.log.seq)


@pytest.fixture(scope="module")
def recording(run: Run) -> Recording:
    return Recording.open(run.path)


def _cut(source: Path, size: int, target: Path) -> Path:
    target.write_bytes(source.read_bytes()[:size])
    return target


def _header_end(data: bytes) -> int:
    """The offset just after the MCAP header record (magic, opcode, length, body)."""
    return 8 + 1 + 8 + int.from_bytes(data[9:17], "little")


def _sim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sim", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )


# -- channels --------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_channel_is_present_with_the_expected_message_counts(
    run: Run, recording: Recording
) -> None:
    assert set(recording.topics) == set(fmt.ALL_CHANNELS)
    assert recording.ticks() == list(range(TICKS))
    for channel in PER_TICK:
        assert recording.count(channel) == TICKS
        assert all(len(recording.at(channel, t)) == 1 for t in range(TICKS)), channel.topic
    assert recording.count(BOARD) == run.board_changes
    events = list(recording.messages(EVENTS))
    assert [e["seq"] for e in events] == list(range(1, run.log_seq + 1))
    faults = {(f["fault"], f["phase"], f["tick"]) for f in recording.messages(fmt.FAULTS)}
    assert faults == {
        (FAULTS[0], "start", 50),
        (FAULTS[0], "end", 150),
        (FAULTS[1], "start", 120),
        (FAULTS[1], "end", 121),
    }
    assert json.loads(recording.metadata["faults"]) == list(FAULTS)


# -- inspect a tick --------------------------------------------------------------------------


def _assert_report_is_what_was_frozen(report: dict[str, Any], result: TickResult) -> None:
    ws = result.working_set
    assert (report["tick"], report["time"]) == (result.tick, result.time)
    assert report["versions"] == {
        "board_seq": ws.versions.board_seq,
        "map_version": ws.versions.map_version,
        "log_seq": ws.versions.log_seq,
    }
    assert report["working_set_size"] == len(ws.items)
    assert report["capacity_alarm"] == ws.capacity_alarm
    assert [
        (e["key"], e["importance"], e["last_used"], e["reason"]) for e in report["evicted"]
    ] == [(e.key, e.importance, e.last_used, e.reason) for e in ws.evictions]
    assert list(report["cabins"]) == [v.cabin for v in result.views]
    for view in result.views:
        seen = report["cabins"][view.cabin]
        assert list(seen["items"]) == list(view.provenance)
        for key, item in view.provenance.items():
            got = seen["items"][key]
            assert from_json(got["value"]) == item.value, key
            assert (
                got["via"],
                got["source"],
                got["stamp"],
                got["seq"],
                got["importance"],
                got["last_used"],
                got["first_seen"],
            ) == (
                item.via,
                item.source,
                item.stamp,
                item.seq,
                item.importance,
                item.last_used,
                item.first_seen,
            ), key
        assert {p: m["reason"] for p, m in seen["missing"].items()} == dict(view.missing)
        assert seen["suppressed"] == list(view.suppressed)
        assert list(seen["lost"]) == list(view.evicted)
        for key, eviction in view.evicted.items():
            assert (seen["lost"][key]["importance"], seen["lost"][key]["reason"]) == (
                eviction.importance,
                "capacity",
            )
    assert report["pressure"] == {n: list(lost) for n, lost in ws.pressure.items()}
    for out in result.outboxes:
        decision = report["cabins"][out.cabin]["decision"]
        assert decision["failed"] is None
        assert [(c["name"], from_json(c["args"])) for c in decision["commands"]] == [
            (c.name, c.args) for c in out.commands
        ]
        assert [
            (w["key"], from_json(w["value"]), w["ttl"], w["delete"]) for w in decision["writes"]
        ] == [(w.key, w.value, w.ttl, w.delete) for w in out.writes]
        assert [
            (e["kind"], from_json(e["data"]), frozenset(e["tags"])) for e in decision["events"]
        ] == [(e.kind, e.data, e.tags) for e in out.events]
        assert [
            (r["pattern"], r["reaction"], from_json(r["detail"])) for r in decision["reactions"]
        ] == [(r.pattern, r.reaction, r.detail) for r in out.reactions]
    for failure in result.failures:
        assert report["cabins"][failure.cabin]["decision"]["failed"] == {
            "error_type": failure.error_type,
            "message": failure.message,
        }
    viewed = {k for v in result.views for k in v.provenance}
    assert set(report["unviewed"]) == set(ws.items) - viewed


def test_inspect_reports_at_every_tick_what_the_runtime_froze(
    run: Run, recording: Recording
) -> None:
    for tick, result in run.results.items():
        _assert_report_is_what_was_frozen(tick_report(recording, tick), result)


def test_inspect_shows_faults_failures_and_the_eviction_behind_a_missing_item(
    run: Run, recording: Recording
) -> None:
    executor = tick_report(recording, 60, cabin="executor")
    assert list(executor["cabins"]) == ["executor"] and "unviewed" not in executor
    assert executor["cabins"]["executor"]["missing"]["event:action_failed*"] == {"reason": "fault"}
    assert executor["cabins"]["executor"]["suppressed"] == ["event:action_failed*"]
    crashed = tick_report(recording, 120, cabin="planner")["cabins"]["planner"]["decision"]
    assert crashed["failed"]["error_type"] == "InjectedCrash"
    evicted_ticks = [
        (t, v.cabin, p)
        for t, r in run.results.items()
        for v in r.views
        for p, why in v.missing.items()
        if why == "evicted"
    ]
    assert evicted_ticks, "the fixture's capacity should evict a required item"
    tick, cabin, pattern = evicted_ticks[len(evicted_ticks) // 2]
    missing = tick_report(recording, tick, cabin=cabin)["cabins"][cabin]["missing"][pattern]
    eviction = missing["eviction"]
    assert missing["reason"] == "evicted" and eviction["tick"] == tick
    assert eviction["key"] in {e.key for e in run.results[tick].working_set.evictions}


def test_a_tick_or_cabin_the_recording_does_not_hold_is_a_clear_error(recording: Recording) -> None:
    with pytest.raises(InspectError, match=f"tick {TICKS} is not in .*holds ticks 0-{TICKS - 1}"):
        tick_report(recording, TICKS)
    with pytest.raises(InspectError, match="tick -1 is not in"):
        tick_report(recording, -1)
    with pytest.raises(InspectError, match=r"no cabin 'pilot'.*planner, executor, monitor"):
        tick_report(recording, 3, cabin="pilot")
    with pytest.raises(InspectError, match="no cabin 'pilot'"):
        key_history(recording, "pose", cabin="pilot")
    with pytest.raises(InspectError, match=r"never appears.*did you mean pose"):
        key_history(recording, "posee")


# -- one key ---------------------------------------------------------------------------------


def test_key_history_follows_the_working_set_views_and_board(
    run: Run, recording: Recording
) -> None:
    history = key_history(recording, "pose")
    rows = {row["tick"]: row for row in history["history"]}
    for tick, result in run.results.items():
        item = result.working_set.items.get("pose")
        if item is None:
            assert tick not in rows or not rows[tick]["in_working_set"]
            continue
        assert from_json(rows[tick]["value"]) == item.value
        assert rows[tick]["views"] == {
            v.cabin: v.provenance["pose"].via for v in result.views if "pose" in v.provenance
        }
    writes = [m for m in recording.messages(BOARD) if m["key"] == "pose"]
    assert [(w["seq"], w["value"]) for w in history["board"]] == [
        (w["seq"], w["value"]) for w in writes
    ]
    assert len(writes) > TICKS // 2


def test_inspect_shows_what_each_view_lost_to_capacity(run: Run, recording: Recording) -> None:
    """A capacity of 6 starves every cabin: the tick report lists each cabin's lost items,
    the key history marks the ticks a cabin lost a key, and the people's output says which
    cabins lost how much."""
    tick, result = next((t, r) for t, r in run.results.items() if r.working_set.pressure)
    lost = {v.cabin: list(v.evicted) for v in result.views if v.evicted}
    report = tick_report(recording, tick)
    assert report["pressure"] == lost and report["capacity_alarm"]
    cabin, keys = next(iter(lost.items()))
    rows = {row["tick"]: row for row in key_history(recording, keys[0])["history"]}
    assert cabin in rows[tick]["lost_by"]
    assert main(["inspect", str(run.path), "--tick", str(tick), "--cabin", cabin]) == 0


def test_cli_inspect_says_what_raised_the_capacity_alarm(
    run: Run, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    tick, result = next((t, r) for t, r in run.results.items() if r.working_set.pressure)
    assert main(["inspect", str(run.path), "--tick", str(tick)]) == 0
    out = capsys.readouterr().out
    name, lost = next(iter(result.working_set.pressure.items()))
    assert f"capacity alarm: capacity pressure: {name} lost {len(lost)}" in out
    assert f"lost to capacity ({len(lost)}): {lost[0]} (importance" in out


def test_key_history_shows_evictions_and_missing(run: Run, recording: Recording) -> None:
    evicted = [(t, e) for t, r in run.results.items() for e in r.working_set.evictions]
    tick, eviction = evicted[0]
    rows = {row["tick"]: row for row in key_history(recording, eviction.key)["history"]}
    assert [e["reason"] for e in rows[tick]["evicted"]] == [eviction.reason]
    failures = key_history(recording, "event:action_failed*", cabin="executor")["history"]
    reasons = {row["tick"]: row["missing"]["executor"]["event:action_failed*"] for row in failures}
    assert reasons[49] == "absent" and reasons[50] == "fault" and reasons[149] == "fault"


# -- two ticks -------------------------------------------------------------------------------


@given(st.integers(0, TICKS - 1), st.integers(0, TICKS - 1))
def test_diff_agrees_with_the_frozen_working_sets(
    run: Run, recording: Recording, first: int, second: int
) -> None:
    report = diff_report(recording, first, second)
    a, b = run.results[first].working_set.items, run.results[second].working_set.items
    assert set(report["added"]) == b.keys() - a.keys()
    assert set(report["removed"]) == a.keys() - b.keys()
    assert set(report["changed"]) == {
        k
        for k in a.keys() & b.keys()
        if a[k].value != b[k].value or a[k].importance != b[k].importance
    }
    low, high = sorted((first, second))
    assert [(e["tick"], e["key"]) for e in report["evicted_between"]] == [
        (t, e.key) for t in range(low + 1, high + 1) for e in run.results[t].working_set.evictions
    ]
    for va, vb in zip(run.results[first].views, run.results[second].views, strict=True):
        cabin = report["cabins"][va.cabin]
        assert set(cabin["in"]) == set(vb.provenance) - set(va.provenance)
        assert set(cabin["out"]) == set(va.provenance) - set(vb.provenance)
        assert set(cabin["missing_new"]) == set(vb.missing) - set(va.missing)
        assert set(cabin["missing_gone"]) == set(va.missing) - set(vb.missing)


def test_diff_across_a_fault_names_the_changed_reason(run: Run, recording: Recording) -> None:
    report = diff_report(recording, 49, 50, cabin="executor")
    assert list(report["cabins"]) == ["executor"]
    assert report["cabins"]["executor"]["missing_changed"] == {
        "event:action_failed*": {"from": "absent", "to": "fault"}
    }
    assert [e["key"] for e in report["evicted_between"]] == [
        e.key for e in run.results[50].working_set.evictions
    ]
    assert report["evicted_between"], "evicted items are in no view, yet belong in a diff"
    assert diff_report(recording, 7, 7)["changed"] == {}


# -- damaged files ---------------------------------------------------------------------------


def _records(recording: Recording) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    return {topic: list(recording.records(fmt.ALL_CHANNELS[topic])) for topic in recording.topics}


@pytest.mark.slow
@pytest.mark.parametrize("where", ["mid-file", "a few bytes before the end", "after 3/4"])
def test_a_cut_recording_is_read_up_to_the_break_and_repaired(
    run: Run, recording: Recording, tmp_path: Path, where: str
) -> None:
    size = run.path.stat().st_size
    offset = {
        "mid-file": size // 2,
        "a few bytes before the end": size - 5,
        "after 3/4": 3 * size // 4,
    }[where]
    cut = _cut(run.path, offset, tmp_path / "cut.mcap")
    notices: list[str] = []
    damaged = open_recording(cut, warn=notices.append)
    assert len(notices) == 1
    assert f"damaged at byte {damaged.scan.good_bytes} of {offset}" in notices[0]
    assert "python -m sim repair" in notices[0]
    ticks = damaged.ticks()
    assert ticks == list(range(len(ticks))) and ticks
    assert f"read {len(ticks)} ticks (0-{ticks[-1]})" in notices[0]
    original, recovered = _records(recording), _records(damaged)
    for topic, messages in recovered.items():
        assert messages == original[topic][: len(messages)], topic
    if where == "a few bytes before the end":
        assert recovered == original
    else:
        assert len(ticks) < TICKS
    assert tick_report(damaged, ticks[0]) == {
        **tick_report(recording, ticks[0]),
        "recording": str(cut),
        "damaged": True,
    }

    fixed = tmp_path / "fixed.mcap"
    report = repair_report(cut, fixed)
    assert report["repaired"] and report["break_at"] == damaged.scan.good_bytes
    assert (report["ticks"], report["last_tick"]) == (len(ticks), ticks[-1])
    assert cut.read_bytes() == run.path.read_bytes()[:offset], "-o leaves the input alone"
    notices.clear()
    repaired = open_recording(fixed, warn=notices.append)
    assert not notices and not repaired.damaged
    assert _records(repaired) == recovered
    assert repaired.metadata == recording.metadata
    before = fixed.read_bytes()
    again = repair_report(fixed)
    assert again["complete"] and not again["repaired"] and fixed.read_bytes() == before


def test_a_recording_cut_just_after_its_header_has_nothing_to_recover(
    run: Run, tmp_path: Path
) -> None:
    data = run.path.read_bytes()
    cut = _cut(run.path, _header_end(data), tmp_path / "cut.mcap")
    notices: list[str] = []
    damaged = open_recording(cut, warn=notices.append)
    assert damaged.ticks() == [] and len(notices) == 1
    assert "nothing before it can be read or recovered" in notices[0]
    with pytest.raises(InspectError, match="holds no ticks: it breaks at byte"):
        tick_report(damaged, 0)
    with pytest.raises(RecordingError, match="nothing to recover"):
        repair(cut)
    assert cut.read_bytes() == data[: _header_end(data)]


def _subsequence(part: list[Any], whole: list[Any]) -> bool:
    rest = iter(whole)
    return all(any(item == other for other in rest) for item in part)


def test_a_changed_byte_mid_file_loses_only_its_chunk(
    run: Run, recording: Recording, tmp_path: Path
) -> None:
    data = bytearray(run.path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    broken = tmp_path / "flipped.mcap"
    broken.write_bytes(bytes(data))
    damaged = Recording.open(broken)
    assert damaged.damaged and damaged.scan.good_bytes <= len(data) // 2
    assert len(damaged.scan.skipped) == 1 and "changed" in (damaged.scan.cause or "")
    ticks = damaged.ticks()
    assert ticks[-1] == TICKS - 1  # the ticks after the damaged chunk are read too
    assert len(ticks) >= 0.9 * TICKS
    lost = sorted(set(range(TICKS)) - set(ticks))
    assert lost and lost == list(range(lost[0], lost[-1] + 1))  # one chunk's ticks
    original = _records(recording)
    for topic, messages in _records(damaged).items():
        assert _subsequence(messages, original[topic]), topic
    fixed = tmp_path / "fixed.mcap"
    repair(broken, fixed)
    again = Recording.open(fixed)
    assert not again.damaged and again.ticks() == ticks


@pytest.mark.parametrize("examples", few_and_many(6, 40))
def test_a_changed_byte_anywhere_is_caught_and_nothing_else_is_lost(
    run: Run,
    recording: Recording,
    tmp_path_factory: pytest.TempPathFactory,
    examples: int,
) -> None:
    data = run.path.read_bytes()
    original = _records(recording)

    @settings(max_examples=examples, deadline=None)
    @given(where=st.floats(0.0, 1.0, exclude_max=True), bits=st.integers(1, 255))
    def flip(where: float, bits: int) -> None:
        flipped = bytearray(data)
        flipped[int(where * len(flipped))] ^= bits
        broken = tmp_path_factory.mktemp("flip") / "flipped.mcap"
        broken.write_bytes(bytes(flipped))
        try:
            damaged = Recording.open(broken)
        except RecordingError:
            return  # the header, the magic or the run metadata itself: a clear error
        assert damaged.damaged  # no byte of a recording is unchecked
        for topic, messages in _records(damaged).items():
            assert _subsequence(messages, original[topic]), topic

    flip()


@pytest.mark.parametrize("size", [0, 5, 30])
def test_a_file_cut_before_its_header_ends_is_a_clear_error(
    run: Run, tmp_path: Path, size: int
) -> None:
    cut = _cut(run.path, size, tmp_path / "cut.mcap")
    with pytest.raises(RecordingError, match=r"empty|nothing to recover"):
        scan(cut)


# -- garbage ---------------------------------------------------------------------------------


def _mcap(path: Path, *, profile: str, data: bytes = b"{}", metadata: bool = True) -> Path:
    with path.open("wb") as fh:
        writer = Writer(fh)
        writer.start(profile=profile, library="test")
        schema = writer.register_schema("s", "jsonschema", b"{}")
        channel = writer.register_channel("/working_set", "json", schema)
        if metadata:
            writer.add_metadata(
                "run", {"schema_version": str(SCHEMA_VERSION), "scenario": "warehouse"}
            )
        writer.add_message(channel, log_time=0, data=data, publish_time=0, sequence=0)
        writer.finish()  # type: ignore[no-untyped-call]
    return path


def test_garbage_is_a_recording_error_that_says_what_is_wrong(tmp_path: Path) -> None:
    text = tmp_path / "notes.mcap"
    text.write_text("this is not a recording\n")
    with pytest.raises(RecordingError, match="not an MCAP file"):
        Recording.open(text)
    with pytest.raises(RecordingError, match="no such file"):
        Recording.open(tmp_path / "absent.mcap")
    with pytest.raises(RecordingError, match="folder"):
        Recording.open(tmp_path)
    other = _mcap(tmp_path / "ros.mcap", profile="ros1")
    with pytest.raises(RecordingError, match=r"not a tickwork recording.*'ros1'"):
        Recording.open(other)
    bare = _mcap(tmp_path / "bare.mcap", profile="tickwork", metadata=False)
    with pytest.raises(RecordingError, match="without its run metadata"):
        Recording.open(bare)
    not_json = Recording.open(_mcap(tmp_path / "nj.mcap", profile="tickwork", data=b"\x00{ws"))
    with pytest.raises(RecordingError, match="/working_set message of tick 0 is not JSON"):
        tick_report(not_json, 0)
    nan = Recording.open(_mcap(tmp_path / "nan.mcap", profile="tickwork", data=b"NaN"))
    with pytest.raises(RecordingError, match="not JSON"):
        tick_report(nan, 0)
    versions = {"board_seq": 0, "map_version": 0, "log_seq": 0}
    shape = json.dumps({"tick": 0, "time": 0.0, "versions": versions, "items": {}, "views": []})
    wrong = Recording.open(_mcap(tmp_path / "w.mcap", profile="tickwork", data=shape.encode()))
    with pytest.raises(
        RecordingError, match=r"tick 0: field 'items': expected an array.*wrong schema"
    ):
        tick_report(wrong, 0)
    views = json.dumps(
        {
            "tick": 0,
            "time": 0.0,
            "versions": versions,
            "items": [],
            "views": [{"key": "planner", "items": ["pose"]}],
        }
    )
    bad_view = Recording.open(_mcap(tmp_path / "v.mcap", profile="tickwork", data=views.encode()))
    with pytest.raises(RecordingError, match=r"field 'views.planner.items\[0\]': an entry without"):
        tick_report(bad_view, 0)
    nested = json.dumps(
        {
            "tick": 0,
            "time": 0.0,
            "versions": {**versions, "log_seq": "7"},
            "items": [],
            "views": [],
        }
    )
    bad_nested = Recording.open(
        _mcap(tmp_path / "n.mcap", profile="tickwork", data=nested.encode())
    )
    with pytest.raises(RecordingError, match=r"field 'versions.log_seq': .*integer"):
        tick_report(bad_nested, 0)


@pytest.mark.parametrize(
    "command",
    [
        ["inspect", "{f}", "--tick", "0"],
        ["inspect", "{f}", "--key", "pose", "--json"],
        ["diff", "{f}", "0", "0"],
        ["repair", "{f}"],
    ],
)
def test_every_command_answers_garbage_with_exit_2_and_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    files = [
        tmp_path / "text.mcap",
        _mcap(tmp_path / "ros.mcap", profile="ros1"),
        _mcap(tmp_path / "nj.mcap", profile="tickwork", data=b"not json"),
        tmp_path / "missing.mcap",
    ]
    files[0].write_text("hello\n")
    for path in files:
        if command[0] == "repair" and path.name == "nj.mcap":
            continue  # a complete file: repair does not decode messages
        code = main([part.format(f=path) for part in command])
        err = capsys.readouterr().err
        assert code == 2, (command, path, err)
        assert err.startswith("error: ") and str(path) in err and "Traceback" not in err


# -- the command line ------------------------------------------------------------------------


def test_cli_inspect_tick_json_is_the_tick_report(run: Run, recording: Recording) -> None:
    done = _sim("inspect", str(run.path), "--tick", "150", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert json.loads(done.stdout) == json.loads(json.dumps(tick_report(recording, 150)))


@pytest.mark.slow
def test_cli_inspect_key_and_diff_json(run: Run, recording: Recording) -> None:
    key = _sim("inspect", str(run.path), "--key", "cargo", "--json")
    assert key.returncode == 0, key.stderr
    assert json.loads(key.stdout) == json.loads(json.dumps(key_history(recording, "cargo")))
    diff = _sim("diff", str(run.path), "10", "200", "--json")
    assert diff.returncode == 0, diff.stderr
    assert json.loads(diff.stdout) == json.loads(json.dumps(diff_report(recording, 10, 200)))


@pytest.mark.slow
def test_cli_repairs_in_place_and_then_reads_without_a_notice(run: Run, tmp_path: Path) -> None:
    cut = _cut(run.path, run.path.stat().st_size // 2, tmp_path / "crashed.mcap")
    read = _sim("inspect", str(cut), "--tick", "0", "--cabin", "monitor", "--json")
    assert read.returncode == 0
    assert read.stderr.count("notice: ") == 1 and "is damaged at byte" in read.stderr
    fixed = _sim("repair", str(cut))
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout.startswith(f"repaired {cut}: it is damaged at byte ")
    assert "recovered" in fixed.stdout and "in place" in fixed.stdout
    assert not Recording.open(cut).damaged
    again = _sim("repair", str(cut))
    assert again.returncode == 0 and "is complete" in again.stdout
    assert "nothing changed" in again.stdout


def test_cli_human_output(
    run: Run, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # no wrapping, whatever the length of tmp paths
    assert main(["inspect", str(run.path), "--tick", "60", "--cabin", "executor"]) == 0
    out = capsys.readouterr().out
    assert "tick 60" in out and "executor saw" in out and "board:pose" in out
    assert "missing event:action_failed*: fault" in out and "decided:" in out
    assert (
        main(["inspect", str(run.path), "--key", "event:action_failed*", "--cabin", "executor"])
        == 0
    )
    out = capsys.readouterr().out
    assert "50-149" in out and "0-49" in out  # runs of identical rows compressed
    assert main(["diff", str(run.path), "49", "50"]) == 0
    out = capsys.readouterr().out
    assert "tick 49 → 50" in out and "event:action_failed* (absent → fault)" in out
    assert main(["inspect", str(run.path), "--tick", "9999"]) == 2
    assert "holds ticks 0-299" in capsys.readouterr().err


# -- helpers for people ----------------------------------------------------------------------


def test_compress_joins_runs_of_alike_consecutive_ticks() -> None:
    rows = [
        {"tick": t, "v": v} for t, v in [(1, "a"), (2, "a"), (3, "a"), (4, "b"), (6, "b"), (7, "a")]
    ]
    runs = compress(rows, same=lambda r: r["v"])
    assert [(r["first"], r["last"], r["row"]["v"]) for r in runs] == [
        (1, 3, "a"),
        (4, 4, "b"),
        (6, 6, "b"),
        (7, 7, "a"),
    ]


def test_brief_and_tick_ranges() -> None:
    feature = {
        "$feature": {"id": "shelf:A1", "kind": "shelf", "tags": [], "props": {}, "wkb": "00"}
    }
    assert brief(feature) == "<shelf shelf:A1>"
    assert brief({"pose": [1.23456789, 2.0]}) == "{pose: [1.235, 2]}"
    assert brief(list(range(100)), width=10) == "[0, 1, 2,…"
    assert tick_ranges([0, 1, 2, 5, 6, 9]) == "0-2, 5-6, 9"
    assert tick_ranges([]) == "none"


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_run_stopped_by_a_signal_finishes_its_recording(tmp_path: Path, signum: int) -> None:
    import time

    root = ROOT
    out = tmp_path / "run.mcap"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sim",
            "run",
            "--ticks",
            "100000",
            "--full",
            "--json",
            "--record",
            str(out),
        ],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60  # waiting on a real process, not timing the code
        while time.monotonic() < deadline and (not out.exists() or out.stat().st_size < 50_000):
            time.sleep(0.05)
        assert out.exists() and out.stat().st_size >= 50_000, "the run never got going"
        proc.send_signal(signum)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum  # the shell's convention for "stopped by a signal"
    assert proc.stderr is not None
    assert f"stopped by {signal.Signals(signum).name}" in proc.stderr.read().decode()
    result = scan(out)
    assert result.complete, result.describe()  # summary and footer written on the way out
    recording = Recording(result)
    assert recording.ticks()[0] == 0
    summary = json.loads(result.metadata["summary"]["json"])
    assert summary["stopped_by"] == signal.Signals(signum).name


def _record_starts(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, opcode, length) of every top-level record of an MCAP file."""
    found, pos = [], 8
    while pos + 9 <= len(data):
        length = int.from_bytes(data[pos + 1 : pos + 9], "little")
        found.append((pos, data[pos], length))
        pos += 9 + length
    return found


@pytest.mark.parametrize("opcode", [0x07, 0x08, 0x0B])  # message index, chunk index, statistics
def test_a_changed_index_or_summary_is_damage_and_repair_keeps_every_tick(
    run: Run, recording: Recording, tmp_path: Path, opcode: int
) -> None:
    data = bytearray(run.path.read_bytes())
    at = next(p for p, op, _ in _record_starts(bytes(data)) if op == opcode)
    data[at + 12] ^= 0x01  # inside the record's content
    broken = tmp_path / "index.mcap"
    broken.write_bytes(bytes(data))
    damaged = Recording.open(broken)
    assert damaged.damaged  # not called "complete"
    assert damaged.ticks() == recording.ticks()  # every message is still there
    repair(broken)
    fixed = Recording.open(broken)
    assert not fixed.damaged and _records(fixed) == _records(recording)


def test_a_file_cut_before_its_first_tick_has_nothing_to_recover(run: Run, tmp_path: Path) -> None:
    data = run.path.read_bytes()
    first_chunk = next(p for p, op, _ in _record_starts(data) if op == 0x06)
    cut = _cut(run.path, first_chunk + 20, tmp_path / "early.mcap")
    with pytest.raises(RecordingError, match="nothing to recover"):
        repair(cut)
    assert cut.read_bytes() == data[: first_chunk + 20]  # nothing was written over it


def test_a_nan_or_infinity_is_recorded_as_null_and_logged_once_per_channel(tmp_path: Path) -> None:
    """JSON has no NaN or infinity; a number computed from a cabin's output can be one
    (a route thousands of kilometres long gives an infinite cross-track error), and the
    run must go on with the place of each one said, not end in a ValueError."""
    from structlog.testing import capture_logs

    from runtime.recording.writer import Recorder

    path = tmp_path / "r.mcap"
    with capture_logs() as logs, Recorder(path) as recorder:
        for tick, compute in enumerate([0.5, float("inf"), float("nan"), 0.25]):
            recorder.put(
                fmt.STATS, {"tick": tick, "compute_s": compute, "overrun": False, "items": 1}, 0.0
            )
    assert recorder.non_finite == {fmt.STATS.topic: 2}
    warned = [e for e in logs if e["event"] == "recording_non_finite"]
    assert [(e["topic"], e["fields"]) for e in warned] == [(fmt.STATS.topic, ["/compute_s"])]
    raw = [json.loads(m.data)["compute_s"] for m in scan(path).messages]
    assert raw == [0.5, None, None, 0.25]
    # the typed reader names the field that holds no number
    with pytest.raises(RecordingError, match="compute_s"):
        list(Recording.open(path).messages(fmt.STATS))
