"""The recording format, defined once: every channel's topic and the typed record of its
messages, from which the writer builds messages, the reader validates them and each
channel's JSON Schema is generated.

A recording is an MCAP file of profile ``tickwork`` whose messages are JSON objects on
JSON-Schema channels:

=============== ==============================================================
``/board``        every board write and delete (``BoardRecord``)
``/events``       every event appended to the log (``EventRecord``)
``/working_set``  per tick: tick, time, source versions, the items with their
                  provenance, occupancy, and each cabin's view, with what it lost
                  to capacity (``WorkingSetRecord``)
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
from typing import Annotated, Any, Generic, Literal, NotRequired, TypeVar

from pydantic import ConfigDict, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from runtime.errors import TickworkError
from runtime.memory import EvictionReason, Source
from runtime.pack import MissingReason
from runtime.recording.wire import OneOf, Wire, WireError, compile_type

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
    pattern → reason, the patterns a fault hid, the map features and events it held, and
    the keys it selected but lost to capacity (``evicted``, in its offer order: their
    evictions are in the tick's ``/evictions`` message, a note's under its working-memory
    key ``note:<cabin>/<key>``; a recording made before views carried it has none)."""

    items: dict[str, str]
    missing: dict[str, MissingReason]
    suppressed: list[str]
    nearby_map: list[str]
    corridor_map: list[str]
    recent_events: list[int]
    evicted: NotRequired[list[str]]


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


# -- Foxglove well-known messages --------------------------------------------------------------
# The shapes of Foxglove's published schemas (``@foxglove/schemas``), which its panels know by
# schema name: every field is written, as Foxglove's 3D panel expects.


@with_config(_STRICT)
class TimeRecord(TypedDict):
    """A time or a duration: whole seconds and nanoseconds."""

    sec: int
    nsec: int


@with_config(_STRICT)
class Vector3Record(TypedDict):
    """A vector or a point (m)."""

    x: float
    y: float
    z: float


@with_config(_STRICT)
class QuaternionRecord(TypedDict):
    """An orientation."""

    x: float
    y: float
    z: float
    w: float


@with_config(_STRICT)
class PoseRecord(TypedDict):
    """A position and an orientation."""

    position: Vector3Record
    orientation: QuaternionRecord


@with_config(_STRICT)
class ColorRecord(TypedDict):
    """A colour, each part 0..1."""

    r: float
    g: float
    b: float
    a: float


@with_config(_STRICT)
class KeyValueRecord(TypedDict):
    """A metadata pair of a scene entity."""

    key: str
    value: str


@with_config(_STRICT)
class ArrowRecord(TypedDict):
    """An arrow of a scene entity."""

    pose: PoseRecord
    shaft_length: float
    shaft_diameter: float
    head_length: float
    head_diameter: float
    color: ColorRecord


@with_config(_STRICT)
class CubeRecord(TypedDict):
    """A box of a scene entity."""

    pose: PoseRecord
    size: Vector3Record
    color: ColorRecord


@with_config(_STRICT)
class SphereRecord(TypedDict):
    """An ellipsoid of a scene entity."""

    pose: PoseRecord
    size: Vector3Record
    color: ColorRecord


@with_config(_STRICT)
class CylinderRecord(TypedDict):
    """A cylinder (or cone) of a scene entity."""

    pose: PoseRecord
    size: Vector3Record
    bottom_scale: float
    top_scale: float
    color: ColorRecord


LINE_TYPES = {"LINE_STRIP": 0, "LINE_LOOP": 1, "LINE_LIST": 2}
"""``foxglove.LineType``."""


@with_config(_STRICT)
class LineRecord(TypedDict):
    """A polyline of a scene entity."""

    type: Annotated[int, OneOf(LINE_TYPES)]
    pose: PoseRecord
    thickness: float
    scale_invariant: bool
    points: list[Vector3Record]
    color: ColorRecord
    colors: list[ColorRecord]
    indices: list[int]


@with_config(_STRICT)
class TriangleListRecord(TypedDict):
    """Filled triangles of a scene entity (three points each)."""

    pose: PoseRecord
    points: list[Vector3Record]
    color: ColorRecord
    colors: list[ColorRecord]
    indices: list[int]


@with_config(_STRICT)
class TextRecord(TypedDict):
    """A label of a scene entity."""

    pose: PoseRecord
    billboard: bool
    font_size: float
    scale_invariant: bool
    color: ColorRecord
    text: str


@with_config(_STRICT)
class ModelRecord(TypedDict):
    """A 3D model of a scene entity (tickwork draws none; the field is Foxglove's)."""

    pose: PoseRecord
    scale: Vector3Record
    color: ColorRecord
    override_color: bool
    url: str
    media_type: str
    data: str


@with_config(_STRICT)
class SceneEntityRecord(TypedDict):
    """One thing in the 3D scene, drawn from its primitives; replaces the entity of the
    same ``id``."""

    timestamp: TimeRecord
    frame_id: str
    id: str
    lifetime: TimeRecord
    frame_locked: bool
    metadata: list[KeyValueRecord]
    arrows: list[ArrowRecord]
    cubes: list[CubeRecord]
    spheres: list[SphereRecord]
    cylinders: list[CylinderRecord]
    lines: list[LineRecord]
    triangles: list[TriangleListRecord]
    texts: list[TextRecord]
    models: list[ModelRecord]


DELETION_TYPES = {"MATCHING_ID": 0, "ALL": 1}
"""``foxglove.SceneEntityDeletionType``."""


@with_config(_STRICT)
class SceneEntityDeletionRecord(TypedDict):
    """An entity (or all of them) taken out of the scene."""

    timestamp: TimeRecord
    type: Annotated[int, OneOf(DELETION_TYPES)]
    id: str


@with_config(_STRICT)
class SceneUpdateRecord(TypedDict):
    """``foxglove.SceneUpdate``: what changed in the 3D scene."""

    deletions: list[SceneEntityDeletionRecord]
    entities: list[SceneEntityRecord]


@with_config(_STRICT)
class FrameTransformRecord(TypedDict):
    """``foxglove.FrameTransform``: where the child frame is in the parent frame."""

    timestamp: TimeRecord
    parent_frame_id: str
    child_frame_id: str
    translation: Vector3Record
    rotation: QuaternionRecord


@with_config(_STRICT)
class PoseInFrameRecord(TypedDict):
    """``foxglove.PoseInFrame``: a pose in a named frame."""

    timestamp: TimeRecord
    frame_id: str
    pose: PoseRecord


@with_config(_STRICT)
class LaserScanRecord(TypedDict):
    """``foxglove.LaserScan``: one sweep of a planar range-finder whose origin is ``pose``
    in frame ``frame_id``: ``ranges`` (m) at equally spaced bearings from ``start_angle``
    to ``end_angle`` (rad, counter-clockwise, 0 along +x), and one ``intensities`` entry
    per range (or none). The schema has no range limits: Foxglove's 3D panel draws every
    range, so a writer says "no return" in its own way (the channel's description)."""

    timestamp: TimeRecord
    frame_id: str
    pose: PoseRecord
    start_angle: float
    end_angle: float
    ranges: list[float]
    intensities: list[float]


LOG_LEVELS = {"UNKNOWN": 0, "DEBUG": 1, "INFO": 2, "WARNING": 3, "ERROR": 4, "FATAL": 5}
"""``foxglove.LogLevel``."""


@with_config(_STRICT)
class LogRecord(TypedDict):
    """``foxglove.Log``: one line of the Log panel; ``name`` is who said it."""

    timestamp: TimeRecord
    level: Annotated[int, OneOf(LOG_LEVELS)]
    message: str
    name: str
    file: str
    line: int


@with_config(_STRICT)
class MissingCountRecord(TypedDict):
    """How many declared items one cabin's view lacked, and how many items its spec
    selected that working memory did not keep for capacity (``evicted``: its capacity
    pressure at this tick)."""

    cabin: str
    missing: int
    evicted: NotRequired[int]


@with_config(_STRICT)
class SeriesRecord(TypedDict):
    """Per tick, the numbers worth plotting: battery (fraction), speed (m/s), the robot's
    pose (``x``, ``y`` in m, ``heading`` in rad), how far it is from its route (m; left
    out when the route's numbers give no finite distance),
    working-set size, tick compute time (ms), working memory's occupancy (items ``held``
    of ``capacity``), the specs under capacity pressure (``pressure``: how many lost an
    item they selected; ``lost``: the items lost), and per cabin the items missing from
    its view and those it lost to capacity. Typed numbers, for Plot and message paths."""

    tick: int
    time: float
    battery: float
    speed: float
    x: NotRequired[float]
    y: NotRequired[float]
    heading: NotRequired[float]
    cross_track_error: NotRequired[float]
    working_set: int
    compute_ms: float
    overrun: bool
    held: NotRequired[int]
    capacity: NotRequired[int]
    pressure: NotRequired[int]
    lost: NotRequired[int]
    missing: list[MissingCountRecord]


@with_config(_STRICT)
class BoardTickRecord(TypedDict):
    """The live view's ``/board``: every board write and delete of one tick, in order
    (the recording keeps one message per write)."""

    tick: int
    changes: list[BoardRecord]


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

SCENE = Channel(
    "/scene",
    SceneUpdateRecord,
    "the warehouse in 3D: layout, people and forklifts, the robot, its route, incidents",
    name="foxglove.SceneUpdate",
)
TF = Channel(
    "/tf",
    FrameTransformRecord,
    "per tick: the robot frame in the world",
    name="foxglove.FrameTransform",
)
ROBOT_POSE = Channel(
    "/robot/pose", PoseInFrameRecord, "per tick: the robot's true pose", name="foxglove.PoseInFrame"
)
LOG = Channel(
    "/log", LogRecord, "every event as a log line, by level and cabin", name="foxglove.Log"
)
SERIES = Channel("/series", SeriesRecord, "per tick: the numbers worth plotting")
SCAN = Channel(
    "/scan",
    LaserScanRecord,
    "per tick: the safety scanner's sweep, in the robot frame; a beam with no return has "
    "range 1 m beyond the scanner's reach and intensity 0 (a return: intensity 1)",
    name="foxglove.LaserScan",
)

FOXGLOVE_CHANNELS: Mapping[str, Channel[Any]] = {
    c.topic: c for c in (SCENE, TF, ROBOT_POSE, LOG, SERIES, SCAN)
}
"""The channels Foxglove's panels show (3D, Log, Plot), written beside tickwork's own."""

ALL_CHANNELS: Mapping[str, Channel[Any]] = {**CHANNELS, **FOXGLOVE_CHANNELS}
"""Every channel a recording registers, in order."""

LIVE_BOARD = Channel(
    "/board",
    BoardTickRecord,
    "per tick: that tick's board writes and deletes, in order",
    name="tickwork.board_tick",
)
LIVE_CHANNELS: Mapping[str, Channel[Any]] = {**ALL_CHANNELS, LIVE_BOARD.topic: LIVE_BOARD}
"""Every channel a live view serves: the recording's, with ``/board`` coalesced to one
message per tick (a viewer warns of a topic at some 100 messages a second)."""

PER_TICK = (WORKING_SET, EVICTIONS, DECISIONS, STATS)
"""The channels with exactly one message per recorded tick."""


__all__ = [
    "ALL_CHANNELS",
    "BOARD",
    "CHANNELS",
    "DECISIONS",
    "ENCODING",
    "EVENTS",
    "EVICTIONS",
    "FAULTS",
    "FOXGLOVE_CHANNELS",
    "LIVE_BOARD",
    "LIVE_CHANNELS",
    "LOG",
    "PER_TICK",
    "PROFILE",
    "ROBOT_POSE",
    "SCAN",
    "SCENE",
    "SCHEMA_VERSION",
    "SERIES",
    "STATS",
    "TF",
    "WORKING_SET",
    "AsyncStatus",
    "BoardRecord",
    "BoardTickRecord",
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
    "FrameTransformRecord",
    "ItemRecord",
    "Json",
    "LaserScanRecord",
    "LogRecord",
    "MemoryRecord",
    "OccupancyRecord",
    "PoseInFrameRecord",
    "ReactionRecord",
    "SceneEntityRecord",
    "SceneUpdateRecord",
    "SeriesRecord",
    "StatsRecord",
    "VersionsRecord",
    "ViewRecord",
    "WorkingSetRecord",
    "WriteRecord",
]
