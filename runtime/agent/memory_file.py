"""What a long-term memory file is: recognised read-only before anything is written to it,
and its rows validated as they are read.

``check_file`` opens an existing file read-only and refuses, leaving it exactly as it was,
what this tickwork must not write to: a file that is not a regular file, not SQLite,
another program's database (an ``application_id`` of its own, or tables that are not
ours), a schema newer than ours (``SCHEMA``), or a row whose columns do not have their
types (``metadata`` that is not a JSON object, a text ``stamp``, a queued write whose
``scope`` is a list, ...). ``LongTermMemory`` calls it before it connects to write (before
the journal mode is switched to WAL), and the command line before a run opens any output.
``record_of`` and ``queued_of`` validate one row as it is read (another process may write
the file while it is open): a damaged row is a ``MemoryFileError`` naming the row.
"""

from __future__ import annotations

import math
import os
import sqlite3
import urllib.parse
from collections.abc import Sequence
from typing import Any

from runtime.errors import TickworkError
from runtime.files import InputFileError, check_input
from runtime.freeze import FrozenDict, freeze
from runtime.jsondata import JSONDataError, parse

SCHEMA = 3
"""The newest schema of a long-term memory file this tickwork writes (and reads back to 1)."""
APPLICATION_ID = 0x54774C4D
"""``PRAGMA application_id`` of a tickwork long-term memory file ("TwLM")."""
TABLES = frozenset({"memories", "meta", "changes", "evictions", "pending", "sqlite_sequence"})
"""The tables a long-term memory file holds (``sqlite_stat*`` may be there too)."""
STATUSES = ("current", "superseded", "retired", "retraction")


class MemoryFileError(TickworkError, sqlite3.DatabaseError):
    """A long-term memory file that cannot be used as one (the message says why)."""


def check_file(path: str) -> None:
    """Refuse (``MemoryFileError``), without writing to it, a file at ``path`` that this
    tickwork cannot use as a long-term memory; a missing or empty file is a new one."""
    if path == ":memory:" or path.startswith("file:"):
        return
    try:
        if not check_input(path, what="a long-term memory file") or os.path.getsize(path) == 0:
            return
    except InputFileError as exc:
        raise MemoryFileError(str(exc)) from None
    uri = f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True, timeout=60.0)
    except sqlite3.Error as exc:
        raise MemoryFileError(f"{path}: cannot be opened to check it ({exc})") from None
    try:
        _check_open(db, path)
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, MemoryFileError):
            raise
        raise MemoryFileError(f"{path}: not a usable long-term memory file ({exc})") from None
    finally:
        db.close()


def _check_open(db: sqlite3.Connection, path: str) -> None:
    left = "(it was left as it is)"
    (app,) = db.execute("PRAGMA application_id").fetchone()
    if app not in (0, APPLICATION_ID):
        raise MemoryFileError(
            f"{path}: another program's SQLite database (application id {app:#x}), not a "
            f"tickwork long-term memory file {left}"
        )
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return  # an empty database: a new memory
    foreign = sorted(t for t in tables - TABLES if not t.startswith("sqlite_stat"))
    if foreign or not {"memories", "meta"} <= tables:
        held = ", ".join(foreign or sorted(tables))
        raise MemoryFileError(
            f"{path}: a SQLite database that is not a tickwork long-term memory file (it "
            f"holds tables {held}) {left}"
        )
    (version,) = db.execute("PRAGMA user_version").fetchone()
    stored = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    schema = 1 if stored is None else stored[0]
    text = str(schema)
    if not isinstance(schema, (int, str)) or not (text.isascii() and text.isdigit()):
        raise MemoryFileError(f"{path}: its schema is {schema!r}, not a number {left}")
    if int(schema) > SCHEMA or version > SCHEMA:
        raise MemoryFileError(
            f"{path}: a long-term memory file of schema {max(int(schema), version)}, written "
            f"by a newer tickwork; this one reads schemas 1 to {SCHEMA} {left}"
        )
    _check_rows(db, path, left)


def _check_rows(db: sqlite3.Connection, path: str, left: str) -> None:
    """The first row whose columns do not have their types, refused (one query per table,
    in SQLite: a file of a million memories is checked in well under a second)."""
    columns = {r[1] for r in db.execute("PRAGMA table_info(memories)")}
    size = _vector_bytes(db, path, left)
    tests = [
        ("content", "typeof(content) != 'text'"),
        ("scope", _NOT_SCOPE.format(c="scope")),
        ("metadata", _NOT_OBJECT.format(c="metadata")),
        ("stamp", _NOT_NUMBER.format(c="stamp")),
        (
            "embedding",
            "typeof(embedding) != 'blob'"
            + ("" if size is None else f" OR length(embedding) != {size}"),
        ),
    ]
    optional = {
        "last_used": _NOT_NUMBER.format(c="last_used"),
        "importance": _NOT_NUMBER.format(c="importance"),
        "pinned": "typeof(pinned) != 'integer'",
        "expires": f"{_NOT_NUMBER.format(c='expires')} AND expires IS NOT NULL",
        "subject": "typeof(subject) NOT IN ('text', 'null')",
        "status": f"status NOT IN {STATUSES!r} OR typeof(status) != 'text'",
        "replaced_by": "typeof(replaced_by) NOT IN ('integer', 'null')",
    }
    tests += [(name, test) for name, test in optional.items() if name in columns]
    _first_bad(db, path, left, "memories", "memory", tests)
    if "pending" in {r[0] for r in db.execute("SELECT name FROM sqlite_master")}:
        _first_bad(
            db,
            path,
            left,
            "pending",
            "queued write",
            [
                ("content", "typeof(content) != 'text'"),
                ("scope", _NOT_SCOPE.format(c="scope")),
                ("metadata", _NOT_OBJECT.format(c="metadata")),
                ("stamp", f"{_NOT_NUMBER.format(c='stamp')} AND stamp IS NOT NULL"),
            ],
        )


def _vector_bytes(db: sqlite3.Connection, path: str, left: str) -> int | None:
    """The bytes of one stored embedding (4 per dimension, from ``meta``'s ``dim``), or
    None for a file that names no dimension yet."""
    row = db.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()
    if row is None:
        return None
    try:
        dim = int(row[0])
    except (TypeError, ValueError):
        dim = 0
    if not 0 < dim <= 1 << 16:
        raise MemoryFileError(f"{path}: its embedding dimension {row[0]!r} is not usable {left}")
    return 4 * dim


_NOT_NUMBER = "(typeof({c}) NOT IN ('real', 'integer') OR abs({c}) > 1.7976931348623157e308)"
"""Not a finite number (SQLite keeps an infinity as a real; a NaN becomes NULL)."""
_NOT_OBJECT = (
    "typeof({c}) != 'text' OR NOT json_valid({c}) OR json_type({c}) != 'object' "
    "OR length({c}) > 1048576"
)
_NOT_SCOPE = (
    _NOT_OBJECT + " OR EXISTS (SELECT 1 FROM json_each({c}) AS label WHERE label.type != 'text')"
)


def _first_bad(
    db: sqlite3.Connection,
    path: str,
    left: str,
    table: str,
    what: str,
    tests: Sequence[tuple[str, str]],
) -> None:
    cases = " ".join(f"WHEN {test} THEN '{name}'" for name, test in tests)
    found = db.execute(
        f"SELECT id, bad FROM (SELECT id, CASE {cases} END AS bad FROM {table}) "
        "WHERE bad IS NOT NULL ORDER BY id LIMIT 1"
    ).fetchone()
    if found is not None:
        raise MemoryFileError(
            f"{path}: {what} {found[0]} is damaged: its {found[1]} is not of its type {left}"
        )


# -- one row, as it is read -----------------------------------------------------------------


def json_object(text: Any, *, where: str, column: str) -> dict[str, Any]:
    """A column's JSON object, nested at most ``runtime.jsondata.MAX_DEPTH`` deep."""
    if not isinstance(text, str):
        raise MemoryFileError(f"{where}: its {column} is not text")
    try:
        value = parse(text)
    except JSONDataError as exc:
        raise MemoryFileError(f"{where}: its {column} is {exc}") from None
    if not isinstance(value, dict):
        raise MemoryFileError(f"{where}: its {column} is not a JSON object")
    return value


def scope_of(text: Any, *, where: str) -> FrozenDict[str, str]:
    """A stored scope: a JSON object of text labels."""
    value = json_object(text, where=where, column="scope")
    if not all(isinstance(v, str) for v in value.values()):
        raise MemoryFileError(f"{where}: its scope has a label that is not text")
    return FrozenDict(value)


def number(value: Any, *, where: str, column: str, optional: bool = False) -> float | None:
    """A stored number (SQLite gives int or float); None only when ``optional``."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MemoryFileError(f"{where}: its {column} is {value!r}, not a finite number")
    return float(value)


def record_fields(row: Sequence[Any], *, path: str) -> tuple[Any, ...]:
    """The fields of a ``memories`` row (``id, content, scope, metadata, stamp, subject,
    importance, pinned, last_used, expires, status, replaced_by``) checked and converted,
    in that order."""
    where = f"{path}: memory {row[0]!r}"
    if isinstance(row[0], bool) or not isinstance(row[0], int):
        raise MemoryFileError(f"{where}: its id is not an integer")
    if not isinstance(row[1], str):
        raise MemoryFileError(f"{where}: its content is not text")
    if row[5] is not None and not isinstance(row[5], str):
        raise MemoryFileError(f"{where}: its subject is not text")
    if not isinstance(row[7], int):
        raise MemoryFileError(f"{where}: its pinned flag is not an integer")
    if row[10] not in STATUSES:
        raise MemoryFileError(f"{where}: its status {row[10]!r} is not one of {STATUSES}")
    if row[11] is not None and (isinstance(row[11], bool) or not isinstance(row[11], int)):
        raise MemoryFileError(f"{where}: its replaced_by is not an integer")
    return (
        row[0],
        row[1],
        scope_of(row[2], where=where),
        freeze(json_object(row[3], where=where, column="metadata")),
        number(row[4], where=where, column="stamp"),
        row[5],
        number(row[6], where=where, column="importance"),
        bool(row[7]),
        number(row[8], where=where, column="last_used"),
        number(row[9], where=where, column="expires", optional=True),
        row[10],
        row[11],
    )


def queued_fields(
    row: Sequence[Any], *, path: str
) -> tuple[int, str, dict[str, Any], dict[str, Any], float | None]:
    """A ``pending`` row (``id, content, scope, metadata, stamp``) checked: its ticket,
    content, scope, metadata and stamp."""
    where = f"{path}: queued write {row[0]!r}"
    if not isinstance(row[1], str):
        raise MemoryFileError(f"{where}: its content is not text")
    scope = dict(scope_of(row[2], where=where))
    metadata = json_object(row[3], where=where, column="metadata")
    stamp = number(row[4], where=where, column="stamp", optional=True)
    return int(row[0]), row[1], scope, metadata, stamp
