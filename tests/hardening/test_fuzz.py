"""Fuzzing every input format: command-line flags, fault strings, recordings (their bytes
and the fields inside valid files), checkpoints, campaign journal lines (checksums
recomputed) and long-term memory files edited with SQL.

Each case may only end in a documented outcome: success (exit 0), a failed run or
analysis (exit 1), or bad input (exit 2 with an ``error:`` line), within a time bound
(the hypothesis deadline) and never with a traceback. Spec, scenario and fault *files*
are fuzzed in ``test_inputs.py`` and ``test_spec_schema.py``. The fast subset runs a few
cases of each; ``-m slow`` runs many more.
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from runtime import load_specs
from runtime.agent.long_term import LongTermMemory
from runtime.errors import TickworkError
from runtime.recording.reader import scan
from runtime.recording.writer import RawMessage, Recorder
from sim import cli
from sim.cli import args as cli_args
from sim.faults.model import FaultError, parse_fault
from sim.run.campaign import RunRequest, judged, run_one
from sim.run.harness import SPECS_DIR
from sim.run.journal import HEADER, Journal, line_digest
from sim.world import limits
from sim.world.scenario import load_scenario
from tests.support.edit_loop import few_and_many

SPECS = load_specs(SPECS_DIR)
WORLD = load_scenario("warehouse")
DEADLINE_MS = 60_000  # a case that takes longer than this is a hang
FEW = settings(
    max_examples=25,
    deadline=DEADLINE_MS,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MANY = settings(FEW, max_examples=150)


def outcome(capsys: pytest.CaptureFixture[str], argv: list[str]) -> int:
    """Run ``python -m sim ARGV`` in this process and check the outcome is a documented one."""
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse: a usage error
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    assert code in (0, 1, 2), (argv, code, err)
    if code == 2:
        assert "error" in err, (argv, err)
    return code


# -- flags --------------------------------------------------------------------------------------

NUMBER_TEXT = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e308", "1e-300", "-0", "0x10", "1_000", "", " 5", "nan", "inf", "20"]),
    st.text(max_size=6),
)

PARSERS: dict[str, tuple[Callable[[str], Any], float, float]] = {
    "rate": (cli_args.rate, limits.MIN_RATE_HZ, limits.MAX_RATE_HZ),
    "duration": (cli_args.duration, 0.0, limits.MAX_DURATION),
    "positive_int": (cli_args.positive_int, 1, limits.MAX_TICKS),
}


@settings(max_examples=300, deadline=None)
@given(parser=st.sampled_from(sorted(PARSERS)), text=NUMBER_TEXT)
def test_a_numeric_flag_is_in_its_bounds_or_a_usage_error(parser: str, text: str) -> None:
    parse, low, high = PARSERS[parser]
    try:
        value = parse(text)
    except argparse.ArgumentTypeError as exc:
        assert "expected" in str(exc)
    else:
        assert low <= value <= high


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789-, x", max_size=12))
@example("0-99999999999")  # once a list of 10^11 numbers: the worker ran out of memory
@example("0-60000,0-60000")
def test_seeds_are_a_list_of_non_negative_numbers_or_a_usage_error(text: str) -> None:
    try:
        found = cli_args.seeds(text)
    except argparse.ArgumentTypeError:
        return
    assert found and all(s >= 0 for s in found) and len(found) <= cli_args.MAX_SEEDS


FLAG_VALUES = st.one_of(NUMBER_TEXT, st.sampled_from(["warehouse", "narrow_aisles", "nope", "."]))
RUN_FLAGS = ["--seed", "--rate", "--capacity", "--scenario", "--fault", "--specs", "--faults"]


@FEW
@given(
    flags=st.lists(st.tuples(st.sampled_from(RUN_FLAGS), FLAG_VALUES), max_size=3),
    ticks=st.integers(1, 3),
)
@example(flags=[("--seed", "-1")], ticks=1)  # drawn once: numpy's ValueError, a traceback
def test_run_with_any_flags_ends_in_a_documented_outcome(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flags: list[tuple[str, str]],
    ticks: int,
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--ticks", str(ticks), "--json"]
    for flag, value in flags:
        argv += [flag, value]
    outcome(capsys, argv)


# -- fault strings ------------------------------------------------------------------------------

FAULT_TEXT = st.one_of(
    st.text(max_size=30),
    st.builds(
        lambda kind, body, start, end: f"{kind}{body}@{start}-{end}",
        st.sampled_from(["missing:", "stale:", "dropout:", "maploss:", "eventloss:", "crash:", ""]),
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz:*[]!?,=. ", max_size=20),
        st.integers(-5, 2**64).map(str) | st.text(max_size=4),
        st.integers(-5, 2**64).map(str) | st.text(max_size=4),
    ),
)


@settings(max_examples=400, deadline=None)
@given(FAULT_TEXT)
def test_a_fault_string_is_a_fault_or_one_fault_error(text: str) -> None:
    try:
        fault = parse_fault(text)
    except FaultError as exc:
        assert str(exc)
    else:
        assert fault.start >= 0 and (fault.end is None or fault.start < fault.end)


# -- recordings ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short run's recording with a fault in it, and its checkpoint beside it."""
    folder = tmp_path_factory.mktemp("fuzzed")
    path = folder / "run.mcap"
    code = cli.main(
        [
            "run", "--ticks", "30", "--record", str(path), "--checkpoint-every", "10",
            "--fault", "missing:executor:pose@5-12", "--json",
        ]
    )  # fmt: skip
    assert code == 0
    return path


ANALYSES = [
    ["inspect", "{path}", "--tick", "7", "--json"],
    ["inspect", "{path}", "--key", "pose", "--json"],
    ["diff", "{path}", "3", "9", "--json"],
    ["doctor", "{path}", "--json"],
    ["replay", "{path}", "--json"],
    ["report", "{path}", "-o", "{out}", "--json"],
    ["repair", "{path}", "-o", "{out}", "--json"],
]


def _analyse(
    capsys: pytest.CaptureFixture[str], path: Path, command: list[str]
) -> tuple[int, Path]:
    out = path.with_name(f"{path.stem}.out.{'html' if command[0] == 'report' else 'mcap'}")
    out.unlink(missing_ok=True)
    argv = [a.format(path=path, out=out) for a in command]
    return outcome(capsys, argv), out


@st.composite
def damage(draw: st.DrawFn, size: int) -> list[tuple[str, int, int]]:
    """Byte damage: flips, cuts and zeroed runs at drawn offsets."""
    kinds = st.sampled_from(["flip", "cut", "zero"])
    return draw(
        st.lists(
            st.tuples(kinds, st.integers(0, size - 1), st.integers(1, 4096)),
            min_size=1,
            max_size=3,
        )
    )


def _damaged(data: bytes, edits: list[tuple[str, int, int]]) -> bytes:
    buf = bytearray(data)
    for kind, at, n in edits:
        at = min(at, max(0, len(buf) - 1))
        if kind == "flip" and buf:
            buf[at] ^= 1 << (n % 8)
        elif kind == "cut":
            del buf[at:]
        elif kind == "zero":
            buf[at : at + n] = bytes(len(buf[at : at + n]))
    return bytes(buf)


def _damaged_recording_case(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    recording: Path,
    data: st.DataObject,
) -> None:
    original = recording.read_bytes()
    edits = data.draw(damage(len(original)))
    command = data.draw(st.sampled_from(ANALYSES))
    path = tmp_path / "damaged.mcap"
    path.write_bytes(_damaged(original, edits))
    before = path.read_bytes()
    code, out = _analyse(capsys, path, command)
    if command[0] != "repair":
        assert path.read_bytes() == before  # an analysis never changes its input
    if code == 0 and command[0] == "repair":
        if out.exists():
            assert scan(out).complete  # a repaired file is a complete recording
        else:  # nothing to repair: the damage undid itself (two flips of one bit)
            assert scan(path).complete


CASES = few_and_many(FEW.max_examples, MANY.max_examples)


def _fuzz(examples: int, case: Callable[[st.DataObject], None]) -> None:
    """``case`` on ``examples`` drawn inputs (a few in the edit loop, many under ``slow``)."""
    given(data=st.data())(settings(FEW, max_examples=examples)(case))()


@pytest.mark.parametrize("examples", CASES)
def test_any_damage_to_a_recording_ends_in_a_documented_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recording: Path, examples: int
) -> None:
    _fuzz(examples, lambda data: _damaged_recording_case(tmp_path, capsys, recording, data))


JUNK = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value nested in ``value`` (dict keys and list indexes)."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:4]):
            found += _paths(v, (*prefix, i))
    return found


def _set(value: Any, path: tuple[Any, ...], new: Any) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = new


def _field_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recording: Path, data: st.DataObject
) -> None:
    """A valid MCAP file (every checksum right) whose JSON has a nested field of the wrong
    type or shape: the typed records must refuse it, not the code that uses it."""
    old = scan(recording)
    topics = {cid: c.topic for cid, c in old.channels.items()}
    index = data.draw(st.integers(0, len(old.messages) - 1))
    message = old.messages[index]
    body = json.loads(message.data)
    paths = _paths(body)
    if paths:
        _set(body, data.draw(st.sampled_from(paths)), data.draw(JUNK))
    else:
        body = data.draw(JUNK)
    path = tmp_path / "fields.mcap"
    writer = Recorder(path, metadata=old.metadata.get("run") or {})
    writer.copy_messages(
        RawMessage(
            topics[m.channel_id],
            m.sequence,
            m.log_time,
            m.publish_time,
            json.dumps(body).encode() if i == index else m.data,
        )
        for i, m in enumerate(old.messages)
    )
    writer.close()
    _analyse(capsys, path, data.draw(st.sampled_from(ANALYSES)))


@pytest.mark.parametrize("examples", CASES)
def test_a_nested_field_of_the_wrong_type_ends_in_a_documented_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recording: Path, examples: int
) -> None:
    _fuzz(examples, lambda data: _field_case(tmp_path, capsys, recording, data))


# -- checkpoints --------------------------------------------------------------------------------


@FEW
@given(data=st.data())
def test_any_damage_to_a_checkpoint_is_refused_without_harm(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    recording: Path,
    data: st.DataObject,
) -> None:
    for name in ("run.mcap", "run.ckpt"):
        shutil.copy(recording.with_name(name), tmp_path / name)
    monkeypatch.chdir(tmp_path)
    original = (tmp_path / "run.ckpt").read_bytes()
    edits = data.draw(damage(len(original)))
    damaged = _damaged(original, edits)
    (tmp_path / "run.ckpt").write_bytes(damaged)
    record_before = (tmp_path / "run.mcap").read_bytes()
    code = outcome(capsys, ["run", "--resume", "run.ckpt", "--ticks", "35", "--json"])
    if damaged != original:
        assert code == 2  # a checkpoint is checked whole before anything is run
        assert (tmp_path / "run.mcap").read_bytes() == record_before


# -- journals: lines with their checksums recomputed (issue 30) ----------------------------------

JOURNAL_REQUEST = RunRequest(
    "warehouse", 0, parse_fault("stale:pose@10-30"), ticks=50, specs=SPECS, world=WORLD
)


@pytest.fixture(scope="module")
def journal_line(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real run's journal line (a short run with a fault), as parsed JSON."""
    path = tmp_path_factory.mktemp("journal") / "c.jsonl"
    with Journal(path, code="c") as journal:
        journal.append(JOURNAL_REQUEST, run_one(JOURNAL_REQUEST))
    entry: dict[str, Any] = json.loads(path.read_bytes().splitlines()[1])
    return entry


def _journal_case(tmp_path: Path, line: dict[str, Any], data: st.DataObject) -> None:
    """A journal line with a nested field replaced by junk and its checksum recomputed, so
    that the edit reaches the typed fields and the judging behind the checksum: the line is
    refused (its run runs again) or judged again, never trusted and never a traceback."""
    entry = copy.deepcopy(line)
    result = entry["result"]
    for _ in range(data.draw(st.integers(1, 3))):
        _set(result, data.draw(st.sampled_from(_paths(result))), data.draw(JUNK))
    entry["sha256"] = line_digest(entry["key"], result)
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(HEADER + json.dumps(entry).encode() + b"\n")
    with Journal(path, code="c") as journal:
        got = journal.get(JOURNAL_REQUEST)
        if journal.refused:
            assert got is None and [n for n, _ in journal.refused] == [2]
            return
    if result["error"] is not None:  # the edit made it a run that ended in an error
        assert got is None  # kept, but run again: never reused
        return
    assert got is not None
    again = judged(
        JOURNAL_REQUEST,
        measured=got["measured"],
        seen=[
            {k: c[k] for k in ("cabin", "reaction", "because", "seen_at")} for c in got["expected"]
        ],
        fault_started=got["fault_started"],
        board_digest=got["board_digest"],
    )
    assert got == again  # what was reused is what the judge says of what it measured
    if got["passed"]:
        assert got["safe"] and got["reactions_ok"] and got["verdict"]["status"] != "failed"
        assert got["collisions"] == 0 == got["safety_violations"]


@pytest.mark.parametrize("examples", CASES)
def test_any_edit_to_a_journal_line_is_refused_or_judged_again(
    tmp_path: Path, journal_line: dict[str, Any], examples: int
) -> None:
    _fuzz(examples, lambda data: _journal_case(tmp_path, journal_line, data))


# -- long-term memory files edited with SQL (issue 30) --------------------------------------------

MEMORY_COLUMNS = {
    "memories": (
        "scope", "content", "metadata", "stamp", "embedding", "last_used", "importance",
        "pinned", "expires", "subject", "status", "replaced_by",
    ),
    "pending": ("content", "scope", "metadata", "stamp"),
    "meta": ("value",),
}  # fmt: skip
SQL_VALUES = (
    st.none()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats()
    | st.text(max_size=8)
    | st.binary(max_size=8)
    | JUNK.map(json.dumps)
    | st.sampled_from(["[" * 5000 + "]" * 5000, '{"robot": ["r1"]}', "current", "99"])
)


@pytest.fixture(scope="module")
def memory_file(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A long-term memory with facts, text memories and a queued write, as bytes."""
    path = tmp_path_factory.mktemp("memory") / "m.sqlite"
    with LongTermMemory(str(path)) as memory:
        memory.remember("aisle 3 was blocked", scope={"robot": "r1"}, stamp=1.0)
        memory.remember("dock B unloads slowly", scope={"robot": "r1"}, stamp=2.0)
        memory.enqueue("charger 2 is slow", scope={"robot": "r1"}, stamp=3.0)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode = DELETE")  # one file, copied whole
    db.close()
    return path.read_bytes()


def _memory_case(tmp_path: Path, original: bytes, data: st.DataObject) -> None:
    """A memory file edited with SQL: opened and read, or refused with a ``MemoryFileError``
    (or an ``EmbedderMismatch``) and left byte for byte as it was, never a traceback."""
    path = tmp_path / "m.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.write_bytes(original)
    table = data.draw(st.sampled_from(sorted(MEMORY_COLUMNS)))
    column = data.draw(st.sampled_from(MEMORY_COLUMNS[table]))
    try:
        with sqlite3.connect(path) as db:
            db.execute(f"UPDATE {table} SET {column} = ?", (data.draw(SQL_VALUES),))
    except sqlite3.IntegrityError:  # the schema refuses it (NOT NULL): no such file
        return
    finally:
        db.close()
    edited = path.read_bytes()
    try:
        with LongTermMemory(str(path)) as memory:
            memory.records(scope={"robot": "r1"})
            memory.recall("aisle", scope={"robot": "r1"})
    except TickworkError as exc:  # a MemoryFileError, or an EmbedderMismatch
        assert str(path) in str(exc)
        assert path.read_bytes() == edited and not Path(f"{path}-wal").exists()


@pytest.mark.parametrize("examples", CASES)
def test_any_sql_edit_to_a_memory_file_is_read_or_refused_without_harm(
    tmp_path: Path, memory_file: bytes, examples: int
) -> None:
    _fuzz(examples, lambda data: _memory_case(tmp_path, memory_file, data))
