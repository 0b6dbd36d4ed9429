"""Checkpoint and resume: a resumed run ends exactly where the uninterrupted one does."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shapely.geometry import Point

from runtime import (
    CabinMap,
    EventLog,
    Eviction,
    Feature,
    SimClock,
    StateBoard,
    WorkingMemory,
    WorkItem,
)
from runtime.recording.format import ALL_CHANNELS, SERIES, STATS, WORKING_SET
from runtime.recording.reader import Recording
from runtime.recording.timebase import START_KEY, START_TEXT_KEY, TimeBase
from sim import cli
from sim.faults.model import parse_fault
from sim.run.checkpoint import (
    MAGIC,
    Checkpointer,
    CheckpointError,
    RunPlan,
    continue_recording,
    load,
    read_info,
    resume,
    save,
)
from sim.run.harness import Simulation, deterministic_fields
from tests.support.paths import ROOT

FAULTS = ("missing:executor:event:action_failed*@40-90", "crash:planner@60-65")


def _summary(sim: Simulation, ticks: int, **kwargs: Any) -> dict[str, Any]:
    return deterministic_fields(sim.run(ticks, until_done=False, **kwargs))


@pytest.fixture(scope="module")
def straight_300() -> dict[str, Any]:
    return _summary(Simulation("warehouse", seed=0), 300)


def test_a_checkpoint_at_200_resumed_to_300_equals_an_uninterrupted_run(
    tmp_path: Path, straight_300: dict[str, Any]
) -> None:
    plan = RunPlan(ticks=300, until_done=False, every=200, path=str(tmp_path / "run.ckpt"))
    checkpointer = Checkpointer(plan)
    checkpointing = _summary(Simulation("warehouse", seed=0), 300, after_tick=checkpointer)
    assert checkpointing == straight_300  # writing checkpoints does not disturb the run
    assert checkpointer.written == 1 and read_info(plan.path or "").tick == 200

    restored = load(tmp_path / "run.ckpt")
    assert restored.sim.loop.tick == 200 and restored.remaining == 100
    resumed = deterministic_fields(restored.run())
    assert resumed == straight_300
    for digest in ("board_digest", "world_digest", "memory_digest", "log_digest"):
        assert resumed[digest] == straight_300[digest]


@pytest.fixture(scope="module")
def straight_with_faults() -> dict[str, Any]:
    sim = Simulation("warehouse", seed=3, faults=[parse_fault(f) for f in FAULTS])
    return _summary(sim, 120)


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(at=st.integers(min_value=1, max_value=119))
def test_resuming_from_any_tick_ends_in_the_same_state(
    tmp_path: Path, straight_with_faults: dict[str, Any], at: int
) -> None:
    sim = Simulation("warehouse", seed=3, faults=[parse_fault(f) for f in FAULTS])
    sim.run(at, until_done=False)
    save(sim, RunPlan(ticks=120, until_done=False), tmp_path / f"{at}.ckpt")
    resumed = load(tmp_path / f"{at}.ckpt").run()
    assert deterministic_fields(resumed) == straight_with_faults


def test_a_restored_simulation_is_wired_as_a_new_one(tmp_path: Path) -> None:
    sim = Simulation("warehouse", seed=0)
    sim.run(20, until_done=False)
    sim.board.write("scan", np.arange(4.0))
    writes = sim.digest.writes
    save(sim, RunPlan(ticks=40), tmp_path / "a.ckpt")
    back = load(tmp_path / "a.ckpt").sim

    assert back.board.lock is back.cabin_map.lock is back.log.lock
    assert back.board.lock is not sim.board.lock
    assert back.world.rng is back.rng  # one generator, still shared
    assert back.loop.clock is back.clock is back.board.clock
    value = back.board.value("scan")
    assert isinstance(value, np.ndarray) and not value.flags.writeable
    back.board.write("probe", 1)
    assert back.digest.writes == writes + 1  # the digest listens to the board again
    back.log.append("probe", {"x": 1})
    assert back.tally.kinds["probe"] == 1  # and the tally to the log


# -- the runtime sources pickle -------------------------------------------------------------


def test_a_pickled_board_keeps_its_readings_and_gets_a_new_lock() -> None:
    clock = SimClock()
    board = StateBoard(clock=clock)
    heard: list[str] = []
    board.add_listener(lambda reading, key: heard.append(key))
    for key in ("b", "a:1", "a:2"):
        board.write(key, {"v": [1, 2]}, ttl=2.0, source="test")
    board.delete("b")
    back = pickle.loads(pickle.dumps(board))
    assert back.readings() == board.readings() and back.seq == board.seq
    assert back.keys("a:*") == ("a:1", "a:2")
    assert isinstance(back.lock, type(threading.RLock())) and back.lock is not board.lock
    back.write("c", 1)
    assert heard == ["b", "a:1", "a:2", "b"] and back.seq == board.seq + 1


@settings(max_examples=25, deadline=None)
@given(
    points=st.lists(st.tuples(st.floats(0, 50), st.floats(0, 50)), min_size=1, max_size=90),
    removed=st.integers(0, 20),
    center=st.tuples(st.floats(0, 50), st.floats(0, 50)),
    radius=st.floats(0, 30),
)
def test_a_pickled_map_answers_every_query_as_before(
    points: list[tuple[float, float]], removed: int, center: tuple[float, float], radius: float
) -> None:
    cabin_map = CabinMap(overflow_limit=4)
    for i, xy in enumerate(points):
        cabin_map.add(Feature(f"f{i}", Point(xy).buffer(0.5), "box", tags=frozenset({f"t{i % 3}"})))
        if i % 7 == 0:
            cabin_map.window((25, 25), 5)  # builds the index part way
    for i in range(min(removed, len(points) - 1)):
        cabin_map.discard(f"f{i}")
    back = pickle.loads(pickle.dumps(cabin_map))
    assert back.version == cabin_map.version and back.features() == cabin_map.features()
    assert back.window(center, radius) == cabin_map.window(center, radius)
    assert back.window(center, radius, tags="t1") == cabin_map.window(center, radius, tags="t1")
    route = [center, (50.0 - center[0], center[1])]
    assert back.corridor(route, 2.0) == cabin_map.corridor(route, 2.0)


def test_a_pickled_log_goes_on_numbering_and_answering_the_same() -> None:
    clock = SimClock()
    log = EventLog(clock=clock, retention=8)
    for i in range(20):
        clock.advance(0.5)
        log.append("tick" if i % 2 else "alarm", {"i": i}, tags=("a", f"n{i % 3}"))
    back = pickle.loads(pickle.dumps(log))
    assert back.query(0, limit=None) == log.query(0, limit=None)
    assert back.query(3.0, kinds=["alarm"], tags=["n1"]) == log.query(
        3.0, kinds=["alarm"], tags=["n1"]
    )
    assert back.dropped == log.dropped
    assert back.append("x").seq == log.append("x").seq == 21


@settings(max_examples=40, deadline=None)
@given(
    pushes=st.lists(
        st.tuples(st.integers(0, 30), st.integers(0, 4), st.integers(0, 9)), min_size=1, max_size=80
    ),
    cut=st.integers(0, 80),
)
def test_a_pickled_memory_forgets_exactly_as_the_original(
    pushes: list[tuple[int, int, int]], cut: int
) -> None:
    def push(
        memory: WorkingMemory, batch: list[tuple[int, int, int]], start: int
    ) -> list[Eviction]:
        out: list[Eviction] = []
        for n, (key, weight, used) in enumerate(batch, start):
            item = WorkItem(
                f"goal:{key}" if key % 11 == 0 else f"k{key}",
                n,
                importance=weight / 4,
                last_used=float(used),
            )
            out.extend(memory.push(item, tick=n))
        return out

    cut = min(cut, len(pushes))
    straight = WorkingMemory(capacity=6)
    expected = push(straight, pushes, 0)
    first = WorkingMemory(capacity=6)
    got = push(first, pushes[:cut], 0)
    second = pickle.loads(pickle.dumps(first))
    got += push(second, pushes[cut:], cut)
    assert got == expected
    assert second.items() == straight.items()
    assert second.capacity_alarms == straight.capacity_alarms


# -- the command line ------------------------------------------------------------------------


def _sim_cli(*args: str, cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "sim", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _tick_of(path: Path) -> int:
    try:
        return read_info(path).tick
    except CheckpointError:
        return -1


def _run_time(value: Any, start: TimeBase) -> Any:
    """``value`` with every Foxglove ``timestamp`` as ns since the run's start."""
    if isinstance(value, list):
        return [_run_time(v, start) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _run_time(v, start) for k, v in value.items()}
    stamp = value.get("timestamp")
    if isinstance(stamp, dict) and set(stamp) == {"sec", "nsec"}:
        out["timestamp"] = stamp["sec"] * 1_000_000_000 + stamp["nsec"] - start.start_ns
    return out


def _messages(path: Path) -> dict[str, list[Any]]:
    """Every message of a recording by topic, but /stats and /series (their compute times
    are measured); Foxglove timestamps as run time (each run has its own wall-clock start)."""
    recording = Recording.open(path)
    start = TimeBase.from_metadata(recording.metadata)
    return {
        topic: [_run_time(m, start) for m in recording.messages(ALL_CHANNELS[topic])]
        for topic in recording.topics
        if topic not in (STATS.topic, SERIES.topic)
    }


@pytest.mark.slow
def test_a_run_killed_with_sigkill_and_resumed_equals_the_uninterrupted_run(tmp_path: Path) -> None:
    common = ("run", "--ticks", "1200", "--json")
    straight = _sim_cli(*common, "--record", "straight.mcap", cwd=tmp_path)
    killed = _sim_cli(*common, "--checkpoint-every", "200", "--record", "run.mcap", cwd=tmp_path)
    checkpoint = tmp_path / "run.ckpt"  # the default: beside the recording
    deadline = time.monotonic() + 60
    while _tick_of(checkpoint) < 400 and killed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)  # waiting on a real process
    killed.send_signal(signal.SIGKILL)
    killed.communicate()
    assert killed.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    at = read_info(checkpoint).tick
    assert at >= 400
    assert Recording.open(tmp_path / "run.mcap").damaged  # cut short by the kill

    resuming = _sim_cli("run", "--resume", "run.ckpt", "--json", cwd=tmp_path)
    out, err = resuming.communicate()
    assert resuming.returncode == 0, err
    resumed = json.loads(out)
    straight_out, straight_err = straight.communicate()
    assert straight.returncode == 0, straight_err
    expected = json.loads(straight_out)
    assert deterministic_fields(resumed) == deterministic_fields(expected)
    for digest in ("board_digest", "world_digest", "memory_digest", "log_digest"):
        assert resumed[digest] == expected[digest]

    recording = Recording.open(tmp_path / "run.mcap")
    assert not recording.damaged
    ticks = [m["tick"] for m in recording.messages(WORKING_SET)]
    assert ticks == list(range(1200))  # every tick once, in order
    assert _messages(tmp_path / "run.mcap") == _messages(tmp_path / "straight.mcap")
    straight_meta = dict(Recording.open(tmp_path / "straight.mcap").metadata)
    assert recording.metadata["run_id"] == read_info(checkpoint).run["run_id"]  # one run
    assert straight_meta.pop("run_id") != recording.metadata["run_id"]  # two runs alike
    own = ("run_id", START_KEY, START_TEXT_KEY)  # each run has its own id and start
    assert {k: v for k, v in recording.metadata.items() if k not in own} == {
        k: v for k, v in straight_meta.items() if k not in own
    }


def test_recording_continues_across_two_crashes(tmp_path: Path) -> None:
    record = tmp_path / "run.mcap"
    plan = RunPlan(
        ticks=150, until_done=False, record=str(record), every=50, path=str(tmp_path / "run.ckpt")
    )
    sim = Simulation("warehouse", seed=1, record=record)
    sim.run(70, until_done=False, after_tick=Checkpointer(plan))  # dies at 70: no close
    again = resume(plan.path or "")
    assert again.info.tick == 50
    again.sim.run(60, until_done=False, after_tick=Checkpointer(again.plan))  # dies at 110
    last = resume(plan.path or "")
    assert last.info.tick == 100
    last.run()
    last.sim.close()
    straight = Simulation("warehouse", seed=1, record=tmp_path / "straight.mcap")
    expected = _summary(straight, 150)
    straight.close()
    assert deterministic_fields(last.sim.summary()) == expected
    assert [m["tick"] for m in Recording.open(record).messages(WORKING_SET)] == list(range(150))
    assert _messages(record) == _messages(tmp_path / "straight.mcap")


def test_a_recording_that_lost_ticks_before_the_checkpoint_is_refused(tmp_path: Path) -> None:
    record = tmp_path / "run.mcap"
    sim = Simulation("warehouse", seed=0, record=record)
    sim.run(30, until_done=False)
    sim.close()
    with pytest.raises(CheckpointError, match=r"lacks 10 of the 40 ticks .*first missing: tick 30"):
        continue_recording(sim, record, tick=40)
    with pytest.raises(CheckpointError, match="no such file"):
        continue_recording(sim, tmp_path / "nowhere.mcap", tick=40)


@pytest.fixture(scope="module")
def good_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ckpt") / "good.ckpt"
    sim = Simulation("warehouse", seed=0)
    sim.run(10, until_done=False)
    save(sim, RunPlan(ticks=20, until_done=False), path)
    return path


def _rewrite_header(path: Path, *, damaged: bool = False, **changes: Any) -> bytes:
    """The checkpoint with header fields changed, as another tickwork would have written
    them (the header's checksum made again), or as damage (``damaged``: the old checksum)."""
    from sim.run.checkpoint import _header_digest

    data = path.read_bytes()
    head_end = data.index(b"\n", len(MAGIC)) + 1
    header = json.loads(data[len(MAGIC) : head_end])
    header.update(changes)
    if not damaged:
        header["header_sha256"] = _header_digest(header)
    return MAGIC + json.dumps(header).encode() + b"\n" + data[head_end:]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda good: b"PK\x03\x04 certainly not a checkpoint", "not a tickwork checkpoint"),
        (lambda good: b"", "not a tickwork checkpoint"),
        (lambda good: MAGIC + b"{not json\n", "header is not JSON"),
        (lambda good: MAGIC + b'{"format": 1}', "header is cut short"),
        (lambda good: good[: len(good) - 100], "cut short"),
        (lambda good: good[:-1] + bytes([good[-1] ^ 0xFF]), "does not match its checksum"),
    ],
)
def test_a_garbage_checkpoint_is_a_clear_error_with_exit_2(
    tmp_path: Path,
    good_checkpoint: Path,
    capsys: pytest.CaptureFixture[str],
    damage: Any,
    message: str,
) -> None:
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(damage(good_checkpoint.read_bytes()))
    assert cli.main(["run", "--resume", str(bad), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: ") and message in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"tickwork_version": "0.0.1"}, "written by tickwork 0.0.1; this is tickwork"),
        ({"format": 99}, "checkpoint format 99"),
        ({"plan": {"ticks": -5}}, "missing or bad field"),
    ],
)
def test_a_checkpoint_of_another_version_is_refused_with_exit_2(
    tmp_path: Path,
    good_checkpoint: Path,
    capsys: pytest.CaptureFixture[str],
    changes: dict[str, Any],
    message: str,
) -> None:
    other = tmp_path / "other.ckpt"
    other.write_bytes(_rewrite_header(good_checkpoint, **changes))
    assert cli.main(["run", "--resume", str(other), "--json"]) == 2
    assert message in capsys.readouterr().err


def test_resume_refuses_settings_of_its_own_and_an_end_before_the_checkpoint(
    good_checkpoint: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", "--resume", str(good_checkpoint), "--seed", "3", "--json"]) == 2
    assert "--seed cannot be given with it" in capsys.readouterr().err
    assert cli.main(["run", "--resume", str(good_checkpoint), "--ticks", "5", "--json"]) == 2
    assert "cannot end at tick 5: its checkpoint is at tick 10" in capsys.readouterr().err
    assert cli.main(["run", "--resume", "/no/such.ckpt"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert cli.main(["run", "--ticks", "5", "--checkpoint", "x.ckpt"]) == 2
    assert "needs --checkpoint-every" in capsys.readouterr().err


def test_resume_goes_on_to_a_new_end_when_asked(
    good_checkpoint: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", "--resume", str(good_checkpoint), "--ticks", "30", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ticks"] == 30
    assert read_info(good_checkpoint).tick == 10  # no cadence: the checkpoint is left alone


# -- atomic writes ---------------------------------------------------------------------------


@pytest.fixture
def checkpointed(tmp_path: Path) -> Iterator[tuple[Simulation, Path, bytes]]:
    sim = Simulation("warehouse", seed=0)
    sim.run(15, until_done=False)
    path = tmp_path / "run.ckpt"
    save(sim, RunPlan(ticks=40), path)
    sim.run(5, until_done=False)
    yield sim, path, path.read_bytes()


def test_a_state_that_fails_to_pickle_leaves_the_previous_checkpoint_intact(
    checkpointed: tuple[Simulation, Path, bytes],
) -> None:
    sim, path, before = checkpointed
    sim.world.unpicklable = lambda: None  # type: ignore[attr-defined]
    with pytest.raises(CheckpointError, match="at tick 20: its state does not pickle"):
        save(sim, RunPlan(ticks=40), path)
    assert path.read_bytes() == before and load(path).info.tick == 15
    assert sorted(p.name for p in path.parent.iterdir()) == ["run.ckpt"]


def test_a_write_that_fails_half_way_leaves_the_previous_checkpoint_intact(
    checkpointed: tuple[Simulation, Path, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    sim, path, before = checkpointed

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(CheckpointError, match="No space left on device"):
        save(sim, RunPlan(ticks=40), path)
    monkeypatch.undo()
    assert path.read_bytes() == before and load(path).info.tick == 15
    assert sorted(p.name for p in path.parent.iterdir()) == ["run.ckpt"]
    save(sim, RunPlan(ticks=40), path)
    assert load(path).info.tick == 20


# -- a checkpoint never runs code from the file ------------------------------------------------


def _with_payload(good: Path, payload: bytes, target: Path) -> Path:
    """A checkpoint with ``good``'s header and another payload (length and sha256 fixed up)."""
    import hashlib

    from sim.run.checkpoint import _header_digest

    data = good.read_bytes()
    head_end = data.index(b"\n", len(MAGIC)) + 1
    header = json.loads(data[len(MAGIC) : head_end])
    header.update(payload_bytes=len(payload), payload_sha256=hashlib.sha256(payload).hexdigest())
    header["header_sha256"] = _header_digest(header)  # a forger fixes every checksum
    target.write_bytes(MAGIC + json.dumps(header).encode() + b"\n" + payload)
    return target


class _RunsACommand:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


class _OpensAFile:
    def __init__(self, victim: Path) -> None:
        self.victim = victim

    def __reduce__(self) -> tuple[Any, ...]:
        from runtime.recording.writer import Recorder

        return (Recorder, (str(self.victim),))  # a tickwork class, whose constructor writes


class _ReachesForGlobals:
    def __reduce__(self) -> tuple[Any, ...]:
        return (getattr, (parse_fault, "__globals__"))


@pytest.mark.parametrize("payload", ["command", "constructor", "globals"])
def test_a_crafted_checkpoint_is_refused_before_anything_it_names_runs(
    good_checkpoint: Path, tmp_path: Path, payload: str
) -> None:
    marker, victim = tmp_path / "pwned", tmp_path / "precious.txt"
    victim.write_text("keep me")
    crafted = {
        "command": _RunsACommand(marker),
        "constructor": _OpensAFile(victim),
        "globals": _ReachesForGlobals(),
    }[payload]
    evil = _with_payload(good_checkpoint, pickle.dumps(crafted, protocol=5), tmp_path / "evil.ckpt")
    with pytest.raises(CheckpointError, match="refused"):
        load(evil)
    assert not marker.exists() and victim.read_text() == "keep me"
    assert cli.main(["run", "--resume", str(evil)]) == 2
    assert not marker.exists() and victim.read_text() == "keep me"


def test_every_name_a_real_checkpoint_holds_is_allowed(good_checkpoint: Path) -> None:
    restored = load(good_checkpoint).sim  # the pure-Python restricted unpickler, end to end
    assert restored.loop.tick == 10 and restored.world.state.ticks == 10


def test_resume_refuses_to_splice_onto_another_runs_recording(tmp_path: Path) -> None:
    record = tmp_path / "run.mcap"
    plan = RunPlan(
        ticks=40, until_done=False, record=str(record), every=20, path=str(tmp_path / "run.ckpt")
    )
    first = Simulation("warehouse", seed=0, record=record)
    first.run(25, until_done=False, after_tick=Checkpointer(plan))
    first.close()
    other = Simulation("warehouse", seed=0, record=record)  # the same path, another run
    other.run(30, until_done=False)
    other.close()
    before = record.read_bytes()
    with pytest.raises(CheckpointError, match="belongs to another run"):
        resume(tmp_path / "run.ckpt")
    assert record.read_bytes() == before  # the other run's recording is left as it was


def test_a_run_killed_before_its_first_boundary_can_still_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "early.ckpt"
    args = ["run", "--ticks", "30", "--full", "--checkpoint-every", "100", "--checkpoint"]
    assert cli.main([*args, str(path), "--json"]) == 0
    straight = json.loads(capsys.readouterr().out)
    assert read_info(path).tick == 0  # written before the first tick
    assert cli.main(["run", "--resume", str(path), "--json"]) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert resumed["board_digest"] == straight["board_digest"] and resumed["ticks"] == 30


def test_a_damaged_header_is_refused_before_anything_runs(
    tmp_path: Path, good_checkpoint: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A changed plan (here the checkpoint path) with the state intact: without a header
    checksum the run resumed and checkpointed elsewhere (the fuzz suite's find)."""
    header = json.loads(good_checkpoint.read_bytes().split(b"\n")[1])
    plan = {**header["plan"], "path": str(tmp_path / "elsewhere.ckpt")}
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(_rewrite_header(good_checkpoint, damaged=True, plan=plan))
    assert cli.main(["run", "--resume", str(bad), "--json"]) == 2
    assert "header does not match its checksum" in capsys.readouterr().err
    assert not (tmp_path / "elsewhere.ckpt").exists()
