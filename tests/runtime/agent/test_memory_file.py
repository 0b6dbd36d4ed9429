"""Long-term memory files verified, not trusted (issue 30): another program's database, a
newer schema and a damaged row are refused with the file left byte for byte as it was
(checked read-only, before the journal mode is switched), and a row damaged while the
file is open is a clear error when it is read."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from runtime.agent.long_term import LongTermMemory
from runtime.agent.memory_file import APPLICATION_ID, SCHEMA, MemoryFileError, check_file

R1 = {"robot": "r1"}


def _files(path: Path) -> dict[str, str | None]:
    """The file and its SQLite companions (``-wal``, ``-shm``, ``-journal``), by digest."""
    out: dict[str, str | None] = {}
    for suffix in ("", "-wal", "-shm", "-journal"):
        other = Path(f"{path}{suffix}")
        out[suffix] = hashlib.sha256(other.read_bytes()).hexdigest() if other.exists() else None
    return out


def _memory(path: Path) -> Path:
    with LongTermMemory(str(path)) as memory:
        memory.remember("aisle 3 was blocked", scope=R1, stamp=1.0)
        memory.enqueue("dock B unloads slowly", scope=R1, stamp=2.0)
    return path


def _edited(path: Path, *sql: str) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode = DELETE")
        for statement in sql:
            db.execute(statement)
    db.close()
    return path


def _refused(path: Path, words: str) -> None:
    before = _files(path)
    with pytest.raises(MemoryFileError) as caught:
        LongTermMemory(str(path))
    assert str(path) in str(caught.value) and words in str(caught.value)
    assert _files(path) == before  # refused read-only: nothing written, not even the WAL


def test_another_program_s_database_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    _edited(path, "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    _refused(path, "not a tickwork long-term memory file (it holds tables users)")
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == ["users"]
    db.close()


def test_a_database_with_another_application_id_is_refused(tmp_path: Path) -> None:
    path = _edited(tmp_path / "app.db", "PRAGMA application_id = 1234")
    _refused(path, "another program's SQLite database (application id 0x4d2)")


def test_a_memory_of_a_newer_schema_is_refused_not_rewritten(tmp_path: Path) -> None:
    path = _edited(
        _memory(tmp_path / "m.sqlite"), "UPDATE meta SET value = '99' WHERE key = 'schema'"
    )
    _refused(path, "schema 99, written by a newer tickwork")
    newer = _edited(_memory(tmp_path / "v.sqlite"), "PRAGMA user_version = 99")
    _refused(newer, "schema 99")


@pytest.mark.parametrize("schema", ["²", "٣", "-1", "1.5", "x"])
def test_a_schema_that_is_not_a_plain_number_is_refused(tmp_path: Path, schema: str) -> None:
    # '²' (superscript two) passes str.isdigit but not int(): the fuzzer found the traceback
    path = _edited(
        _memory(tmp_path / "m.sqlite"), f"UPDATE meta SET value = '{schema}' WHERE key = 'schema'"
    )
    _refused(path, "not a number")


def test_a_new_memory_file_is_stamped_as_ours(tmp_path: Path) -> None:
    path = _memory(tmp_path / "m.sqlite")
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA,)
    db.close()
    check_file(str(path))


DEEP = "[" * 100_000 + "]" * 100_000
DAMAGED_ROWS: dict[str, tuple[str, str]] = {
    "metadata not JSON": (
        "UPDATE memories SET metadata = 'not json'",
        "memory 1 is damaged: its metadata",
    ),
    "metadata a JSON list": ("UPDATE memories SET metadata = '[1, 2]'", "its metadata"),
    "metadata 100,000 deep": (f"UPDATE memories SET metadata = '{DEEP}'", "its metadata"),
    "a text stamp": ("UPDATE memories SET stamp = 'yesterday'", "its stamp"),
    "a text importance": ("UPDATE memories SET importance = 'high'", "its importance"),
    "an infinite stamp": ("UPDATE memories SET stamp = 9e999", "its stamp"),
    "an embedding of another length": ("UPDATE memories SET embedding = x'00'", "its embedding"),
    "an empty embedding": ("UPDATE memories SET embedding = x''", "its embedding"),
    "an infinite importance": ("UPDATE memories SET importance = -9e999", "its importance"),
    "a queued write's infinite stamp": ("UPDATE pending SET stamp = 9e999", "its stamp"),
    "a scope label that is a list": (
        """UPDATE memories SET scope = '{"robot": ["r1"]}'""",
        "its scope",
    ),
    "a queued write's metadata not JSON": (
        "UPDATE pending SET metadata = '{'",
        "queued write 1 is damaged: its metadata",
    ),
    "a queued write's scope a list": ("""UPDATE pending SET scope = '["r1"]'""", "its scope"),
    "a queued write's text stamp": ("UPDATE pending SET stamp = 'soon'", "its stamp"),
}


@pytest.mark.parametrize("case", sorted(DAMAGED_ROWS))
def test_a_damaged_row_is_refused_with_its_row_named_and_the_file_left_as_it_was(
    tmp_path: Path, case: str
) -> None:
    sql, words = DAMAGED_ROWS[case]
    path = _edited(_memory(tmp_path / "m.sqlite"), sql)
    _refused(path, words)


READS: dict[str, Callable[[LongTermMemory], object]] = {
    "records": lambda m: m.records(scope=R1),
    "recall": lambda m: m.recall("aisle", scope=R1),
    "current": lambda m: m.current(scope=R1, subject="x") or m.records(scope=R1),
}


@pytest.mark.parametrize("read", sorted(READS))
def test_a_row_damaged_while_the_file_is_open_is_a_clear_error_when_read(
    tmp_path: Path, read: str
) -> None:
    path = _memory(tmp_path / "m.sqlite")
    with LongTermMemory(str(path)) as memory:
        with sqlite3.connect(path) as other:  # another process edits it
            other.execute("UPDATE memories SET metadata = '[1]', stamp = 'x'")
        other.close()
        with pytest.raises(MemoryFileError, match=r"memory 1: its (metadata|stamp)"):
            READS[read](memory)


@pytest.mark.parametrize("kind", ["a folder", "a FIFO", "a device", "a link to a device"])
def test_a_memory_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "m.sqlite"
    if kind == "a folder":
        path.mkdir()
    elif kind == "a FIFO":
        os.mkfifo(path)
    elif kind == "a link to a device":
        path.symlink_to("/dev/zero")
    else:
        path = Path("/dev/null")
    with pytest.raises(MemoryFileError, match="not a long-term memory file"):
        LongTermMemory(str(path))
