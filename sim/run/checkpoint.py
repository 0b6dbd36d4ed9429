"""Checkpoints: the whole state of a simulated run in one file, so a killed run can go on.

A checkpoint holds the ``Simulation`` pickled whole (board, map, log, working
memory, the world with its random generator, the clock, the loop's counters, the
cabins' private state, the asynchronous decisions in flight with the generator of their
simulated latencies, the fault plan and injector, the summary's tallies and the
board-write digest), pickled as one graph so that objects shared between them
(the generator of the world, the clock, the lock of the sources) stay shared,
and the ``RunPlan``: how far the run goes, whether it stops once the deliveries
are done, where it records and checkpoints. A run resumed from a checkpoint ends
in exactly the state the uninterrupted run ends in.

File format (``FORMAT`` 1): the line ``tickwork-checkpoint``, one line of JSON
(the header: format, tickwork version, tick, plan, the run's settings and the
payload's length and sha256), then the pickle. ``read_info`` reads the header
only; ``load`` checks the version and the checksum before unpickling, so another
version's checkpoint, a file cut short and garbage each get a ``CheckpointError``
saying which. A checkpoint is a pickle: load only checkpoints you wrote.

``save`` writes atomically: a temporary file in the target's folder, flushed and
fsynced, renamed over the target, then the folder fsynced; a failed write leaves
the previous checkpoint as it was. A recorded run's recording is flushed and
fsynced before its checkpoint is written, so the recording holds every tick
before the checkpoint's; ``resume`` starts a new recording at the same path with
those ticks' messages and records the rest of the run after them.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runtime.errors import SettingError, TickworkError
from runtime.files import atomic_output, fsync_folder, open_binary
from sim.run.state_pickle import StatePickler, StateUnpickler

if TYPE_CHECKING:
    from runtime.recording.writer import Recorder
    from sim.run.harness import Simulation

MAGIC = b"tickwork-checkpoint\n"
FORMAT = 8  # 2: caches and long-term memory moved; 3: stop requests, chosen reactions;
# 4: the layout of issue 11 (modules moved, board values typed in cabins.values);
# 5: asynchronous decisions in flight (the loop's executor and its jobs);
# 6: the header carries a checksum of its own; 7: the cabins redesign (cabins as
# packages, the warehouse contract in cabins.warehouse, settings objects); 8: the
# summary's liveness tallies and the world's battery record (issue 29)
_HEADER_LIMIT = 1 << 20


class CheckpointError(TickworkError):
    """A checkpoint that cannot be written, read or resumed; the message says why."""


@dataclass(frozen=True, slots=True)
class RunPlan:
    """How a run goes: what a resumed run needs to end where the original would have.

    ``ticks`` is the tick the run ends at (counted from the start of the run, not of
    the resumption); ``record`` the recording's path; ``every`` and ``path`` the
    checkpoint cadence and file; ``cabins`` the ``--cabin`` arguments of the run
    (their modules must be importable to load the checkpoint).
    """

    ticks: int
    until_done: bool = True
    record: str | None = None
    every: int | None = None
    path: str | None = None
    cabins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.ticks, bool) or not isinstance(self.ticks, int) or self.ticks < 0:
            raise SettingError(f"ticks must be a whole number >= 0, got {self.ticks!r}")
        if self.every is not None and (
            isinstance(self.every, bool) or not isinstance(self.every, int) or self.every < 1
        ):
            raise SettingError(f"checkpoint every must be a whole number >= 1, got {self.every!r}")
        if self.every is not None and self.path is None:
            raise SettingError(f"checkpoints every {self.every} ticks need a path")
        object.__setattr__(self, "cabins", tuple(self.cabins))


@dataclass(frozen=True, slots=True)
class CheckpointInfo:
    """A checkpoint's header: what it holds, without unpickling it."""

    path: str
    tick: int
    time: float
    tickwork_version: str
    plan: RunPlan
    run: dict[str, Any]
    payload_offset: int
    payload_bytes: int
    payload_sha256: str


@dataclass(slots=True)
class Checkpoint:
    """A loaded checkpoint: the simulation at ``info.tick`` and the plan it runs on."""

    sim: Simulation
    plan: RunPlan
    info: CheckpointInfo

    @property
    def remaining(self) -> int:
        """Ticks left to the plan's end."""
        return max(0, self.plan.ticks - self.sim.loop.tick)

    def run(self, **kwargs: Any) -> dict[str, Any]:
        """Run to the plan's end, checkpointing on its cadence; the summary.

        Keyword arguments go to ``Simulation.run`` (e.g. ``progress``).
        """
        after = Checkpointer(self.plan) if self.plan.every is not None else None
        return self.sim.run(
            self.remaining, until_done=self.plan.until_done, after_tick=after, **kwargs
        )


def tickwork_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tickwork")
    except PackageNotFoundError:
        return "unknown"


# -- writing -----------------------------------------------------------------------------------


def run_settings(sim: Simulation) -> dict[str, Any]:
    """The run's settings as the header shows them."""
    return {
        "run_id": sim.run_id,
        "scenario": sim.scenario.name,
        "seed": sim.seed,
        "rate_hz": sim.rate_hz,
        "capacity": sim.memory.capacity,
        "faults": [f.label for f in sim.faults.faults],
        "cabins": [c.name for c in sim.loop.cabins],
    }


def save(sim: Simulation, plan: RunPlan, path: str | Path | None = None) -> CheckpointInfo:
    """Write ``sim`` and ``plan`` to ``path`` (default: the plan's) atomically; its header.

    A recording in progress is flushed and fsynced first.
    """
    where = path if path is not None else plan.path
    if where is None:
        raise SettingError("save needs a path, or a plan with one")
    target = Path(where)
    tick = sim.loop.tick
    if sim.recorder is not None:
        sim.recorder.sync()
    buffer = io.BytesIO()
    try:
        StatePickler(buffer).dump(sim)
    except Exception as exc:
        raise CheckpointError(
            f"cannot checkpoint the run at tick {tick}: its state does not "
            f"pickle ({type(exc).__name__}: {exc})"
        ) from exc
    payload = buffer.getbuffer()
    header = {
        "format": FORMAT,
        "tickwork_version": tickwork_version(),
        "python": ".".join(map(str, sys.version_info[:3])),
        "tick": tick,
        "time": sim.clock.now(),
        "plan": asdict(plan),
        "run": run_settings(sim),
        "payload_bytes": len(payload),
        "payload_sha256": hashlib.sha256(payload).hexdigest(),
    }
    header["header_sha256"] = _header_digest(header)
    head = MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n"
    try:
        with atomic_output(target, mode=0o600) as fh:
            fh.write(head)
            fh.write(payload)
    except OSError as exc:
        raise CheckpointError(f"cannot write checkpoint {target}: {exc.strerror or exc}") from exc
    return _info(str(target), header, len(head))


class Checkpointer:
    """Saves a checkpoint every ``plan.every`` ticks; pass it as ``Simulation.run``'s
    ``after_tick``. No checkpoint is written at the plan's last tick."""

    def __init__(self, plan: RunPlan) -> None:
        if plan.every is None or plan.path is None:
            raise SettingError("a Checkpointer needs a plan with every and path set")
        self.plan = plan
        self.every = plan.every
        self.last: CheckpointInfo | None = None
        self.written = 0

    def start(self, sim: Simulation) -> None:
        """Checkpoint a run that has not run a tick yet, so that a run killed before its first
        ``every`` boundary can resume too (a run resumed from a checkpoint has one)."""
        if sim.loop.tick == 0 and self.plan.ticks > 0:
            self.last = save(sim, self.plan)
            self.written += 1

    def __call__(self, sim: Simulation) -> None:
        tick = sim.loop.tick
        if tick % self.every == 0 and tick < self.plan.ticks:
            self.last = save(sim, self.plan)
            self.written += 1


# -- reading -----------------------------------------------------------------------------------


def _header_digest(header: dict[str, Any]) -> str:
    """sha256 of a header's fields but its own checksum (a damaged plan or setting would
    otherwise resume, say, checkpointing to another path)."""
    fields = {k: v for k, v in header.items() if k != "header_sha256"}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def read_info(path: str | Path) -> CheckpointInfo:
    """The header of the checkpoint at ``path``; ``CheckpointError`` if it is not a whole one."""
    shown = str(path)
    fh, size = open_binary(path, what="a checkpoint", error=CheckpointError)
    with fh:
        magic = fh.read(len(MAGIC))
        if magic != MAGIC:
            raise CheckpointError(
                f"{shown}: not a tickwork checkpoint (it starts with {magic!r}, expected {MAGIC!r})"
            )
        line = fh.readline(_HEADER_LIMIT)
        offset = fh.tell()
    if not line.endswith(b"\n"):
        raise CheckpointError(f"{shown}: a checkpoint whose header is cut short or too long")
    try:
        header = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{shown}: a checkpoint whose header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{shown}: a checkpoint whose header is not a JSON object")
    if header.get("format") != FORMAT:
        raise CheckpointError(
            f"{shown}: checkpoint format {header.get('format')!r}, written by tickwork "
            f"{header.get('tickwork_version', 'unknown')}; this tickwork "
            f"({tickwork_version()}) reads format {FORMAT}"
        )
    if header.get("header_sha256") != _header_digest(header):
        raise CheckpointError(f"{shown}: damaged: its header does not match its checksum")
    info = _info(shown, header, offset)
    if size < offset + info.payload_bytes:
        raise CheckpointError(
            f"{shown}: cut short: {size - offset} of its {info.payload_bytes} state bytes are there"
        )
    return info


def _info(path: str, header: dict[str, Any], offset: int) -> CheckpointInfo:
    try:
        plan = header["plan"]
        return CheckpointInfo(
            path=path,
            tick=int(header["tick"]),
            time=float(header["time"]),
            tickwork_version=str(header["tickwork_version"]),
            plan=RunPlan(**{**plan, "cabins": tuple(plan.get("cabins", ()))}),
            run=dict(header["run"]),
            payload_offset=offset,
            payload_bytes=int(header["payload_bytes"]),
            payload_sha256=str(header["payload_sha256"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(
            f"{path}: a checkpoint header with a missing or bad field ({type(exc).__name__}: {exc})"
        ) from None


def load(path: str | Path, *, cabin_modules: Iterable[str] = ()) -> Checkpoint:
    """The checkpoint at ``path``, unpickled; ``CheckpointError`` if it cannot be.

    ``cabin_modules`` are the modules of the user cabins the run holds, as the person
    resuming names them: only their classes and tickwork's may be rebuilt."""
    from sim.run.harness import Simulation

    info = read_info(path)
    shown = info.path
    version = tickwork_version()
    if info.tickwork_version != version:
        raise CheckpointError(
            f"{shown}: written by tickwork {info.tickwork_version}; this is "
            f"tickwork {version}: resume it with the version that wrote it"
        )
    with open(path, "rb") as fh:
        fh.seek(info.payload_offset)
        payload = fh.read(info.payload_bytes + 1)
    if len(payload) != info.payload_bytes:
        raise CheckpointError(
            f"{shown}: {len(payload)} state bytes where the header says {info.payload_bytes}"
        )
    if hashlib.sha256(payload).hexdigest() != info.payload_sha256:
        raise CheckpointError(f"{shown}: damaged: its state does not match its checksum")
    try:
        sim = StateUnpickler(io.BytesIO(payload), cabin_modules=cabin_modules).load()
    except ModuleNotFoundError as exc:
        raise CheckpointError(
            f"{shown}: cannot load the run's state: {exc} (a --cabin module "
            "must be importable from the current folder)"
        ) from None
    except Exception as exc:
        raise CheckpointError(
            f"{shown}: cannot load the run's state ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(sim, Simulation):
        raise CheckpointError(f"{shown}: holds a {type(sim).__name__}, not a simulation")
    if sim.loop.tick != info.tick:
        raise CheckpointError(
            f"{shown}: the header says tick {info.tick}, the state is at tick {sim.loop.tick}"
        )
    return Checkpoint(sim, info.plan, info)


def resume(
    path: str | Path,
    *,
    ticks: int | None = None,
    until_done: bool | None = None,
    every: int | None = None,
    checkpoint: str | Path | None = None,
    cabin_modules: Iterable[str] = (),
) -> Checkpoint:
    """Load the checkpoint at ``path`` and make it ready to go on: the recording, if the
    run records, continues at its path; the next checkpoints go to ``checkpoint``
    (default: ``path``). ``ticks``, ``until_done`` and ``every`` override the plan's;
    ``cabin_modules`` are as for ``load``."""
    loaded = load(path, cabin_modules=cabin_modules)
    plan = loaded.plan
    if ticks is not None and ticks < loaded.info.tick:
        raise CheckpointError(
            f"{loaded.info.path}: the run cannot end at tick {ticks}: its "
            f"checkpoint is at tick {loaded.info.tick}"
        )
    cadence = every if every is not None else plan.every
    plan = replace(
        plan,
        ticks=plan.ticks if ticks is None else ticks,
        until_done=plan.until_done if until_done is None else until_done,
        every=cadence,
        path=None
        if cadence is None
        else os.path.abspath(checkpoint if checkpoint is not None else path),
    )
    if plan.record is not None:
        recorder = continue_recording(loaded.sim, plan.record, tick=loaded.info.tick)
        loaded.sim.attach_recorder(recorder)
    return Checkpoint(loaded.sim, plan, loaded.info)


def continue_recording(sim: Simulation, record: str | Path, *, tick: int) -> Recorder:
    """A recorder at ``record`` that starts with the messages of ticks ``0..tick-1`` of the
    recording already there (complete or cut short by a crash), ready to record ``tick``
    on. The old file is replaced atomically, once the new one holds those messages."""
    from runtime.recording.format import WORKING_SET
    from runtime.recording.reader import RecordingError, scan
    from runtime.recording.writer import RawMessage, Recorder

    target = Path(record)
    try:
        old = scan(target)
    except RecordingError as exc:
        raise CheckpointError(f"cannot continue the run's recording: {exc}") from None
    recorded_run = old.metadata.get("run", {}).get("run_id")
    if recorded_run != sim.run_id:
        whose = "another run" if recorded_run else "a run that left no run id"
        raise CheckpointError(
            f"{target}: the recording there belongs to {whose} (run id {recorded_run}), not "
            f"the one this checkpoint holds (run id {sim.run_id}): it cannot be continued; "
            "move it away or give the run its own recording"
        )
    topics = {cid: channel.topic for cid, channel in old.channels.items()}
    kept = [
        RawMessage(topics[m.channel_id], m.sequence, m.log_time, m.publish_time, m.data)
        for m in old.messages
        if m.sequence < tick and m.channel_id in topics
    ]
    recorded = {m.sequence for m in kept if m.topic == WORKING_SET.topic}
    lost = [t for t in range(tick) if t not in recorded]
    if lost:
        raise CheckpointError(
            f"{target}: the recording lacks {len(lost)} of the {tick} ticks before the "
            f"checkpoint (first missing: tick {lost[0]}); it cannot be continued without a gap"
        )
    metadata = old.metadata.get("run") or sim.metadata(sim.memory.capacity, sim.faults.faults)
    tmp = target.with_name(f".{target.name}.resuming")
    recorder = Recorder(tmp, metadata=metadata, time_base=sim.time_base)
    try:
        recorder.copy_messages(kept)
        recorder.sync()
        os.replace(tmp, target)
    except BaseException:
        recorder.close()
        tmp.unlink(missing_ok=True)
        raise
    fsync_folder(target.parent)
    recorder.path = target
    return recorder
