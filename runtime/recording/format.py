"""The recording format, defined once: every channel's topic and the typed record of its
messages, from which the writer builds messages, the reader validates them and each
channel's JSON Schema is generated.

A recording is an MCAP file of profile ``tickwork`` whose messages are JSON objects on
JSON-Schema channels:

=============== ==============================================================
``/board``        every board write and delete (``BoardRecord``)
``/events``       every event appended to the log (``EventRecord``)
``/working_set``  per tick: tick, time, source versions, the items with their
                  provenance, occupancy, and each cabin's view (``WorkingSetRecord``)
``/evictions``    per tick: what working memory let go, and why (``EvictionsRecord``)
``/decisions``    per tick: each cabin's outbox or its failure (``DecisionsRecord``)
``/faults``       every ``fault`` event: what was done to the run (``FaultRecord``)
``/stats``        per tick: compute time, overrun, working-set size (``StatsRecord``)
=============== ==============================================================

plus a ``run`` metadata record (the caller's settings; ``schema_version`` among them)
and, once the run finished, a ``summary`` one. A message's sequence number is the tick
it was recorded in; its log time is the run's clock in nanoseconds. Values of arbitrary
shape (board values, event data, command arguments) are in the JSON form of
``runtime.jsonable``: ``Json`` below.

Reading validates every field of a message against its record (``Channel.parse``), so a
reader can index the fields it uses without checking their types again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, NotRequired, TypeVar

from pydantic import ConfigDict, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from runtime.errors import TickworkError
from runtime.memory import EvictionReason, Source
from runtime.pack import MissingReason
from runtime.recording.wire import Wire, WireError, compile_type

PROFILE = "tickwork"
"""The MCAP profile of a tickwork recording."""
SCHEMA_VERSION = 2
"""The version of the message shapes below; a reader refuses another version."""
ENCODING = "json"
"""How every message is encoded."""

Json = Any
"""A value in the JSON form of ``runtime.jsonable.to_json`` (decode with ``from_json``)."""

_STRICT = ConfigDict(strict=True)


# -- records ---------------------------------------------------------------------------------


@with_config(_STRICT)
class BoardRecord(TypedDict):
    """A board write (``deleted`` false: its reading) or a delete (value and ttl null)."""

    seq: int
    key: str
    value: NotRequired[Json]
    stamp: float
    ttl: NotRequired[float | None]
    source: str
    deleted: bool


@with_config(_STRICT)
class EventRecord(TypedDict):
    """An event of the log."""

    seq: int
    stamp: float
    kind: str
    tags: list[str]
    data: Json


@with_config(_STRICT)
class ItemRecord(TypedDict):
    """A working-set item: its value and the provenance of ``runtime.memory.WorkItem``."""

    value: Json
    importance: float
    last_used: float
    first_seen: float
    source: Source
    stamp: float | None
    seq: int


@with_config(_STRICT)
class ViewRecord(TypedDict):
    """One cabin's view of a tick: item key → the filter that let it in (``via``), missing
    pattern → reason, the patterns a fault hid, and the map features and events it held."""

    items: dict[str, str]
    missing: dict[str, MissingReason]
    suppressed: list[str]
    nearby_map: list[str]
    corridor_map: list[str]
    recent_events: list[int]


@with_config(_STRICT)
class VersionsRecord(TypedDict):
    """The source versions a working set was frozen at."""

    board_seq: int
    map_version: int
    log_seq: int


@with_config(_STRICT)
class OccupancyRecord(TypedDict):
    """How full working memory was: items held, of them pinned, and the capacity."""

    held: int
    pinned: int
    capacity: int


@with_config(_STRICT)
class WorkingSetRecord(TypedDict):
    """The frozen working set of one tick and every cabin's view of it."""

    tick: int
    time: float
    versions: VersionsRecord
    items: dict[str, ItemRecord]
    views: dict[str, ViewRecord]
    capacity_alarm: NotRequired[bool]
    occupancy: NotRequired[OccupancyRecord]


@with_config(_STRICT)
class EvictionRecord(TypedDict):
    """An item working memory let go at a tick's freeze, and why."""

    key: str
    importance: float
    last_used: float
    reason: EvictionReason


@with_config(_STRICT)
class EvictionsRecord(TypedDict):
    """What working memory let go at one tick's freeze."""

    tick: int
    evictions: list[EvictionRecord]


@with_config(_STRICT)
class WriteRecord(TypedDict):
    """A board write (or, with ``delete``, a delete) a cabin asked for."""

    key: str
    value: Json
    ttl: float | None
    delete: bool


@with_config(_STRICT)
class EmittedRecord(TypedDict):
    """An event a cabin emitted."""

    kind: str
    data: Json
    tags: list[str]


@with_config(_STRICT)
class CommandRecord(TypedDict):
    """A command a cabin gave the world."""

    name: str
    args: Json


@with_config(_STRICT)
class ReactionRecord(TypedDict):
    """A declared reaction a cabin reported for a missing item."""

    pattern: str
    reaction: str
    detail: Json


@with_config(_STRICT)
class MemoryRecord(TypedDict):
    """A fact a cabin asked long-term memory to keep."""

    content: str
    scope: dict[str, str]
    metadata: Json
    stamp: float | None


@with_config(_STRICT)
class FailureRecord(TypedDict):
    """Why a cabin's outbox was dropped: the exception it raised."""

    error_type: str
    message: str


AsyncStatus = Literal["on_time", "rechecked", "dropped", "failed"]
"""What became of an asynchronous decision: applied on time, applied after a re-check
(late), dropped as late (recorded, not applied), or failed."""


@with_config(_STRICT)
class DecisionRecord(TypedDict):
    """One cabin's outbox at one tick; a failed cabin's is empty, with ``failed`` set.

    An asynchronous cabin's decision is recorded at the tick it came back at
    (``applied_tick``, the message's tick), with the tick whose view it was decided on
    (``decided_tick``) and what became of it (``status``); a dropped one holds the outbox
    that was not applied. A synchronous decision has none of the three.
    """

    writes: list[WriteRecord]
    events: list[EmittedRecord]
    commands: list[CommandRecord]
    reactions: list[ReactionRecord]
    memories: NotRequired[list[MemoryRecord]]
    failed: FailureRecord | None
    decided_tick: NotRequired[int]
    applied_tick: NotRequired[int]
    status: NotRequired[AsyncStatus]


@with_config(_STRICT)
class DecisionsRecord(TypedDict):
    """Every cabin's decision at one tick, by cabin name."""

    tick: int
    cabins: dict[str, DecisionRecord]


@with_config(_STRICT)
class FaultRecord(TypedDict):
    """A fault that started or ended (``phase``), by its label."""

    tick: int
    fault: str
    phase: str
    kind: NotRequired[str]
    start: NotRequired[int]
    end: NotRequired[int | None]


@with_config(_STRICT)
class StatsRecord(TypedDict):
    """What one tick cost."""

    tick: int
    compute_s: float
    overrun: bool
    items: int
    evictions: NotRequired[int]


# -- channels --------------------------------------------------------------------------------

R = TypeVar("R")


class FormatError(TickworkError, ValueError):
    """A message that does not have its channel's shape; the message says which field."""


@dataclass(frozen=True)
class Channel(Generic[R]):
    """One channel of a recording: its topic, the record its messages hold, and the MCAP
    schema name (``tickwork.board`` for ``/board``; a Foxglove well-known schema's name,
    such as ``foxglove.SceneUpdate``, for the channels Foxglove's panels show)."""

    topic: str
    record: type[R]
    description: str
    name: str = ""
    adapter: TypeAdapter[R] = field(init=False, repr=False, compare=False)
    wire: Wire = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "adapter", TypeAdapter(self.record))
        object.__setattr__(self, "wire", compile_type(self.record, json_any=Json))

    @property
    def schema_name(self) -> str:
        return self.name or f"tickwork{self.topic.replace('/', '.')}"

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of this channel's wire messages, generated from the record in
        the forms Foxglove's parser accepts (``runtime.recording.wire``)."""
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            **json.loads(json.dumps(self.wire.schema)),  # the caller's to change
            "title": self.schema_name,
        }

    def schema_bytes(self) -> bytes:
        return json.dumps(self.schema(), sort_keys=True).encode()

    def encode(self, record: R) -> Any:
        """The wire message of ``record`` (JSON-ready)."""
        return self.wire.encode(record)

    def parse(self, value: object) -> R:
        """``value`` as this channel's record; ``FormatError`` naming the first field that
        does not fit."""
        try:
            return self.adapter.validate_python(value)
        except ValidationError as exc:
            raise FormatError(_first_problem(exc)) from None

    def decode(self, value: object) -> R:
        """A wire message (decoded JSON) back as this channel's record, validated."""
        try:
            record = self.wire.decode(value, "")
        except WireError as exc:
            raise FormatError(str(exc)) from None
        return self.parse(record)


def _first_problem(exc: ValidationError) -> str:
    """The first problem of ``exc`` as ``field 'views.planner.items': ... (got ...)``."""
    error = exc.errors(include_url=False)[0]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
    where = where.lstrip(".")
    if error["type"] == "missing":
        return f"has no {where!r} field"
    got = json.dumps(error.get("input"), default=repr)[:60]
    return (
        f"field {where!r}: {error['msg']} (got {got})" if where else f"{error['msg']} (got {got})"
    )


BOARD = Channel("/board", BoardRecord, "every board write and delete")
EVENTS = Channel("/events", EventRecord, "every event")
WORKING_SET = Channel(
    "/working_set",
    WorkingSetRecord,
    "per tick: tick, time, source versions, the items with provenance, occupancy, and "
    "each cabin's view",
)
EVICTIONS = Channel("/evictions", EvictionsRecord, "per tick: what working memory let go, and why")
DECISIONS = Channel("/decisions", DecisionsRecord, "per tick: each cabin's outbox or its failure")
FAULTS = Channel("/faults", FaultRecord, "every fault that started or ended")
STATS = Channel("/stats", StatsRecord, "per tick: compute time, overrun, working-set size")

CHANNELS: Mapping[str, Channel[Any]] = {
    c.topic: c for c in (BOARD, EVENTS, WORKING_SET, EVICTIONS, DECISIONS, FAULTS, STATS)
}
"""Every channel by topic, in the order a recording registers them."""

PER_TICK = (WORKING_SET, EVICTIONS, DECISIONS, STATS)
"""The channels with exactly one message per recorded tick."""


__all__ = [
    "BOARD",
    "CHANNELS",
    "DECISIONS",
    "ENCODING",
    "EVENTS",
    "EVICTIONS",
    "FAULTS",
    "PER_TICK",
    "PROFILE",
    "SCHEMA_VERSION",
    "STATS",
    "WORKING_SET",
    "AsyncStatus",
    "BoardRecord",
    "Channel",
    "CommandRecord",
    "DecisionRecord",
    "DecisionsRecord",
    "EmittedRecord",
    "EventRecord",
    "EvictionRecord",
    "EvictionsRecord",
    "FailureRecord",
    "FaultRecord",
    "FormatError",
    "ItemRecord",
    "Json",
    "MemoryRecord",
    "OccupancyRecord",
    "ReactionRecord",
    "StatsRecord",
    "VersionsRecord",
    "ViewRecord",
    "WorkingSetRecord",
    "WriteRecord",
]
