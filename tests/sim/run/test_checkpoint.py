"""Checkpoint and resume: a resumed run ends exactly where the uninterrupted one does."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import re
import signal
import struct
import subprocess
import sys
import time
import zlib
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
    ContextSpec,
    EventLog,
    Eviction,
    Feature,
    SimClock,
    StateBoard,
    WorkingMemory,
    WorkItem,
)
from runtime.cabin import innermost
from runtime.recording.format import ALL_CHANNELS, SERIES, STATS, WORKING_SET
from runtime.recording.reader import Recording
from runtime.recording.timebase import START_KEY, START_TEXT_KEY, TimeBase
from runtime.testing import round_trip_state
from sim import cli
from sim.faults.model import parse_fault
from sim.run.checkpoint import (
    MAGIC,
    Checkpointer,
    CheckpointError,
    RunPlan,
    continue_recording,
    decode_body,
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


@pytest.mark.slow
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


FAULT_PLANS = (
    (),
    FAULTS,
    ("stale:pose@30-80", "crash:monitor@50-55"),
    ("dropout:all@20-40", "map-loss:shelf*@10-150"),
    ("event-loss:*@10-90", "missing:*:goal:*@40-70"),
)


def _resumes_exactly(world: int, plan: int, seed: int, end: int, at: int, folder: Path) -> None:
    from sim.world.generate import generate

    scenario = generate(world)
    faults = [parse_fault(f) for f in FAULT_PLANS[plan]]
    straight = _summary(Simulation(scenario, seed=seed, faults=faults), end)
    half = Simulation(scenario, seed=seed, faults=faults)
    half.run(at, until_done=False)
    save(half, RunPlan(ticks=end, until_done=False), folder / "gen.ckpt")
    assert deterministic_fields(load(folder / "gen.ckpt").run()) == straight


RESUMES = {
    "world": st.integers(0, 10_000),
    "plan": st.integers(0, len(FAULT_PLANS) - 1),
    "seed": st.integers(0, 50),
    "end": st.integers(20, 160),
    "cut": st.floats(0.01, 0.99),
}


@pytest.mark.slow
@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(**RESUMES)
def test_generated_worlds_under_faults_resume_exactly(
    tmp_path: Path, world: int, plan: int, seed: int, end: int, cut: float
) -> None:
    _resumes_exactly(world, plan, seed, end, max(1, int(end * cut)), tmp_path)


@pytest.mark.slow
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(**RESUMES)
def test_many_generated_worlds_under_faults_resume_exactly(
    tmp_path: Path, world: int, plan: int, seed: int, end: int, cut: float
) -> None:
    _resumes_exactly(world, plan, seed, end * 3, max(1, int(end * 3 * cut)), tmp_path)


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


# -- the runtime sources keep their state as data ---------------------------------------------


def test_a_board_restored_keeps_its_readings_and_its_own_lock() -> None:
    clock = SimClock()
    board = StateBoard(clock=clock)
    heard: list[str] = []
    board.add_listener(lambda reading, key: heard.append(key))
    for key in ("b", "a:1", "a:2"):
        board.write(key, {"v": [1, 2]}, ttl=2.0, source="test")
    board.delete("b")
    fresh = StateBoard(clock=clock)
    back = round_trip_state(board, fresh)
    assert back.readings() == board.readings() and back.seq == board.seq
    assert back.keys("a:*") == ("a:1", "a:2")
    assert back.lock is not board.lock and back.changes_since(0) is None
    back.write("c", 1)
    assert heard == ["b", "a:1", "a:2", "b"] and back.seq == board.seq + 1  # none carried over


@settings(max_examples=25, deadline=None)
@given(
    points=st.lists(st.tuples(st.floats(0, 50), st.floats(0, 50)), min_size=1, max_size=90),
    removed=st.integers(0, 20),
    center=st.tuples(st.floats(0, 50), st.floats(0, 50)),
    radius=st.floats(0, 30),
)
def test_a_restored_map_answers_every_query_as_before(
    points: list[tuple[float, float]], removed: int, center: tuple[float, float], radius: float
) -> None:
    cabin_map = CabinMap(overflow_limit=4)
    for i, xy in enumerate(points):
        cabin_map.add(Feature(f"f{i}", Point(xy).buffer(0.5), "box", tags=frozenset({f"t{i % 3}"})))
        if i % 7 == 0:
            cabin_map.window((25, 25), 5)  # builds the index part way
    for i in range(min(removed, len(points) - 1)):
        cabin_map.discard(f"f{i}")
    back = round_trip_state(cabin_map, CabinMap())
    assert back.version == cabin_map.version and back.features() == cabin_map.features()
    assert back.window(center, radius) == cabin_map.window(center, radius)
    assert back.window(center, radius, tags="t1") == cabin_map.window(center, radius, tags="t1")
    route = [center, (50.0 - center[0], center[1])]
    assert back.corridor(route, 2.0) == cabin_map.corridor(route, 2.0)


def test_a_restored_log_goes_on_numbering_and_answering_the_same() -> None:
    clock = SimClock()
    log = EventLog(clock=clock, retention=8)
    for i in range(20):
        clock.advance(0.5)
        log.append("tick" if i % 2 else "alarm", {"i": i}, tags=("a", f"n{i % 3}"))
    back = round_trip_state(log, EventLog(clock=clock, retention=8))
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
def test_a_restored_memory_forgets_exactly_as_the_original(
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
    second = round_trip_state(first, WorkingMemory(capacity=6))
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


@pytest.mark.slow
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
        ({"plan": {"ticks": -5}}, "bad field plan.ticks"),
        ({"format": 8}, "older checkpoints were pickles"),
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


def test_a_state_that_is_not_data_leaves_the_previous_checkpoint_intact(
    checkpointed: tuple[Simulation, Path, bytes],
) -> None:
    sim, path, before = checkpointed
    sim.world.stray = object()  # type: ignore[attr-defined]
    with pytest.raises(CheckpointError, match="at tick 20: its state is not data"):
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


# -- a checkpoint is data and never code ---------------------------------------------------------


def _parts(path: Path) -> tuple[dict[str, Any], dict[str, Any], list[bytes]]:
    """A checkpoint's header, its body's document and its blobs."""
    data = path.read_bytes()
    head_end = data.index(b"\n", len(MAGIC)) + 1
    header = json.loads(data[len(MAGIC) : head_end])
    document, blobs = decode_body(str(path), data[head_end:])
    return header, document, blobs


def _forge(header: dict[str, Any], body: bytes, target: Path) -> Path:
    """A checkpoint of ``body`` under ``header`` with every checksum made right (a forger
    fixes them all: they find damage, not forgery)."""
    from sim.run.checkpoint import _header_digest

    header = dict(header)
    header.update(body_bytes=len(body), body_sha256=hashlib.sha256(body).hexdigest())
    header["header_sha256"] = _header_digest(header)
    target.write_bytes(MAGIC + json.dumps(header).encode() + b"\n" + body)
    return target


def _body(document: dict[str, Any], blobs: list[bytes]) -> bytes:
    text = json.dumps(document).encode()
    return zlib.compress(struct.pack(">Q", len(text)) + text + b"".join(blobs))


class _RunsACommand:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def _the_issues_payloads(victim: Path, folder: Path) -> dict[str, Any]:
    """The two payloads issue 30 confirmed against the restricted unpickler:
    ``partial(Recorder, victim)()`` and ``getattr(partial(CabinRef, ...)(), "load")()``."""
    from runtime.recording.writer import Recorder
    from sim.run.harness import CabinRef

    class Call:
        def __init__(self, fn: Any, *args: Any) -> None:
            self.fn, self.args = fn, args

        def __reduce__(self) -> tuple[Any, ...]:
            return (self.fn, self.args)

        def __call__(self) -> None:  # pickle asks that what it will call be callable
            raise AssertionError("never called while pickling")

    spec = Simulation("warehouse").specs["monitor"]
    ref = Call(functools.partial(CabinRef, "evil", "Evil", spec, str(folder)))
    return {
        "recorder": Call(functools.partial(Recorder, str(victim))),
        "cabin_ref": Call(Call(getattr, ref, "load")),
    }


@pytest.mark.parametrize("payload", ["command", "recorder", "cabin_ref"])
def test_a_pickle_in_a_checkpoint_is_not_a_checkpoint_and_runs_nothing(
    good_checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], payload: str
) -> None:
    marker, victim = tmp_path / "pwned", tmp_path / "precious.txt"
    victim.write_text("keep me")
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\nclass Evil: ...\n")
    crafted = {"command": _RunsACommand(marker), **_the_issues_payloads(victim, tmp_path)}
    header, _, _ = _parts(good_checkpoint)
    for body in (
        pickle.dumps(crafted[payload], protocol=5),
        zlib.compress(pickle.dumps(crafted[payload])),
    ):
        evil = _forge(header, body, tmp_path / "evil.ckpt")
        with pytest.raises(CheckpointError, match=r"does not decompress|not JSON|cut short"):
            load(evil)
        assert cli.main(["run", "--resume", str(evil)]) == 2
        assert "Traceback" not in capsys.readouterr().err
    assert not marker.exists() and victim.read_text() == "keep me"
    assert "evil" not in sys.modules


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        # a record kind outside the table (a class by its module path)
        (
            lambda d: d["state"]["$o"][1].update(run_id={"$r": ["sim.run.harness.CabinRef", {}]}),
            "no record kind",
        ),
        (
            lambda d: d["state"]["$o"][1].update(run_id={"$r": ["writer.Recorder", {"path": "x"}]}),
            "no record kind",
        ),
        # an object where the run holds a plain value: objects are never made from the file
        (lambda d: d["state"]["$o"][1].update(run_id={"$o": [999, {"path": "x"}]}), "holds none"),
        # an attribute the object does not have
        (lambda d: d["state"]["$o"][1].update(__class__={"$t": []}), "unknown attributes"),
        (lambda d: d["state"]["$o"][1].update(recorder={"$t": []}), "unknown attributes"),
        (lambda d: d["state"]["$o"][1].pop("run_id"), "without"),
        # the inputs are checked as their files are
        (lambda d: d["inputs"]["scenario"].update(rate_hz=1e308), "scenario is not valid"),
        (lambda d: d["inputs"].update(seed=4), "seed 4 is not the header's"),
        (
            lambda d: d["inputs"]["faults"].append({"kind": "crash", "cabin": "x", "start": 1}),
            "faults",
        ),
    ],
)
def test_a_crafted_state_is_refused_with_a_clear_error(
    good_checkpoint: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Any,
    message: str,
) -> None:
    header, document, blobs = _parts(good_checkpoint)
    edit(document)
    evil = _forge(header, _body(document, blobs), tmp_path / "evil.ckpt")
    with pytest.raises(CheckpointError, match=message):
        load(evil)
    assert cli.main(["run", "--resume", str(evil), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"tick": 40.5}, "bad field tick"),
        ({"tick": "10"}, "bad field tick"),
        ({"tick": True}, "bad field tick"),
        ({"time": "NaN"}, "bad field time"),
        ({"time": -1.0}, "bad field time"),
        ({"run": "x"}, "bad field run"),
        ({"body_bytes": -1}, "bad field body_bytes"),
        ({"extra": 1}, "bad field extra"),
    ],
)
def test_header_values_of_the_wrong_type_or_range_are_refused(
    tmp_path: Path, good_checkpoint: Path, capsys: pytest.CaptureFixture[str],
    changes: dict[str, Any], message: str,
) -> None:  # fmt: skip
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(_rewrite_header(good_checkpoint, **changes))
    assert cli.main(["run", "--resume", str(bad), "--json"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("rate", [1e308, float("inf"), float("nan"), 0.0, -20.0, "20"])
def test_a_header_rate_out_of_range_is_refused_not_an_overflow(
    tmp_path: Path, good_checkpoint: Path, capsys: pytest.CaptureFixture[str], rate: Any
) -> None:
    header = json.loads(good_checkpoint.read_bytes().split(b"\n")[1])
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(_rewrite_header(good_checkpoint, run={**header["run"], "rate_hz": rate}))
    for extra in ([], ["--duration", "30"]):
        assert cli.main(["run", "--resume", str(bad), "--json", *extra]) == 2
        err = capsys.readouterr().err
        assert "bad field run.rate_hz" in err and "Traceback" not in err


def test_a_time_of_nan_in_the_header_is_refused(tmp_path: Path, good_checkpoint: Path) -> None:
    data = good_checkpoint.read_bytes()
    head_end = data.index(b"\n", len(MAGIC)) + 1
    header = json.loads(data[len(MAGIC) : head_end])
    header["time"] = float("nan")
    from sim.run.checkpoint import _header_digest

    header["header_sha256"] = _header_digest(header)  # JSON's NaN, checksum right
    bad = tmp_path / "nan.ckpt"
    bad.write_bytes(MAGIC + json.dumps(header).encode() + b"\n" + data[head_end:])
    with pytest.raises(CheckpointError, match="bad field time"):
        read_info(bad)


def test_a_real_checkpoint_names_no_module_class_or_path(good_checkpoint: Path) -> None:
    from sim.run.runstate import records

    _, document, _ = _parts(good_checkpoint)
    kinds: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "$r" in node:
                kinds.add(node["$r"][0])
            for key, value in node.items():
                assert not re.match(r"^(runtime|cabins|sim|builtins|os|functools)\.", key)
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str):
            assert not re.match(r"^(runtime|cabins|sim)\.\w+\.", node), node
            assert "/" not in node or node.startswith("map:"), node  # no path but map keys

    walk(document)
    assert kinds and kinds <= set(records())


def test_resume_refuses_a_checkpoint_of_another_run_or_other_cabins(
    tmp_path: Path, good_checkpoint: Path
) -> None:
    from sim.run.harness import ExtraCabin

    greeter = ExtraCabin(ContextSpec(name="greeter", board_keys=("pose",)), _Greeter)
    with pytest.raises(CheckpointError, match=r"user cabins \[\], and \['greeter'\] were given"):
        load(good_checkpoint, extra=[greeter])
    with pytest.raises(CheckpointError, match="kept no long-term memory"):
        load(good_checkpoint, long_term=tmp_path / "m.sqlite")
    assert not (tmp_path / "m.sqlite").exists()


class _Greeter:
    """A user cabin that keeps state and says so."""

    def __init__(self, spec: ContextSpec) -> None:
        self.spec, self.name, self.greeted = spec, spec.name, 0

    def step(self, view: Any, out: Any) -> None:
        self.greeted += 1
        if view.tick % 5 == 0:
            out.emit("greeting", {"n": self.greeted})

    def get_state(self) -> dict[str, Any]:
        return {"greeted": self.greeted}

    def set_state(self, data: Any) -> None:
        if not (isinstance(data, dict) and type(data.get("greeted")) is int):
            raise ValueError(f"not a greeter's state: {data!r}")
        self.greeted = data["greeted"]


class _Forgetful(_Greeter):
    get_state = None  # type: ignore[assignment]


def test_a_user_cabin_with_state_resumes_exactly_and_one_without_is_refused(
    tmp_path: Path,
) -> None:
    from sim.run.harness import ExtraCabin

    spec = ContextSpec(name="greeter", board_keys=("pose",), event_kinds=("greeting",))
    straight = Simulation("warehouse", seed=2, extra=[ExtraCabin(spec, _Greeter)])
    expected = _summary(straight, 60)
    half = Simulation("warehouse", seed=2, extra=[ExtraCabin(spec, _Greeter)])
    half.run(33, until_done=False)
    save(half, RunPlan(ticks=60, until_done=False), tmp_path / "g.ckpt")
    back = load(tmp_path / "g.ckpt", extra=[ExtraCabin(spec, _Greeter)])
    assert deterministic_fields(back.run()) == expected
    assert innermost(back.sim.loop.cabins[3]).greeted == 60  # type: ignore[attr-defined]

    forgetful = Simulation("warehouse", seed=2, extra=[ExtraCabin(spec, _Forgetful)])
    with pytest.raises(CheckpointError, match=r"greeter \(.*_Forgetful\).*get_state"):
        save(forgetful, RunPlan(ticks=60), tmp_path / "f.ckpt")
    assert not (tmp_path / "f.ckpt").exists()


def test_the_round_trip_helper_carries_a_user_cabins_state() -> None:
    spec = ContextSpec(name="greeter", board_keys=("pose",))
    cabin = _Greeter(spec)
    cabin.greeted = 41
    assert round_trip_state(cabin, _Greeter(spec)).greeted == 41


class _Moody(_Greeter):
    """A user cabin whose get_state or set_state raises what user code may raise."""

    fail_on: str = ""

    def get_state(self) -> dict[str, Any]:
        if self.fail_on == "get":
            raise RuntimeError("the model file is gone")
        return super().get_state()

    def set_state(self, data: Any) -> None:
        if self.fail_on == "set":
            raise RuntimeError("cannot reconnect")
        super().set_state(data)


def test_a_user_cabin_whose_state_methods_raise_is_a_checkpoint_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guide promises that what a user cabin's set_state raises is one error (exit 2):
    a RuntimeError was a traceback (only TypeError, ValueError and the like were caught)."""
    from sim.run.harness import ExtraCabin

    spec = ContextSpec(name="greeter", board_keys=("pose",), event_kinds=("greeting",))
    sim = Simulation("warehouse", seed=2, extra=[ExtraCabin(spec, _Moody)])
    sim.run(5, until_done=False)
    path = tmp_path / "m.ckpt"
    save(sim, RunPlan(ticks=20, until_done=False), path)
    before = path.read_bytes()
    monkeypatch.setattr(_Moody, "fail_on", "get")
    with pytest.raises(CheckpointError, match="get_state raised RuntimeError: the model file"):
        save(sim, RunPlan(ticks=20, until_done=False), path)
    assert path.read_bytes() == before
    monkeypatch.setattr(_Moody, "fail_on", "set")
    with pytest.raises(CheckpointError, match="set_state raised RuntimeError: cannot reconnect"):
        load(path, extra=[ExtraCabin(spec, _Moody)])


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
