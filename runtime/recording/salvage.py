"""Reading an MCAP file record by record, keeping every record that is whole.

A run killed mid-write leaves a file cut short; a disk or a copy can change bytes in the
middle. ``salvage`` reads the records of an MCAP file (``data``, the file's bytes) one at a
time, checks what the format lets it check (each chunk's CRC, the data section's CRC, the
summary's CRC, the footer and the closing magic) and, where a record is damaged, skips it
and goes on with the next one, finding the next chunk by its own checksum where a damaged
length field hides where the next record starts. What it returns says what was read, what
was skipped (byte ranges and why) and whether the file is complete: whole, every checksum
right, nothing skipped.

It is the mcap package's record classes that parse each record; this module only decides
where records start and what to do when one is damaged.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from io import BytesIO
from typing import Any

from mcap.data_stream import ReadDataStream
from mcap.exceptions import McapError
from mcap.opcode import Opcode
from mcap.records import (
    Channel,
    Chunk,
    DataEnd,
    Footer,
    Header,
    Message,
    MessageIndex,
    Metadata,
    Schema,
)

MAGIC = bytes([137, 77, 67, 65, 80, 48, 13, 10])
_PREFIX = 9  # opcode (1 byte) and length (8 bytes) before every record's content
_COMPRESSIONS = ("", "zstd", "lz4")
_MAX_INFLATE = 1 << 30  # a chunk that claims to decompress beyond 1 GiB is damaged
_KNOWN = frozenset(int(o) for o in Opcode)
_ENDED_EARLY = "the file ends without the MCAP summary and footer: the run stopped writing"


@dataclass(frozen=True, slots=True)
class Skip:
    """Bytes ``start`` to ``end`` (exclusive) could not be read, and why."""

    start: int
    end: int
    cause: str


@dataclass
class Salvage:
    """What could be read of an MCAP file's bytes."""

    size: int
    header: Header | None = None
    schemas: dict[int, Schema] = field(default_factory=dict)
    channels: dict[int, Channel] = field(default_factory=dict)
    metadata: dict[str, dict[str, str]] = field(default_factory=dict)
    messages: list[Message] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    ended: bool = False  # the footer and the closing magic were read
    end_cause: str | None = None  # why reading stopped before the footer, if it did
    end_at: int = 0  # where reading stopped: the file size, or the start of what is missing
    checksum_problems: list[str] = field(default_factory=list)
    data_end: bool = False  # the data section's closing record (with its CRC) was read
    chunk_messages: dict[int, tuple[int, int]] | None = field(default=None, repr=False)
    """Offset in the last chunk → (channel id, log time) of the message there; None while
    the last chunk was damaged (its indexes go with it)."""

    @property
    def complete(self) -> bool:
        return self.ended and self.data_end and not self.skipped and not self.checksum_problems

    @property
    def first_problem(self) -> tuple[int, str] | None:
        """The byte offset and the cause of the first damage, None for a complete file."""
        found: list[tuple[int, str]] = [(s.start, s.cause) for s in self.skipped]
        if not self.ended:
            found.append((self.end_at, self.end_cause or "the file ends early"))
        if found:
            return min(found)
        if self.checksum_problems:
            return (self.size, self.checksum_problems[0])
        if not self.data_end:
            return (self.size, "the file has no data-end record: its bytes were changed")
        return None


def salvage(data: bytes) -> Salvage:
    """Read every whole record of an MCAP file's bytes (which start with the magic)."""
    out = Salvage(size=len(data))
    pos = len(MAGIC)
    while True:
        if pos >= len(data):
            out.end_at, out.end_cause = pos, _ENDED_EARLY
            return out
        if pos + _PREFIX > len(data):
            out.end_at, out.end_cause = pos, _cut(pos, len(data))
            return out
        opcode = data[pos]
        (length,) = struct.unpack_from("<Q", data, pos + 1)
        end = pos + _PREFIX + length
        if end > len(data):
            resume = _next_chunk(data, pos + 1)
            if resume is None:
                out.end_at = pos
                out.end_cause = (
                    _cut(pos, len(data))
                    if opcode in _KNOWN
                    else f"the record at byte {pos} claims more bytes than the file holds"
                )
                return out
            out.skipped.append(Skip(pos, resume, "a record's length field is damaged"))
            pos = resume
            continue
        content = data[pos + _PREFIX : end]
        try:
            finished = _take(out, data, pos, opcode, content)
        except _Damaged as exc:
            out.skipped.append(Skip(pos, end, str(exc)))
            pos = end
            continue
        if finished:
            return out
        pos = end


class _Damaged(Exception):
    """A record that is there but cannot be used; the message says why."""


_UNREADABLE = (McapError, struct.error, EOFError, UnicodeDecodeError, ValueError, OverflowError)
"""What reading a damaged record can raise, from the mcap library or the bytes themselves."""


def _take(out: Salvage, data: bytes, pos: int, opcode: int, content: bytes) -> bool:
    """Keep what the record at ``pos`` holds; True once the file's end was read."""
    try:
        if opcode == Opcode.HEADER:
            out.header = Header.read(_stream(content))
        elif opcode == Opcode.CHUNK:
            out.chunk_messages = None
            messages: dict[int, tuple[int, int]] = {}
            for offset, record in _chunk_records(Chunk.read(_stream(content))):
                _keep(out, record)
                if isinstance(record, Message):
                    messages[offset] = (record.channel_id, record.log_time)
            out.chunk_messages = messages
        elif opcode == Opcode.MESSAGE_INDEX:
            _check_index(out, MessageIndex.read(_stream(content)))
        elif opcode in (Opcode.SCHEMA, Opcode.CHANNEL, Opcode.MESSAGE):
            _keep(out, _inner(opcode, content))
        elif opcode == Opcode.METADATA:
            record = Metadata.read(_stream(content))
            out.metadata[record.name] = dict(record.metadata)
        elif opcode == Opcode.DATA_END:
            end = DataEnd.read(_stream(content))
            out.data_end = True
            if end.data_section_crc and end.data_section_crc != zlib.crc32(data[:pos]):
                out.checksum_problems.append(
                    "the data section fails its checksum: bytes before the summary were changed"
                )
        elif opcode == Opcode.FOOTER:
            return _footer(out, data, pos, Footer.read(_stream(content)))
        elif opcode not in _KNOWN:
            raise _Damaged(f"a record of unknown kind (opcode {opcode}): its bytes were changed")
    except _Damaged:
        raise
    except _UNREADABLE as exc:
        raise _Damaged(f"an unreadable {_name(opcode)} record ({type(exc).__name__})") from None
    return False


def _footer(out: Salvage, data: bytes, pos: int, footer: Footer) -> bool:
    crc_end = pos + _PREFIX + 16  # the summary CRC covers up to the footer's own CRC field
    start = footer.summary_start or pos
    if footer.summary_crc and (
        start > pos or zlib.crc32(data[start:crc_end]) != footer.summary_crc
    ):
        out.checksum_problems.append(
            "the summary fails its checksum: the index at the end of the file was changed"
        )
    tail = data[pos + _PREFIX + 20 :]
    if tail != MAGIC:
        out.end_at = pos + _PREFIX + 20
        out.end_cause = "the file does not end with the MCAP magic bytes after its footer"
        return True
    out.ended = True
    out.end_at = len(data)
    return True


def _check_index(out: Salvage, index: MessageIndex) -> None:
    """A message index must point at the messages of the chunk before it."""
    if out.chunk_messages is None:
        return  # the index of a damaged chunk: dropped with it
    for log_time, offset in index.records:
        if out.chunk_messages.get(offset) != (index.channel_id, log_time):
            raise _Damaged("a message index that does not match its chunk: its bytes were changed")


def _keep(out: Salvage, record: Any) -> None:
    if isinstance(record, Message):
        out.messages.append(record)
    elif isinstance(record, Schema):
        out.schemas[record.id] = record
    elif isinstance(record, Channel):
        out.channels[record.id] = record


def _inner(opcode: int, content: bytes) -> Any:
    stream = _stream(content)
    if opcode == Opcode.MESSAGE:
        return Message.read(stream, len(content))
    if opcode == Opcode.SCHEMA:
        return Schema.read(stream)
    return Channel.read(stream)


def _chunk_records(chunk: Chunk) -> Iterator[tuple[int, Any]]:
    """The schema, channel and message records of a chunk whose checksum holds, each with
    its offset in the chunk's uncompressed records."""
    if chunk.compression not in _COMPRESSIONS:
        raise _Damaged(f"a chunk with an unknown compression {chunk.compression!r}")
    if chunk.uncompressed_size > max(_MAX_INFLATE, 64 * len(chunk.data)):
        raise _Damaged("a chunk whose size field is damaged")
    try:
        if chunk.compression == "zstd":
            import zstandard

            raw = zstandard.decompress(chunk.data, max_output_size=chunk.uncompressed_size)
        elif chunk.compression == "lz4":
            import lz4.frame

            raw = lz4.frame.decompress(chunk.data)
        else:
            raw = chunk.data
    except Exception as exc:  # every codec has its own error classes
        raise _Damaged(
            f"a chunk's bytes were changed: it does not decompress ({type(exc).__name__})"
        ) from None
    if chunk.uncompressed_crc and zlib.crc32(raw) != chunk.uncompressed_crc:
        raise _Damaged("a chunk fails its checksum: its bytes were changed")
    records = []
    pos = 0
    while pos < len(raw):
        if pos + _PREFIX > len(raw):
            raise _Damaged("a chunk whose records are cut short")
        opcode = raw[pos]
        (length,) = struct.unpack_from("<Q", raw, pos + 1)
        end = pos + _PREFIX + length
        if end > len(raw):
            raise _Damaged("a chunk whose records are cut short")
        if opcode in (Opcode.SCHEMA, Opcode.CHANNEL, Opcode.MESSAGE):
            records.append((pos, _inner(opcode, raw[pos + _PREFIX : end])))
        pos = end
    return iter(records)


def _next_chunk(data: bytes, start: int) -> int | None:
    """Where the next whole chunk (one whose checksum holds) starts at or after ``start``."""
    pos = data.find(bytes([Opcode.CHUNK]), start)
    while pos != -1:
        if pos + _PREFIX <= len(data):
            (length,) = struct.unpack_from("<Q", data, pos + 1)
            end = pos + _PREFIX + length
            if end <= len(data) and _whole_chunk(data[pos + _PREFIX : end]):
                return pos
        pos = data.find(bytes([Opcode.CHUNK]), pos + 1)
    return None


def _whole_chunk(content: bytes) -> bool:
    try:
        chunk = Chunk.read(_stream(content))
        if not chunk.uncompressed_crc:
            return False  # without a checksum a chunk found by searching cannot be trusted
        list(_chunk_records(chunk))
    except (_Damaged, *_UNREADABLE):
        return False
    return True


def _stream(content: bytes) -> ReadDataStream:
    return ReadDataStream(BytesIO(content))


def _cut(pos: int, size: int) -> str:
    return f"the file is cut short: its last {size - pos} bytes are an incomplete record"


def _name(opcode: int) -> str:
    try:
        return Opcode(opcode).name.lower().replace("_", " ")
    except ValueError:
        return f"unknown (opcode {opcode})"


__all__ = ["MAGIC", "Salvage", "Skip", "salvage"]
