"""Reading recordings back: tolerant of damage, clear about garbage.

``scan`` reads an MCAP file record by record (``runtime.recording.salvage``) and keeps
every whole record: a run killed mid-write is readable up to its last complete chunk,
and a chunk whose bytes were changed is passed over, not the end of the file.
``Recording`` indexes what was read by channel and tick and validates each message
against its channel's record; ``repair`` writes what was recovered to a new, complete
file. Input that is not a tickwork recording gets a ``RecordingError`` that says so.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mcap.records import Channel as McapChannel
from mcap.records import Header, Message, Schema

from runtime import jsondata
from runtime.errors import TickworkError
from runtime.files import InputFileError, atomic_output, read_input
from runtime.recording.format import (
    CHANNELS,
    ENCODING,
    PROFILE,
    SCHEMA_VERSION,
    WORKING_SET,
    Channel,
    FormatError,
)
from runtime.recording.salvage import MAGIC, Skip, salvage

R = TypeVar("R")

MAX_BYTES = 2 << 30
"""The largest recording read (2 GiB; it is read whole, and a tick takes some 900 bytes)."""


class RecordingError(TickworkError):
    """A file that cannot be read as a tickwork recording; the message says why."""


@dataclass
class Scan:
    """What could be read of a recording, and where it was damaged.

    ``good_bytes`` is where the first damage starts (the file size when complete) and
    ``cause`` says what it is; ``skipped`` lists every damaged stretch that was passed
    over (the records after it were read), and ``error`` says why reading stopped early,
    if it did.
    """

    path: str
    size: int
    header: Header | None = None
    schemas: dict[int, Schema] = field(default_factory=dict)
    channels: dict[int, McapChannel] = field(default_factory=dict)
    metadata: dict[str, dict[str, str]] = field(default_factory=dict)
    messages: list[Message] = field(default_factory=list)
    complete: bool = False
    good_bytes: int = 0
    error: str | None = None
    cause: str | None = None
    skipped: list[Skip] = field(default_factory=list)
    dropped_bytes: int = 0

    @property
    def damaged(self) -> bool:
        return not self.complete

    def describe(self) -> str:
        """One sentence on how much of the file was read."""
        if self.complete:
            return f"{self.path}: complete, {len(self.messages)} messages"
        return (
            f"{self.path}: damaged at byte {self.good_bytes} of {self.size} ({self.cause}); "
            f"recovered {len(self.messages)} messages"
        )


def scan(path: str | Path) -> Scan:
    """Read every whole record of ``path``, passing over damaged ones (see ``salvage``)."""
    shown = str(path)
    try:
        data = read_input(path, limit=MAX_BYTES, what="a recording")
    except InputFileError as exc:
        raise RecordingError(str(exc)) from None
    size = len(data)
    head = data[: len(MAGIC)]
    if not head:
        raise RecordingError(f"{shown}: the file is empty (0 bytes): nothing was recorded")
    if head != MAGIC:
        if MAGIC.startswith(head):
            raise RecordingError(
                f"{shown}: cut short inside the MCAP magic bytes ({size} bytes): nothing to recover"
            )
        raise RecordingError(
            f"{shown}: not an MCAP file (it does not start with the MCAP "
            f"magic bytes; it starts with {head!r})"
        )
    found = salvage(data)
    problem = found.first_problem
    result = Scan(
        path=shown,
        size=size,
        header=found.header,
        schemas=found.schemas,
        channels=found.channels,
        metadata=found.metadata,
        messages=found.messages,
        complete=found.complete,
        good_bytes=size if problem is None else problem[0],
        error=None if found.ended else found.end_cause,
        cause=None if problem is None else problem[1],
        skipped=found.skipped,
        dropped_bytes=sum(s.end - s.start for s in found.skipped)
        + (0 if found.ended else size - found.end_at),
    )
    if result.header is None:
        raise RecordingError(
            f"{shown}: an MCAP file cut short or damaged before the end of its "
            f"header ({result.cause}): nothing to recover"
        )
    if result.header.profile != PROFILE:
        raise RecordingError(
            f"{shown}: an MCAP file, but not a tickwork recording (profile "
            f"{result.header.profile!r}, expected {PROFILE!r})"
        )
    if "run" not in result.metadata and result.complete:
        raise RecordingError(f"{shown}: a tickwork recording without its run metadata")
    version = result.metadata.get("run", {}).get("schema_version", str(SCHEMA_VERSION))
    if version != str(SCHEMA_VERSION):
        raise RecordingError(
            f"{shown}: recorded in tickwork recording format version {version}; this "
            f"tickwork reads format version {SCHEMA_VERSION} only (format version 2 put "
            "every channel in shapes Foxglove parses): record the run again"
        )
    return result


def write_recording(result: Scan, path: str | Path, *, upto_tick: int | None = None) -> int:
    """Write what ``result`` holds as a complete MCAP file (atomically); messages written.

    With ``upto_tick``, only messages of ticks up to and including it are kept.
    """
    from mcap.writer import CompressionType, Writer

    written = 0
    with atomic_output(path) as fh:
        writer = Writer(fh, compression=CompressionType.ZSTD, enable_data_crcs=True)
        header = result.header
        writer.start(
            profile=header.profile if header else PROFILE,
            library=header.library if header else "tickwork repair",
        )
        schema_ids = {
            sid: writer.register_schema(s.name, s.encoding, s.data)
            for sid, s in result.schemas.items()
        }
        channel_ids = {
            cid: writer.register_channel(
                c.topic, c.message_encoding, schema_ids.get(c.schema_id, 0), dict(c.metadata)
            )
            for cid, c in result.channels.items()
        }
        for name, data in result.metadata.items():
            writer.add_metadata(name, data)
        for m in result.messages:
            if m.channel_id not in channel_ids:
                continue
            if upto_tick is not None and m.sequence > upto_tick:
                continue
            writer.add_message(
                channel_ids[m.channel_id], m.log_time, m.data, m.publish_time, m.sequence
            )
            written += 1
        writer.finish()  # type: ignore[no-untyped-call]
    return written


def repair(path: str | Path, out: str | Path | None = None) -> Scan:
    """Rewrite a damaged recording as a complete one (in place unless ``out`` is given).

    A complete recording is left alone and nothing is written. A file that broke
    before its run metadata, or before its first tick, has nothing to recover:
    ``RecordingError`` (a copy holding no tick would only look like a recording).
    """
    result = scan(path)
    if result.complete:
        return result
    where = f"it is damaged at byte {result.good_bytes} of {result.size} ({result.cause})"
    if "run" not in result.metadata:
        raise RecordingError(
            f"{result.path}: nothing to recover: {where}, before its run metadata was written"
        )
    ticks = {cid for cid, c in result.channels.items() if c.topic == WORKING_SET.topic}
    if not any(m.channel_id in ticks for m in result.messages):
        raise RecordingError(
            f"{result.path}: nothing to recover: {where}, before its first tick was recorded"
        )
    write_recording(result, out if out is not None else path)
    return result


class Recording:
    """A recording, indexed by channel and tick. Damaged files are read up to the break."""

    def __init__(self, result: Scan) -> None:
        self.scan = result
        self.path = result.path
        run = result.metadata.get("run", {})
        self.metadata: dict[str, str] = dict(run)
        self._by_topic: dict[str, list[Message]] = defaultdict(list)
        topics: dict[int, str] = {}
        for cid, c in result.channels.items():
            if c.topic in CHANNELS and c.message_encoding != ENCODING:
                raise RecordingError(
                    f"{self.path}: channel {c.topic} holds "
                    f"{c.message_encoding!r} messages, expected {ENCODING!r}"
                )
            topics[cid] = c.topic
        for m in result.messages:
            topic = topics.get(m.channel_id)
            if topic is not None:
                self._by_topic[topic].append(m)
        self._ticks: dict[str, dict[int, list[Message]]] = {}

    @classmethod
    def open(cls, path: str | Path) -> Recording:
        return cls(scan(path))

    @property
    def damaged(self) -> bool:
        return self.scan.damaged

    @property
    def topics(self) -> list[str]:
        return sorted(self._by_topic)

    def count(self, channel: Channel[Any]) -> int:
        return len(self._by_topic.get(channel.topic, ()))

    def counts(self) -> dict[str, int]:
        """Messages held per topic."""
        return {topic: len(self._by_topic[topic]) for topic in self.topics}

    def messages(self, channel: Channel[R]) -> Iterator[R]:
        """The messages of ``channel``, decoded and validated, in recorded order."""
        for m in self._by_topic.get(channel.topic, ()):
            yield self._decode(channel, m)

    def records(self, channel: Channel[R]) -> Iterator[tuple[int, R]]:
        """(tick, decoded message) of ``channel``, in recorded order."""
        for m in self._by_topic.get(channel.topic, ()):
            yield m.sequence, self._decode(channel, m)

    def ticks(self) -> list[int]:
        """The ticks that have a recorded working set."""
        return sorted(self._index(WORKING_SET.topic))

    def at(self, channel: Channel[R], tick: int) -> list[R]:
        """The decoded messages of ``channel`` recorded during ``tick``."""
        return [self._decode(channel, m) for m in self._index(channel.topic).get(tick, ())]

    def one(self, channel: Channel[R], tick: int) -> R | None:
        found = self.at(channel, tick)
        return found[0] if found else None

    def spec_json(self) -> dict[str, Any]:
        """Cabin name → its spec as recorded (``ContextSpec.model_dump(mode="json")``)."""
        try:
            specs = jsondata.parse(self.metadata.get("specs", "{}"))
        except ValueError as exc:
            raise RecordingError(
                f"{self.path}: the run metadata's specs are not JSON ({exc})"
            ) from None
        if not isinstance(specs, dict):
            raise RecordingError(f"{self.path}: the run metadata's specs are not a JSON object")
        return specs

    def _index(self, topic: str) -> dict[int, list[Message]]:
        index = self._ticks.get(topic)
        if index is None:
            index = defaultdict(list)
            for m in self._by_topic.get(topic, ()):
                index[m.sequence].append(m)
            self._ticks[topic] = index
        return index

    def _decode(self, channel: Channel[R], message: Message) -> R:
        where = f"{self.path}: a {channel.topic} message of tick {message.sequence}"
        try:
            value = json.loads(message.data, parse_constant=_no_constant)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise RecordingError(f"{where} is not JSON ({exc})") from None
        if not isinstance(value, dict):
            raise RecordingError(f"{where} is not a JSON object (wrong schema)")
        try:
            return channel.decode(value)
        except FormatError as exc:
            raise RecordingError(f"{where}: {exc} (wrong schema)") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
