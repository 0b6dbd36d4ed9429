"""Checkpoints: the state of a simulated run as data in one file, so a killed run can go on.

A checkpoint is data and never code. It holds:

- the run's *inputs*: the scenario (its validated fields, as JSON), the cabins' specs,
  the faults, the seed, the rate and working memory's capacity, whether the run kept a
  long-term memory, and the ``--cabin`` arguments of its user cabins;
- the run's *state* (``sim.run.runstate``): each component's own state as plain values,
  numpy arrays of numbers, WKB geometries and records of a fixed table of plain-data
  kinds (``runtime.snapshot``): the board, map, log, working memory, the assembler's
  first-offered times, the clock, the loop's counters and the decisions in flight, the
  world and its generators' states, the fault injector, the summary's tallies and the
  board-write digest, and each cabin's private state;
- the ``RunPlan``: how far the run goes, whether it stops once the deliveries are done,
  where it records and checkpoints.

``load`` rebuilds the simulation the way a new run is built, from the inputs (the scenario
and specs validated as if read from their files, the faults by their grammar's model),
then gives every component its state back with ``set_state``. Nothing in the file names a
module, a class, a function or a path that is imported or opened: user cabins are built
from the modules the person resuming names again (``--cabin``, checked against the
arguments and the specs the file holds), and a run that kept a long-term memory resumes
only with the memory file they name (``--memory``). A user cabin that keeps state says
so with ``get_state()`` and ``set_state(data)``; a run with a user cabin that has not
both cannot be checkpointed (``CheckpointError`` when it starts, before anything is
written), so a resumed run never silently differs from the one that was saved.

File format (``FORMAT`` 9): the line ``tickwork-checkpoint``, one line of JSON (the
header: format, tickwork version, tick, time, plan, the run's settings, the body's
length and sha256, and the header's own sha256), then the body: zlib-compressed, an
8-byte big-endian length, that many bytes of JSON (``{"inputs", "state", "blobs"}``, the
blobs' lengths) and the blobs. ``read_info`` reads and checks the header only; ``load``
checks the version and the checksum, then every value it reads, so another version's
checkpoint, a file cut short, garbage and a crafted file each get a ``CheckpointError``
saying which. The checksums find damage, not forgery: a forged file is only data, and
the checks on every value hold against it.

``save`` writes atomically: a temporary file in the target's folder, flushed and
fsynced, renamed over the target, then the folder fsynced; a failed write leaves
the previous checkpoint as it was. A recorded run's recording is flushed and
fsynced before its checkpoint is written, so the recording holds every tick
before the checkpoint's; ``resume`` starts a new recording at the same path with
those ticks' messages and records the rest of the run after them (only a recording of
the same run, by its run id, is continued).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import struct
import sys
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from runtime.errors import SettingError, TickworkError
from runtime.files import atomic_output, fsync_folder, open_binary
from runtime.snapshot import StateError
from sim.world.limits import MAX_RATE_HZ, MIN_RATE_HZ

if TYPE_CHECKING:
    from runtime.agent.memory import LongTermMemory
    from runtime.recording.writer import Recorder
    from sim.run.harness import ExtraCabin, Simulation

MAGIC = b"tickwork-checkpoint\n"
FORMAT = 9  # 2: caches and long-term memory moved; 3: stop requests, chosen reactions;
# 4: the layout of issue 11 (modules moved, board values typed in cabins.values);
# 5: asynchronous decisions in flight (the loop's executor and its jobs);
# 6: the header carries a checksum of its own; 7: the cabins redesign (cabins as
# packages, the warehouse contract in cabins.warehouse, settings objects); 8: the
# summary's liveness tallies and the world's battery record (issue 29); 9: data, not a
# pickle: the run's inputs and each component's state as plain values (issue 30)
_HEADER_LIMIT = 1 << 20
MAX_BODY = 1 << 30
"""The largest body, compressed or not, a checkpoint may have (a real run's is < 1 MiB)."""


class CheckpointError(TickworkError):
    """A checkpoint that cannot be written, read or resumed; the message says why."""


@dataclass(frozen=True, slots=True)
class RunPlan:
    """How a run goes: what a resumed run needs to end where the original would have.

    ``ticks`` is the tick the run ends at (counted from the start of the run, not of
    the resumption); ``record`` the recording's path; ``every`` and ``path`` the
    checkpoint cadence and file; ``cabins`` the ``--cabin`` arguments of the run
    (the person resuming names them again).
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


class _Plan(BaseModel):
    """A header's plan, checked (strict types: a tick of 40.5 is refused, not truncated)."""

    model_config = ConfigDict(strict=True, extra="forbid")
    ticks: int = Field(ge=0, le=1 << 62)
    until_done: bool
    record: str | None = Field(default=None, max_length=4096)
    every: int | None = Field(default=None, ge=1, le=1 << 62)
    path: str | None = Field(default=None, max_length=4096)
    cabins: list[str] = Field(default_factory=list, max_length=256)


class _Run(BaseModel):
    """A header's settings of the run, checked."""

    model_config = ConfigDict(strict=True, extra="forbid")
    run_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    scenario: str = Field(max_length=4096)
    seed: int = Field(ge=0, le=(1 << 128) - 1)
    rate_hz: float = Field(ge=MIN_RATE_HZ, le=MAX_RATE_HZ, allow_inf_nan=False)
    capacity: int = Field(ge=1, le=1 << 31)
    faults: list[str] = Field(max_length=10_000)
    cabins: list[str] = Field(max_length=256)

    @field_validator("rate_hz", mode="before")
    @classmethod
    def _whole_rates_are_rates(cls, value: Any) -> Any:
        return float(value) if type(value) is int else value


class _Header(BaseModel):
    """A checkpoint's header, checked field by field."""

    model_config = ConfigDict(strict=True, extra="forbid")
    format: int
    tickwork_version: str = Field(max_length=200)
    python: str = Field(max_length=50)
    tick: int = Field(ge=0, le=1 << 62)
    time: float = Field(ge=0, le=1e9, allow_inf_nan=False)
    plan: _Plan
    run: _Run
    body_bytes: int = Field(ge=0, le=MAX_BODY)
    body_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    header_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")

    @field_validator("time", mode="before")
    @classmethod
    def _whole_times_are_times(cls, value: Any) -> Any:
        return float(value) if type(value) is int else value


@dataclass(frozen=True, slots=True)
class CheckpointInfo:
    """A checkpoint's header: what it holds, read without its body."""

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


@functools.cache
def tickwork_version() -> str:
    """The installed tickwork's version (asked once: the metadata lookup takes ~15 ms)."""
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


def check_checkpointable(sim: Simulation) -> None:
    """``CheckpointError`` unless every cabin of ``sim`` can be checkpointed: tickwork's
    own, or a user cabin with both ``get_state()`` and ``set_state(data)``. Called when a
    checkpointing run starts, before anything is written."""
    from sim.run.runstate import unsaved_cabins

    lacking = unsaved_cabins(sim)
    if lacking:
        raise CheckpointError(
            f"cannot checkpoint this run: its cabin(s) {', '.join(lacking)} keep state a "
            "checkpoint cannot hold: give the class get_state() and set_state(data) "
            "(see docs/guides/checkpoints.md, 'User cabins'), or run without checkpoints"
        )


def encode(sim: Simulation) -> bytes:
    """The body of ``sim``'s checkpoint: its inputs and state, compressed."""
    from sim.run.runstate import capture_run, run_inputs

    check_checkpointable(sim)
    try:
        state, blobs = capture_run(sim)
        document = {
            "inputs": run_inputs(sim),
            "state": state,
            "blobs": [len(b) for b in blobs],
        }
        text = json.dumps(document, separators=(",", ":"), allow_nan=False).encode()
    except (StateError, ValueError, TypeError, RecursionError) as exc:
        raise CheckpointError(
            f"cannot checkpoint the run at tick {sim.loop.tick}: its state is not data "
            f"({type(exc).__name__}: {exc})"
        ) from exc
    raw = struct.pack(">Q", len(text)) + text + b"".join(blobs)
    return zlib.compress(raw, 1)


def save(sim: Simulation, plan: RunPlan, path: str | Path | None = None) -> CheckpointInfo:
    """Write ``sim`` and ``plan`` to ``path`` (default: the plan's) atomically; its header.

    A recording in progress is flushed and fsynced first.
    """
    where = path if path is not None else plan.path
    if where is None:
        raise SettingError("save needs a path, or a plan with one")
    target = Path(where)
    tick = sim.loop.tick
    body = encode(sim)
    if sim.recorder is not None:
        sim.recorder.sync()
    header: dict[str, Any] = {
        "format": FORMAT,
        "tickwork_version": tickwork_version(),
        "python": ".".join(map(str, sys.version_info[:3])),
        "tick": tick,
        "time": sim.clock.now(),
        "plan": asdict(plan),
        "run": run_settings(sim),
        "body_bytes": len(body),
        "body_sha256": hashlib.sha256(body).hexdigest(),
    }
    header["plan"]["cabins"] = list(plan.cabins)
    header["header_sha256"] = _header_digest(header)
    head = MAGIC + json.dumps(header, sort_keys=True, allow_nan=False).encode() + b"\n"
    try:
        with atomic_output(target, mode=0o600) as fh:
            fh.write(head)
            fh.write(body)
    except OSError as exc:
        raise CheckpointError(f"cannot write checkpoint {target}: {exc.strerror or exc}") from exc
    return _info(str(target), _Header.model_validate(header), len(head))


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
        check_checkpointable(sim)
        if sim.loop.tick == 0 and self.plan.ticks > 0:
            self.last = save(sim, self.plan)
            self.written += 1

    def __call__(self, sim: Simulation) -> None:
        tick = sim.loop.tick
        if tick % self.every == 0 and tick < self.plan.ticks:
            self.last = save(sim, self.plan)
            self.written += 1


# -- reading -----------------------------------------------------------------------------------


def _header_digest(header: Mapping[str, Any]) -> str:
    """sha256 of a header's fields but its own checksum (a damaged plan or setting would
    otherwise resume, say, checkpointing to another path)."""
    fields = {k: v for k, v in header.items() if k != "header_sha256"}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def read_checkpoint_bytes(path: str | Path) -> bytes:
    """The whole file at ``path`` (the one place a checkpoint is read from disk, so that a
    bounded, regular-file-only reader can take its place)."""
    fh, size = open_binary(path, what="a checkpoint", error=CheckpointError)
    with fh:
        data = fh.read(MAX_BODY + _HEADER_LIMIT + len(MAGIC) + 1)
    if len(data) > MAX_BODY + _HEADER_LIMIT + len(MAGIC):
        raise CheckpointError(f"{path}: larger than any checkpoint ({size} bytes)")
    return data


def _parse_header(shown: str, data: bytes) -> tuple[_Header, int]:
    if not data.startswith(MAGIC):
        raise CheckpointError(
            f"{shown}: not a tickwork checkpoint (it starts with {data[: len(MAGIC)]!r}, "
            f"expected {MAGIC!r})"
        )
    end = data.find(b"\n", len(MAGIC), len(MAGIC) + _HEADER_LIMIT)
    if end < 0:
        raise CheckpointError(f"{shown}: a checkpoint whose header is cut short or too long")
    try:
        raw = json.loads(data[len(MAGIC) : end])
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise CheckpointError(f"{shown}: a checkpoint whose header is not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise CheckpointError(f"{shown}: a checkpoint whose header is not a JSON object")
    if raw.get("format") != FORMAT or type(raw.get("format")) is not int:
        version = raw.get("tickwork_version", "unknown")
        raise CheckpointError(
            f"{shown}: checkpoint format {_short(raw.get('format'))}, written by tickwork "
            f"{_short(version)}; this tickwork ({tickwork_version()}) reads format {FORMAT}"
            + (" (older checkpoints were pickles, which it no longer loads)" if _old(raw) else "")
        )
    try:
        digest_ok = raw.get("header_sha256") == _header_digest(raw)
    except (ValueError, TypeError, RecursionError):
        digest_ok = False
    if not digest_ok:
        raise CheckpointError(f"{shown}: damaged: its header does not match its checksum")
    try:
        header = _Header.model_validate(raw)
    except ValidationError as exc:
        raise CheckpointError(f"{shown}: a checkpoint header with {_problems(exc)}") from None
    return header, end + 1


def _old(raw: Mapping[str, Any]) -> bool:
    fmt = raw.get("format")
    return type(fmt) is int and 1 <= fmt < FORMAT


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _problems(exc: ValidationError) -> str:
    out = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "the header"
        out.append(f"a bad field {where}: {error['msg']} (got {_short(error.get('input'))})")
    return "; ".join(out)


def read_info(path: str | Path) -> CheckpointInfo:
    """The header of the checkpoint at ``path``; ``CheckpointError`` if it is not a whole one."""
    shown = str(path)
    data = read_checkpoint_bytes(path)
    header, offset = _parse_header(shown, data)
    info = _info(shown, header, offset)
    if len(data) < offset + info.payload_bytes:
        raise CheckpointError(
            f"{shown}: cut short: {len(data) - offset} of its {info.payload_bytes} "
            "state bytes are there"
        )
    return info


def _info(path: str, header: _Header, offset: int) -> CheckpointInfo:
    plan = header.plan
    try:
        run_plan = RunPlan(
            ticks=plan.ticks,
            until_done=plan.until_done,
            record=plan.record,
            every=plan.every,
            path=plan.path,
            cabins=tuple(plan.cabins),
        )
    except SettingError as exc:
        raise CheckpointError(f"{path}: a checkpoint header with a bad plan ({exc})") from None
    return CheckpointInfo(
        path=path,
        tick=header.tick,
        time=header.time,
        tickwork_version=header.tickwork_version,
        plan=run_plan,
        run=header.run.model_dump(),
        payload_offset=offset,
        payload_bytes=header.body_bytes,
        payload_sha256=header.body_sha256,
    )


def decode_body(shown: str, body: bytes) -> tuple[dict[str, Any], list[bytes]]:
    """The body's JSON document and its blobs; ``CheckpointError`` if it is not one."""
    try:
        inflate = zlib.decompressobj()
        raw = inflate.decompress(body, MAX_BODY + 1)
    except zlib.error as exc:
        raise CheckpointError(f"{shown}: its state does not decompress ({exc})") from None
    if len(raw) > MAX_BODY or inflate.unconsumed_tail:
        raise CheckpointError(f"{shown}: its state decompresses to more than {MAX_BODY} bytes")
    if not inflate.eof or inflate.unused_data:
        raise CheckpointError(f"{shown}: its compressed state is cut short or has bytes after it")
    if len(raw) < 8:
        raise CheckpointError(f"{shown}: its state is cut short")
    (length,) = struct.unpack(">Q", raw[:8])
    if length > len(raw) - 8:
        raise CheckpointError(f"{shown}: its state's document is cut short")
    try:
        document = json.loads(raw[8 : 8 + length])
    except (ValueError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{shown}: its state is not JSON ({exc})") from None
    except RecursionError:
        raise CheckpointError(f"{shown}: its state nests too deeply") from None
    if not (isinstance(document, dict) and set(document) == {"inputs", "state", "blobs"}):
        keys = sorted(document) if isinstance(document, dict) else type(document).__name__
        raise CheckpointError(f"{shown}: its state has {keys}, not inputs, state and blobs")
    sizes = document["blobs"]
    if not (isinstance(sizes, list) and all(type(n) is int and n >= 0 for n in sizes)):
        raise CheckpointError(f"{shown}: its state's blob table is not a list of lengths")
    if sum(sizes) != len(raw) - 8 - length:
        raise CheckpointError(
            f"{shown}: its blobs take {len(raw) - 8 - length} bytes, the table says {sum(sizes)}"
        )
    blobs, at = [], 8 + length
    for size in sizes:
        blobs.append(raw[at : at + size])
        at += size
    return document, blobs


def load(
    path: str | Path,
    *,
    extra: Sequence[ExtraCabin] = (),
    long_term: str | Path | LongTermMemory | None = None,
) -> Checkpoint:
    """The checkpoint at ``path``, its run rebuilt from its inputs and given its state back;
    ``CheckpointError`` if it cannot be.

    ``extra`` are the run's user cabins, built from the modules the person resuming names
    (in the run's order); ``long_term`` the long-term memory of a run that kept one.
    """
    from sim.run.runstate import InputsError, rebuild_run

    shown = str(path)
    data = read_checkpoint_bytes(path)
    header, offset = _parse_header(shown, data)
    info = _info(shown, header, offset)
    version = tickwork_version()
    if info.tickwork_version != version:
        raise CheckpointError(
            f"{shown}: written by tickwork {info.tickwork_version}; this is "
            f"tickwork {version}: resume it with the version that wrote it"
        )
    body = data[offset:]
    if len(body) != info.payload_bytes:
        raise CheckpointError(
            f"{shown}: cut short: {len(body)} of its {info.payload_bytes} state bytes are there"
            if len(body) < info.payload_bytes
            else f"{shown}: {len(body)} state bytes where the header says {info.payload_bytes}"
        )
    if hashlib.sha256(body).hexdigest() != info.payload_sha256:
        raise CheckpointError(f"{shown}: damaged: its state does not match its checksum")
    document, blobs = decode_body(shown, body)
    try:
        sim = rebuild_run(document, blobs, run=info.run, extra=extra, long_term=long_term)
    except InputsError as exc:
        raise CheckpointError(f"{shown}: {exc}") from None
    except StateError as exc:
        raise CheckpointError(f"{shown}: a malformed state: {exc}") from None
    if sim.loop.tick != info.tick or not math.isclose(sim.clock.now(), info.time, abs_tol=1e-9):
        sim.close()
        raise CheckpointError(
            f"{shown}: the header says tick {info.tick} at {info.time} s, the state is at "
            f"tick {sim.loop.tick} at {sim.clock.now()} s"
        )
    return Checkpoint(sim, info.plan, info)


def resume(
    path: str | Path,
    *,
    ticks: int | None = None,
    until_done: bool | None = None,
    every: int | None = None,
    checkpoint: str | Path | None = None,
    extra: Sequence[ExtraCabin] = (),
    long_term: str | Path | LongTermMemory | None = None,
) -> Checkpoint:
    """Load the checkpoint at ``path`` and make it ready to go on: the recording, if the
    run records, continues at its path; the next checkpoints go to ``checkpoint``
    (default: ``path``). ``ticks``, ``until_done`` and ``every`` override the plan's;
    ``extra`` and ``long_term`` are as for ``load``."""
    loaded = load(path, extra=extra, long_term=long_term)
    plan = loaded.plan
    if ticks is not None and ticks < loaded.info.tick:
        loaded.sim.close()
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
        try:
            recorder = continue_recording(loaded.sim, plan.record, tick=loaded.info.tick)
        except BaseException:
            loaded.sim.close()
            raise
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
