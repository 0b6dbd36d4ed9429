"""The flight recorder: every board write, event and frozen pack of a run, in MCAP.

A ``Recorder`` writes the channels of ``runtime.recording.format`` (JSON messages on
JSON-Schema channels, which Foxglove and the ``mcap`` tools open), each message built
as its channel's typed record, plus a ``run`` metadata record given by the caller.
Message log times are the run's wall-clock start plus its clock, in nanoseconds
(``runtime.recording.timebase``; the start is kept in the ``run`` metadata); the tick is
the message sequence number. The file is flushed (a complete chunk) at least once per
``flush_every`` seconds of run time and finished by ``close()``, which the caller runs
in a ``finally`` block.

An MCAP file cannot be appended to, so a run resumed from a checkpoint records
into a new file that starts with the old file's messages: ``copy_messages``
writes already-encoded messages as they were, and ``sync`` makes everything so
far durable (a complete chunk, flushed and fsynced).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any, NamedTuple, Protocol, cast

import structlog
from mcap.writer import CompressionType, Writer

from runtime.asynchronous import Returned
from runtime.board import Reading, StateBoard
from runtime.cabin import Outbox
from runtime.errors import SettingError
from runtime.jsonable import to_json
from runtime.log import Event, EventLog
from runtime.loop import TickResult
from runtime.recording.format import (
    ALL_CHANNELS,
    BOARD,
    DECISIONS,
    ENCODING,
    EVENTS,
    EVICTIONS,
    FAULTS,
    PROFILE,
    SCHEMA_VERSION,
    STATS,
    WORKING_SET,
    Channel,
    DecisionRecord,
    FailureRecord,
    FaultRecord,
    ItemRecord,
    ViewRecord,
)
from runtime.recording.timebase import EPOCH, TimeBase
from runtime.recording.wire import json_text

_log = structlog.get_logger("tickwork.recording")


class RawMessage(NamedTuple):
    """An already-encoded message of a recording, as read back from a file."""

    topic: str
    sequence: int
    log_time: int
    publish_time: int
    data: bytes


class MessageSink(Protocol):
    """Another destination of every recorded message (a live view): gets each message
    encoded as the recording holds it, hears when a tick's messages are all given
    (``end_tick``, with the tick's log time), and is closed with the recorder."""

    def publish(self, channel: Channel[Any], data: bytes, log_time: int) -> None: ...

    def end_tick(self, tick: int, log_time: int) -> None: ...

    def close(self) -> None: ...


def _dumps(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), allow_nan=False).encode()


def _finite(value: Any, at: str, found: list[str]) -> Any:
    """``value`` with every NaN or infinite number replaced by null (JSON has neither),
    the place of each one added to ``found``."""
    if isinstance(value, float) and not math.isfinite(value):
        found.append(at or "/")
        return None
    if isinstance(value, Mapping):
        return {k: _finite(v, f"{at}/{k}", found) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v, f"{at}/{i}", found) for i, v in enumerate(value)]
    return value


class Recorder:
    """Writes one run to an MCAP file. Use as a tick hook, or call ``record_tick``."""

    def __init__(
        self,
        output: str | Path | IO[bytes] | None,
        *,
        metadata: Mapping[str, Any] | None = None,
        flush_every: float = 1.0,
        chunk_size: int = 1 << 20,
        sinks: Iterable[MessageSink] = (),
        time_base: TimeBase = EPOCH,
    ) -> None:
        """``output`` None: no file, only ``sinks`` (a live view of a run not recorded).
        ``time_base``: the run's wall-clock start, which every log time is counted from
        (kept in the ``run`` metadata)."""
        if not flush_every > 0:
            raise SettingError(f"flush_every must be positive seconds, got {flush_every!r}")
        self.sinks = list(sinks)
        self.time_base = time_base
        if output is None and not self.sinks:
            raise SettingError("a recorder needs an output file or a sink")
        self.path = output if isinstance(output, (str, Path)) else None
        self._stream: IO[bytes] = (
            open(output, "wb")  # noqa: SIM115 (closed by close())
            if isinstance(output, (str, Path))
            else cast("IO[bytes]", _Discard())
            if output is None
            else output
        )
        self._writer = Writer(
            self._stream,
            chunk_size=chunk_size,
            compression=CompressionType.ZSTD,
            enable_data_crcs=True,  # every byte of the file is then covered by a checksum
        )
        self._writer.start(profile=PROFILE, library="tickwork recorder")
        self._channels: dict[str, int] = {}
        for channel in ALL_CHANNELS.values():
            schema_id = self._writer.register_schema(
                name=channel.schema_name, encoding="jsonschema", data=channel.schema_bytes()
            )
            self._channels[channel.topic] = self._writer.register_channel(
                topic=channel.topic,
                message_encoding=ENCODING,
                schema_id=schema_id,
                metadata={"tickwork_schema_version": str(SCHEMA_VERSION)},
            )
        run = {
            k: v if isinstance(v, str) else json.dumps(to_json(v))
            for k, v in (metadata or {}).items()
        }
        self._writer.add_metadata(
            "run", {"schema_version": str(SCHEMA_VERSION), **run, **time_base.metadata()}
        )
        self.flush_every = flush_every
        self._last_flush = 0.0
        self._tick = 0
        self._now = 0.0
        self.messages = 0
        self.closed = False
        self.non_finite: dict[str, int] = {}
        """Messages per channel whose NaNs or infinities were recorded as null."""
        self._json_cache: dict[int, tuple[Any, Any]] = {}
        self._json_next: dict[int, tuple[Any, Any]] = {}

    # -- sources ---------------------------------------------------------------------------

    def attach(self, board: StateBoard, log: EventLog) -> None:
        """Record every board write and every event from now on."""
        board.add_listener(lambda reading, key: self.on_board(reading, key, board))
        log.add_listener(self.on_event)

    def on_board(self, reading: Reading | None, key: str, board: StateBoard) -> None:
        if reading is None:
            deleted = board.last_delete
            now = board.clock.now()
            self._put(
                BOARD,
                {
                    "seq": board.seq,
                    "key": key,
                    "value": None,
                    "stamp": now,
                    "ttl": None,
                    "source": deleted.source if deleted is not None and deleted.key == key else "",
                    "deleted": True,
                },
                now,
            )
            return
        self._put(
            BOARD,
            {
                "seq": reading.seq,
                "key": key,
                "value": to_json(reading.value),
                "stamp": reading.stamp,
                "ttl": reading.ttl,
                "source": reading.source,
                "deleted": False,
            },
            reading.stamp,
        )

    def on_event(self, event: Event) -> None:
        data = to_json(event.data)
        self._put(
            EVENTS,
            {
                "seq": event.seq,
                "stamp": event.stamp,
                "kind": event.kind,
                "tags": sorted(event.tags),
                "data": data,
            },
            event.stamp,
        )
        if event.kind == "fault" and isinstance(data, dict):
            fault = _fault_record(data, self._tick)
            if fault is not None:
                self._put(FAULTS, fault, event.stamp)

    # -- ticks -----------------------------------------------------------------------------

    def before_freeze(self, tick: int, now: float) -> None:
        self._tick, self._now = tick, now

    def after_apply(self, result: TickResult) -> None:
        self.record_tick(result)
        self.end_tick(result.tick, result.time)

    def end_tick(self, tick: int, now: float) -> None:
        """Tell the sinks that tick ``tick`` (at run time ``now``) has all its messages: a
        live view sends what it gathered of the tick and the run's time."""
        if not self.closed:
            for sink in self.sinks:
                sink.end_tick(tick, self.time_base.log_time(now))

    def record_tick(self, result: TickResult) -> None:
        """Record the working set, evictions, decisions and stats of one tick."""
        ws, tick, now = result.working_set, result.tick, result.time
        self._tick, self._now = tick, now
        items: dict[str, ItemRecord] = {
            key: {
                "value": self._value_json(item.value),
                "importance": item.importance,
                "last_used": item.last_used,
                "first_seen": item.first_seen,
                "source": item.source,
                "stamp": item.stamp,
                "seq": item.seq,
            }
            for key, item in ws.items.items()
        }
        views: dict[str, ViewRecord] = {}
        for view in result.views:
            views[view.cabin] = {
                "items": {key: item.via for key, item in view.provenance.items()},
                "missing": dict(view.missing),
                "suppressed": list(view.suppressed),
                "nearby_map": [f.id for f in view.nearby_map],
                "corridor_map": [f.id for f in view.corridor_map],
                "recent_events": [e.seq for e in view.recent_events],
                "evicted": list(view.evicted),
            }
        self._put(
            WORKING_SET,
            {
                "tick": tick,
                "time": now,
                "versions": {
                    "board_seq": ws.versions.board_seq,
                    "map_version": ws.versions.map_version,
                    "log_seq": ws.versions.log_seq,
                },
                "items": items,
                "views": views,
                "capacity_alarm": ws.capacity_alarm,
                "occupancy": {
                    "held": ws.occupancy.held,
                    "pinned": ws.occupancy.pinned,
                    "capacity": ws.occupancy.capacity,
                },
            },
            now,
        )
        self._put(
            EVICTIONS,
            {
                "tick": tick,
                "evictions": [
                    {
                        "key": e.key,
                        "importance": e.importance,
                        "last_used": e.last_used,
                        "reason": e.reason,
                    }
                    for e in ws.evictions
                ],
            },
            now,
        )
        cabins = {out.cabin: decision_json(out) for out in result.outboxes}
        for failure in result.failures:
            cabins[failure.cabin] = failed_decision(
                {"error_type": failure.error_type, "message": failure.message}
            )
        for back in result.returned:  # asynchronous: tagged with both ticks
            cabins[back.cabin] = returned_decision(back)
        self._put(DECISIONS, {"tick": tick, "cabins": cabins}, now)
        self._put(
            STATS,
            {
                "tick": tick,
                "compute_s": result.compute_seconds,
                "overrun": result.overrun,
                "items": len(ws.items),
                "evictions": len(ws.evictions),
            },
            now,
        )
        if now - self._last_flush >= self.flush_every:
            self.flush()
            self._last_flush = now
        self._json_cache, self._json_next = self._json_next, {}

    def _value_json(self, value: Any) -> Any:
        """The JSON text of a working-set value, reusing last tick's for the same frozen
        object (most items are unchanged from tick to tick)."""
        key = id(value)
        hit = self._json_cache.get(key)
        if hit is None or hit[0] is not value:
            hit = (value, json_text(to_json(value)))
        self._json_next[key] = hit
        return hit[1]

    # -- file ------------------------------------------------------------------------------

    def put(self, channel: Channel[Any], message: Mapping[str, Any], stamp: float) -> None:
        """Record ``message`` (a record of ``channel``) at run time ``stamp``, in this tick."""
        self._put(channel, message, stamp)

    def _put(self, channel: Channel[Any], message: Mapping[str, Any], stamp: float) -> None:
        if self.closed:
            return
        encoded = channel.encode(message)
        try:
            data = _dumps(encoded)
        except ValueError:
            data = self._dumps_non_finite(channel.topic, encoded)
        log_time = self.time_base.log_time(stamp)
        self._writer.add_message(
            self._channels[channel.topic],
            log_time=log_time,
            data=data,
            publish_time=log_time,
            sequence=self._tick,
        )
        for sink in self.sinks:
            sink.publish(channel, data, log_time)
        self.messages += 1

    def _dumps_non_finite(self, topic: str, encoded: Mapping[str, Any]) -> bytes:
        """A message with a NaN or an infinity (a number computed from a cabin's output,
        say a route thousands of kilometres long) is recorded with null in its place,
        and the first such message of each channel is logged with the fields."""
        found: list[str] = []
        data = _dumps(_finite(encoded, "", found))
        if topic not in self.non_finite:
            _log.warning("recording_non_finite", topic=topic, fields=found, tick=self._tick)
        self.non_finite[topic] = self.non_finite.get(topic, 0) + 1
        return data

    def copy_messages(self, messages: Iterable[RawMessage]) -> int:
        """Write already-encoded messages unchanged (the start of a run being continued);
        the number written. The recorder then carries on from the last one's tick and time.
        """
        written = 0
        for m in messages:
            channel = self._channels.get(m.topic)
            if channel is None:
                raise SettingError(
                    f"cannot copy a message of topic {m.topic!r}: a tickwork "
                    f"recording has the topics {', '.join(self._channels)}"
                )
            if self.closed:
                raise SettingError("cannot copy messages into a closed recording")
            self._writer.add_message(
                channel,
                log_time=m.log_time,
                data=m.data,
                publish_time=m.publish_time,
                sequence=m.sequence,
            )
            self._tick, self._now = m.sequence, self.time_base.run_seconds(m.log_time)
            written += 1
        self.messages += written
        self._last_flush = self._now
        return written

    def add_metadata(self, name: str, values: Mapping[str, Any]) -> None:
        """Add a metadata record (values that are not strings are stored as JSON)."""
        if not self.closed:
            self._writer.add_metadata(
                name,
                {k: v if isinstance(v, str) else json.dumps(to_json(v)) for k, v in values.items()},
            )

    def flush(self) -> None:
        """End the chunk in progress and push it to the file (readable after a crash)."""
        if not self.closed:
            self._writer.flush()  # type: ignore[no-untyped-call]

    def sync(self) -> None:
        """``flush``, then fsync the file: what was recorded so far survives a power loss."""
        if self.closed:
            return
        self.flush()
        try:
            fileno = self._stream.fileno()
        except (AttributeError, OSError, ValueError):  # an in-memory stream
            return
        os.fsync(fileno)

    def close(self) -> None:
        """Finish the file (summary and footer). Safe to call twice."""
        if self.closed:
            return
        self.closed = True
        try:
            self._writer.finish()  # type: ignore[no-untyped-call]
        finally:
            if self.path is not None:
                self._stream.close()
            for sink in self.sinks:
                sink.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Discard:
    """A write-only stream that keeps nothing: the file of a recorder that only feeds sinks."""

    def __init__(self) -> None:
        self.offset = 0

    def write(self, data: bytes) -> int:
        self.offset += len(data)
        return len(data)

    def tell(self) -> int:
        return self.offset

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None


def failed_decision(failed: FailureRecord) -> DecisionRecord:
    """The ``/decisions`` entry of a cabin whose outbox was dropped: only why it failed."""
    return {
        "writes": [],
        "events": [],
        "commands": [],
        "reactions": [],
        "memories": [],
        "failed": failed,
    }


def returned_decision(back: Returned) -> DecisionRecord:
    """The ``/decisions`` entry of an asynchronous decision that came back: its outbox (or
    failure), the tick it was decided on, the tick it came back at, and what became of it."""
    if back.failure is not None:
        record = failed_decision(
            {"error_type": back.failure.error_type, "message": back.failure.message}
        )
    elif back.outbox is not None:
        record = decision_json(back.outbox)
    else:
        record = failed_decision({"error_type": "NoOutbox", "message": "nothing came back"})
    record["decided_tick"] = back.decided_tick
    record["applied_tick"] = back.applied_tick
    record["status"] = back.status
    return record


def decision_json(out: Outbox) -> DecisionRecord:
    """An outbox in the form ``/decisions`` records."""
    return {
        "writes": [
            {"key": w.key, "value": to_json(w.value), "ttl": w.ttl, "delete": w.delete}
            for w in out.writes
        ],
        "events": [
            {"kind": e.kind, "data": to_json(e.data), "tags": sorted(e.tags)} for e in out.events
        ],
        "commands": [{"name": c.name, "args": to_json(c.args)} for c in out.commands],
        "reactions": [
            {"pattern": r.pattern, "reaction": r.reaction, "detail": to_json(r.detail)}
            for r in out.reactions
        ],
        "memories": [
            {
                "content": m.content,
                "scope": dict(m.scope),
                "metadata": to_json(m.metadata),
                "stamp": m.stamp,
            }
            for m in out.memories
        ],
        "failed": None,
    }


def _fault_record(data: Mapping[str, Any], tick: int) -> FaultRecord | None:
    """The ``/faults`` message of a ``fault`` event's data (None if it names no fault)."""
    fault, phase = data.get("fault"), data.get("phase")
    if not isinstance(fault, str) or not isinstance(phase, str):
        return None
    at = data.get("tick", tick)
    record: FaultRecord = {
        "tick": at if isinstance(at, int) else tick,
        "fault": fault,
        "phase": phase,
    }
    if isinstance(data.get("kind"), str):
        record["kind"] = data["kind"]
    if isinstance(data.get("start"), int):
        record["start"] = data["start"]
    if "end" in data and (data["end"] is None or isinstance(data["end"], int)):
        record["end"] = data["end"]
    return record
