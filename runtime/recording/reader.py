"""Reading recordings back: tolerant of files cut short, clear about garbage.

``scan`` reads an MCAP file record by record and stops at the first record that
is cut short or broken, keeping everything before it: a run killed mid-write is
readable up to its last complete chunk. ``Recording`` indexes what was read by
channel and tick; ``repair`` writes what was recovered to a new, complete file.
Input that is not a tickwork recording gets a ``RecordingError`` that says so.
"""

from __future__ import annotations

import json
import struct
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

from mcap.exceptions import EndOfFile, RecordLengthLimitExceeded
from mcap.records import Channel as McapChannel
from mcap.records import Header, Message, Metadata, Schema
from mcap.stream_reader import CRCValidationError, StreamReader

from runtime.errors import TickworkError
from runtime.files import atomic_output, open_binary
from runtime.recording.format import (
    CHANNELS,
    ENCODING,
    PROFILE,
    SCHEMA_VERSION,
    WORKING_SET,
    Channel,
    FormatError,
)

MAGIC = bytes([137, 77, 67, 65, 80, 48, 13, 10])
R = TypeVar("R")


class RecordingError(TickworkError):
    """A file that cannot be read as a tickwork recording; the message says why."""


class _Counting:
    """A binary reader that counts the bytes read and never reads past ``size``.

    The cap keeps a corrupted length field from allocating gigabytes.
    """

    def __init__(self, raw: IO[bytes], size: int) -> None:
        self.raw = raw
        self.size = size
        self.offset = 0

    def read(self, n: int = -1) -> bytes:
        left = self.size - self.offset
        data = self.raw.read(left if n < 0 else min(n, left))
        self.offset += len(data)
        return data

    def readable(self) -> bool:
        return True


@dataclass
class Scan:
    """What could be read of a recording, and where it broke.

    ``good_bytes`` is where the first unreadable record starts (the file size when
    complete); ``error`` is the reader's own words, ``cause`` says it for people.
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

    @property
    def damaged(self) -> bool:
        return not self.complete

    def describe(self) -> str:
        """One sentence on how much of the file was read."""
        if self.complete:
            return f"{self.path}: complete, {len(self.messages)} messages"
        return (
            f"{self.path}: damaged at byte {self.good_bytes} of {self.size} ({self.cause}); "
            f"recovered {len(self.messages)} messages before it"
        )


def _cause(exc: Exception, good: int, read: int, size: int) -> str:
    """Why reading stopped, in words."""
    if isinstance(exc, CRCValidationError):
        return "a chunk fails its checksum: its bytes were changed"
    if isinstance(exc, RecordLengthLimitExceeded):
        return (
            f"the file is cut short or corrupted: the record at byte {good} claims more "
            "bytes than the file holds"
        )
    if read >= size and isinstance(exc, (EndOfFile, struct.error, EOFError)):
        if good >= size:
            return "the file ends without the MCAP summary and footer: the run stopped writing"
        return f"the file is cut short: its last {size - good} bytes are an incomplete record"
    return (
        f"an unreadable record ({type(exc).__name__}: {exc})"
        if str(exc)
        else f"an unreadable record ({type(exc).__name__})"
    )


def scan(path: str | Path) -> Scan:
    """Read every complete record of ``path``; stop at the first damaged one."""
    shown = str(path)
    fh, size = open_binary(path, what="a recording", error=RecordingError)
    with fh:
        head = fh.read(len(MAGIC))
        if not head:
            raise RecordingError(f"{shown}: the file is empty (0 bytes): nothing was recorded")
        if head != MAGIC:
            if MAGIC.startswith(head):
                raise RecordingError(
                    f"{shown}: cut short inside the MCAP magic bytes ({size} "
                    "bytes): nothing to recover"
                )
            raise RecordingError(
                f"{shown}: not an MCAP file (it does not start with the MCAP "
                f"magic bytes; it starts with {head!r})"
            )
        fh.seek(0)
        counting = _Counting(fh, size)
        result = Scan(path=shown, size=size)
        reader = StreamReader(
            counting,  # type: ignore[arg-type]
            validate_crcs=True,
            record_size_limit=size,
        )
        try:
            for record in reader.records:
                if isinstance(record, Header):
                    result.header = record
                elif isinstance(record, Schema):
                    result.schemas[record.id] = record
                elif isinstance(record, McapChannel):
                    result.channels[record.id] = record
                elif isinstance(record, Metadata):
                    result.metadata[record.name] = dict(record.metadata)
                elif isinstance(record, Message):
                    result.messages.append(record)
                result.good_bytes = counting.offset
            result.complete = True
            result.good_bytes = size
        except Exception as exc:  # the mcap reader raises struct.error and others on garbage
            result.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            result.cause = _cause(exc, result.good_bytes, counting.offset, size)
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
        writer = Writer(fh, compression=CompressionType.ZSTD)
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
    before its run metadata has nothing to recover: ``RecordingError``.
    """
    result = scan(path)
    if result.complete:
        return result
    if "run" not in result.metadata:
        raise RecordingError(
            f"{result.path}: nothing to recover: it breaks at byte {result.good_bytes} of "
            f"{result.size} ({result.cause}), before its run metadata was written"
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
            specs = json.loads(self.metadata.get("specs", "{}"))
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
