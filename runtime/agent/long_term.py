"""Long-term memory: facts kept across sessions, recalled by similarity within a scope.

A scope is a mapping of string labels (``{"robot": "r1", "session": "s7"}``); a recall
returns only memories of exactly that scope. What is kept:

- **Structured facts** carry a subject (``runtime.longterm.MemoryTerms``) and are
  compared by it, never by their text: a newer fact about a subject supersedes the
  current one (kept as history, never recalled), an older one is refused, the same one
  again is a duplicate, and one that says the subject no longer holds retires it.
  One current fact per subject and scope is enforced by the database itself.
- **Text memories** pass the ``NearDuplicate`` write filter.
- **Forgetting** follows the ``Retention`` policy: per-scope capacity by importance,
  recency and id, never a pinned memory; time-to-live; an eviction record each.

Storage is SQLite (a file or ``":memory:"``; write-ahead logging for files). Each
write is one ``BEGIN IMMEDIATE`` transaction that checks and inserts, so two processes
writing one file never both store a fact: each sees the other's committed facts
first. Vectors are searched in a ``ScopeIndex`` per scope, loaded at the scope's first
use and kept in step with every write: this process's directly, other processes'
through the ``changes`` table (each add and drop, in order), read at the start of every
transaction. The loaded indexes are bounded (``IndexBudget``: the least recently used
are unloaded, ``runtime.agent.residency``), and so are the eviction records
(``Retention.evictions``) and each memory's size (``Retention.max_chars``: a longer text
is refused with a ``MemoryTooLarge``; summarise it first).

Writes can be queued (``enqueue``) in the ``pending`` table, a journal in the same
file: cheap and constant-time, durable at once, applied by ``flush`` (in batches, with
batched embedding). Opening the file applies what a crashed writer left queued (unless
opened with ``recover=False``, as a second connection of a live writer is).

The embedder's identity (name, dimension, fingerprint on probe texts) is stored with
the memories; another embedder is refused with an ``EmbedderMismatch``. An embedder
with a ``revision`` (``HashingEmbedder``: CJK text split into character pairs) has the
memories it now embeds differently embedded again when it opens a file of an earlier
revision (its ``changed(text, since)`` says which), and the claims stored with each
memory are computed again when the filter's rules changed (``CLAIM_RULES``).
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import structlog

from runtime.agent.duplicates import CLAIM_RULES, Claim, NearDuplicate, claim_of
from runtime.agent.embedding import (
    Embedder,
    EmbedderIdentity,
    EmbedderMismatch,
    HashingEmbedder,
    embed_many,
)
from runtime.agent.forgetting import EvictionReason, MemoryEviction, MemoryTooLarge, Retention
from runtime.agent.memory_file import (
    APPLICATION_ID,
    SCHEMA,
    MemoryFileError,
    check_file,
    queued_fields,
    record_fields,
    scope_of,
)
from runtime.agent.residency import IndexBudget, LoadedIndexes
from runtime.agent.vectors import ScopeIndex
from runtime.cabin import MemoryWrite
from runtime.clock import Clock
from runtime.errors import SettingError
from runtime.freeze import FrozenDict, freeze
from runtime.logs import debug_enabled
from runtime.longterm import MemoryTerms

__all__ = [
    "IndexBudget",
    "LongTermMemory",
    "MemoryFileError",
    "MemoryRecord",
    "MemoryTooLarge",
    "Queued",
    "Remembered",
]

_log = structlog.get_logger("tickwork.long_term")

_CHANGES_KEPT = 200_000  # changes other processes can still catch up from
_PRUNE_EVERY = 1000

Status = Literal["current", "superseded", "retired", "retraction"]
Reason = Literal[
    "stored",
    "superseded",
    "retired",
    "duplicate",
    "recalled",
    "older",
    "nothing_to_retire",
    "empty",
    "too_large",
]


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One long-term memory; ``score`` is its similarity to the query that recalled it."""

    id: int
    content: str
    scope: FrozenDict[str, str]
    metadata: FrozenDict[str, Any]
    stamp: float
    score: float = 0.0
    subject: str | None = None
    importance: float = 0.5
    pinned: bool = False
    last_used: float = 0.0
    expires: float | None = None
    status: Status = "current"
    replaced_by: int | None = None


@dataclass(frozen=True, slots=True)
class Remembered:
    """What ``remember`` did: stored (with the record) or refused, and why.

    ``replaced`` is the id of the fact a stored one superseded or retired;
    ``evicted`` what the write made the scope forget; ``capacity_alarm`` that pinned
    memories alone fill the scope's capacity.
    """

    stored: bool
    reason: Reason
    record: MemoryRecord | None = None
    similar_to: int | None = None
    similarity: float = 0.0
    replaced: int | None = None
    evicted: tuple[MemoryEviction, ...] = ()
    capacity_alarm: bool = False


@dataclass(frozen=True, slots=True)
class Queued:
    """A write put in the journal (``enqueue``); ``flush`` applies it. ``ticket`` names it."""

    ticket: int
    stored: bool = False
    reason: Literal["queued"] = "queued"


_TABLES = """
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    content TEXT NOT NULL,
    metadata TEXT NOT NULL,
    stamp REAL NOT NULL,
    embedding BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    memory_id INTEGER NOT NULL,
    op TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS evictions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id INTEGER NOT NULL,
    scope TEXT NOT NULL,
    content TEXT NOT NULL,
    subject TEXT,
    importance REAL NOT NULL,
    last_used REAL NOT NULL,
    pinned INTEGER NOT NULL,
    reason TEXT NOT NULL,
    stamp REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS pending (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    content TEXT NOT NULL,
    scope TEXT NOT NULL,
    metadata TEXT NOT NULL,
    stamp REAL
);
"""
# Columns added by schemas 2 and 3; an older file gets them with these defaults. Schema 3
# keeps each memory's claim (``claim_of``: its numbers, space-separated, and whether it
# negates), so that loading a scope's index reads no text; opening an older file fills
# them in (NULL, as another program may still write, means: read the text).
_COLUMNS = (
    ("last_used", "REAL NOT NULL DEFAULT 0"),
    ("importance", "REAL NOT NULL DEFAULT 0.5"),
    ("pinned", "INTEGER NOT NULL DEFAULT 0"),
    ("expires", "REAL"),
    ("subject", "TEXT"),
    ("holds", "INTEGER NOT NULL DEFAULT 1"),
    ("status", "TEXT NOT NULL DEFAULT 'current'"),
    ("replaced_by", "INTEGER"),
    ("numbers", "TEXT"),
    ("negates", "INTEGER"),
)
_INDEXES = """
DROP INDEX IF EXISTS memories_scope;
CREATE INDEX IF NOT EXISTS memories_current ON memories (scope, status, id);
CREATE UNIQUE INDEX IF NOT EXISTS memories_one_current_subject
    ON memories (scope, subject) WHERE status = 'current' AND subject IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_subject
    ON memories (scope, subject, id) WHERE subject IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_forget
    ON memories (scope, importance, last_used, id) WHERE status = 'current' AND pinned = 0;
CREATE INDEX IF NOT EXISTS memories_expiry
    ON memories (scope, expires) WHERE status = 'current' AND expires IS NOT NULL;
"""
_RECORD_COLUMNS = (
    "id, content, scope, metadata, stamp, subject, importance, pinned, last_used, "
    "expires, status, replaced_by"
)


@dataclass(slots=True)
class _Write:
    """One fact being written: checked, embedded, with its terms."""

    content: str
    scope_key: str
    scope: FrozenDict[str, str]
    metadata: FrozenDict[str, Any]
    metadata_json: str
    stamp: float | None
    terms: MemoryTerms
    vector: np.ndarray = field(default_factory=lambda: np.zeros(0))


class LongTermMemory:
    """Facts remembered across sessions, recalled by similarity within a scope (module doc)."""

    def __init__(
        self,
        path: str = ":memory:",
        *,
        embed: Embedder | None = None,
        duplicates: NearDuplicate | None = None,
        retention: Retention | None = None,
        clock: Clock | None = None,
        recover: bool = True,
        indexes: IndexBudget | None = None,
    ) -> None:
        if not isinstance(path, str):
            raise TypeError(f"path must be a string (a file or ':memory:'), got {path!r}")
        self.path = path
        self.embed: Embedder = embed if embed is not None else HashingEmbedder()
        self.duplicates = duplicates if duplicates is not None else NearDuplicate()
        self.retention = retention if retention is not None else Retention()
        self.clock = clock
        self.identity = EmbedderIdentity.of(self.embed)
        self.embedder_name = self.identity.name
        self._lock = threading.RLock()
        self.index_budget = indexes if indexes is not None else IndexBudget()
        self._indexes = LoadedIndexes(self.index_budget)
        self._synced = 0
        self._writes = 0
        self._recalled: OrderedDict[
            str, deque[tuple[tuple[int, ...], np.ndarray, tuple[str, ...]]]
        ] = OrderedDict()  # the latest recalls of the most recently recalled scopes
        check_file(path)  # read-only: a file refused here is left exactly as it was
        self._db = sqlite3.connect(
            path, check_same_thread=False, timeout=60.0, isolation_level=None
        )
        try:
            self._open(recover=recover)
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise MemoryFileError(f"{path}: not a usable long-term memory file ({exc})") from None
        except BaseException:
            self._db.close()
            raise

    # -- life cycle ---------------------------------------------------------------------

    def _open(self, *, recover: bool) -> None:
        db = self._db
        db.execute("PRAGMA busy_timeout = 60000")
        with self._transaction():
            _script(db, _TABLES)
            have = {row[1] for row in db.execute("PRAGMA table_info(memories)")}
            migrating = "status" not in have
            for name, kind in _COLUMNS:
                if name not in have:
                    db.execute(f"ALTER TABLE memories ADD COLUMN {name} {kind}")
            if migrating:  # a schema-1 file: recency is the stamp, every memory current
                db.execute("UPDATE memories SET last_used = stamp")
                db.execute(
                    "INSERT INTO changes (scope, memory_id, op) "
                    "SELECT scope, id, 'add' FROM memories ORDER BY id"
                )
            stored_rules = db.execute("SELECT value FROM meta WHERE key = 'claims'").fetchone()
            if "numbers" not in have or (stored_rules or ("",))[0] != CLAIM_RULES:
                db.execute("UPDATE memories SET numbers = NULL, negates = NULL")  # other rules
                self._fill_claims()
                db.execute("INSERT OR REPLACE INTO meta VALUES ('claims', ?)", (CLAIM_RULES,))
            _script(db, _INDEXES)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA),))
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            db.execute(f"PRAGMA user_version = {SCHEMA}")
            self._check_embedder()
            self._revise_embeddings()
            row = db.execute("SELECT MAX(seq) FROM changes").fetchone()
            self._synced = int(row[0] or 0)
        if self.path != ":memory:":  # once the file is known to be ours: a refusal (another
            db.execute("PRAGMA journal_mode = WAL")  # embedder) rolls back, leaving it as it was
            db.execute("PRAGMA synchronous = NORMAL")
        recovered = self.flush() if recover else ()
        if recovered:
            _log.info("ltm_recovered", path=self.path, writes=len(recovered))

    def _revise_embeddings(self) -> None:
        """Embed again the memories an earlier revision of this embedder embedded otherwise
        (its ``changed(text, since)``), once per file; a new file takes its revision."""
        revision = getattr(self.embed, "revision", None)
        changed = getattr(self.embed, "changed", None)
        if revision is None or not callable(changed):
            return
        row = self._db.execute("SELECT value FROM meta WHERE key = 'revision'").fetchone()
        since = None if row is None else str(row[0])
        if since == revision:
            return
        cursor = self._db.execute("SELECT id, scope, content, status FROM memories ORDER BY id")
        redo = [
            (i, scope, text, status) for i, scope, text, status in cursor if changed(text, since)
        ]
        for start in range(0, len(redo), 256):  # in slices: bounded batches
            chunk = redo[start : start + 256]
            vectors = embed_many(self.embed, [text for _, _, text, _ in chunk])
            self._check_dim(vectors[0])
            self._db.executemany(
                "UPDATE memories SET embedding = ? WHERE id = ?",
                [(v.astype("<f4").tobytes(), i) for v, (i, *_) in zip(vectors, chunk, strict=True)],
            )
            self._db.executemany(  # other connections' loaded indexes take the new vectors
                "INSERT INTO changes (scope, memory_id, op) VALUES (?, ?, ?)",
                [
                    (scope, i, op)
                    for i, scope, _, status in chunk
                    if status == "current"
                    for op in ("drop", "add")
                ],
            )
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('revision', ?)", (str(revision),))
        if redo:
            _log.info(
                "ltm_embeddings_revised", path=self.path, memories=len(redo), revision=revision
            )

    def _fill_claims(self) -> None:
        """Store the claim of every memory of an older file (schema 3), in slices."""
        cursor = self._db.execute("SELECT id, content FROM memories WHERE numbers IS NULL")
        filled = 0
        while rows := cursor.fetchmany(8192):
            updates = []
            for memory_id, content in rows:
                numbers, negation = claim_of(content)
                updates.append((numbers, int(negation), memory_id))
            self._db.executemany(
                "UPDATE memories SET numbers = ?, negates = ? WHERE id = ?", updates
            )
            filled += len(updates)
        if filled:
            _log.info("ltm_claims_stored", path=self.path, memories=filled)

    def close(self) -> None:
        """Close the file (writes still queued stay in its journal for the next open)."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> LongTermMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reopened(self, *, recover: bool = True) -> LongTermMemory:
        """A new connection to the same file with the same settings (``recover``: apply
        what waits in the journal on opening, as ``LongTermMemory(path)`` does)."""
        return LongTermMemory(
            self.path,
            embed=self.embed,
            duplicates=self.duplicates,
            retention=self.retention,
            clock=self.clock,
            recover=recover,
            indexes=self.index_budget,
        )

    @contextmanager
    def _transaction(self, *, write: bool = True) -> Iterator[None]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                if write:  # the indexes may hold what was rolled back: load them afresh
                    self._indexes.clear()
                    self._synced = self._last_seq()
                raise
            self._db.execute("COMMIT")

    def _check_embedder(self) -> None:
        rows = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        mine = self.identity
        where = self.path
        name = rows.get("embedder")
        if name is None:  # a new file: this embedder's identity is its identity
            self._db.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [
                    ("embedder", mine.name),
                    ("dim", str(mine.dim)),
                    ("fingerprint", mine.fingerprint),
                    ("probes", mine.encoded_probes()),
                ],
            )
            return
        dim = int(rows.get("dim", mine.dim))
        probes = rows.get("probes")
        if probes is None:  # a schema-1 file knew only the name (and the dimension)
            EmbedderIdentity(name, dim, mine.probes).check(mine, where=where)
            self._db.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [
                    ("dim", str(mine.dim)),
                    ("fingerprint", mine.fingerprint),
                    ("probes", mine.encoded_probes()),
                ],
            )
            return
        try:
            stored = EmbedderIdentity(name, dim, EmbedderIdentity.decode_probes(probes, dim))
        except ValueError:
            raise EmbedderMismatch(f"{where}: the stored embedder fingerprint is damaged") from None
        mine.check(stored, where=where)

    # -- writing ------------------------------------------------------------------------

    def remember(
        self,
        content: str,
        *,
        scope: Mapping[str, str],
        metadata: Mapping[str, Any] | None = None,
        stamp: float | None = None,
    ) -> Remembered:
        """Keep ``content`` in ``scope``, as its terms (``metadata["memory"]``) say, unless
        the write filter refuses it; one transaction checks and inserts."""
        (outcome,) = self.remember_many([MemoryWrite(content, scope, metadata or {}, stamp)])  # type: ignore[arg-type]
        return outcome

    def remember_many(self, writes: Sequence[MemoryWrite]) -> tuple[Remembered, ...]:
        """``remember`` each write, in order, embedding them in one batch and writing them
        in one transaction (a later write sees the earlier ones)."""
        prepared = [self._prepare(w.content, w.scope, w.metadata, w.stamp) for w in writes]
        return self._apply(prepared)

    def import_many(self, writes: Sequence[MemoryWrite]) -> tuple[int, ...]:
        """Store text memories as they are, without the write filter (memories known to be
        distinct, e.g. restored from a backup or made for a benchmark): their ids. The
        scope's capacity still holds; facts with a subject go through ``remember_many``."""
        prepared = [self._prepare(w.content, w.scope, w.metadata, w.stamp) for w in writes]
        if any(w.terms.subject is not None for w in prepared):
            raise SettingError(
                "import_many takes text memories; give facts with a subject to remember_many"
            )
        if any(not w.content for w in prepared):
            raise SettingError("import_many takes memories with content")
        vectors = embed_many(self.embed, [w.content for w in prepared]) if prepared else None
        if vectors is None:
            return ()
        self._check_dim(vectors[0])
        ids: list[int] = []
        with self._transaction():
            self._sync()
            by_scope: dict[str, list[tuple[int, np.ndarray, str]]] = {}
            for w, vector in zip(prepared, vectors, strict=True):
                when = self._now(w.stamp)
                ttl = w.terms.ttl if w.terms.ttl is not None else self.retention.ttl
                cursor = self._db.execute(
                    "INSERT INTO memories (scope, content, metadata, stamp, embedding, last_used, "
                    "importance, pinned, expires, subject, holds, status, numbers, negates) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, 1, 'current', ?, ?)",
                    (
                        w.scope_key,
                        w.content,
                        w.metadata_json,
                        when,
                        vector.astype("<f4").tobytes(),
                        when,
                        w.terms.importance,
                        int(w.terms.pinned),
                        None if ttl is None else when + ttl,
                        *_stored_claim(w.content),
                    ),
                )
                record_id = int(cursor.lastrowid or 0)
                ids.append(record_id)
                by_scope.setdefault(w.scope_key, []).append((record_id, vector, w.content))
            for key, rows in by_scope.items():
                self._db.executemany(
                    "INSERT INTO changes (scope, memory_id, op) VALUES (?, ?, 'add')",
                    [(key, i) for i, _, _ in rows],
                )
                index = self._index(key)  # loads what was there, and what was just inserted
                missing = [(i, v, c) for i, v, c in rows if i not in index]
                if missing:
                    index.add(
                        [i for i, _, _ in missing],
                        np.vstack([v for _, v, _ in missing]),
                        [self.duplicates.claim(c) for _, _, c in missing],
                    )
                self._synced = self._last_seq()
                self._fit(key, max(self._now(w.stamp) for w in prepared))
        return tuple(ids)

    def enqueue(
        self,
        content: str,
        *,
        scope: Mapping[str, str],
        metadata: Mapping[str, Any] | None = None,
        stamp: float | None = None,
    ) -> Queued:
        """Put a write in the journal, checked but not yet applied: constant time, durable
        at once; ``flush`` applies it (and so does the next open, after a crash)."""
        write = self._prepare(content, scope, metadata, stamp)
        with self._lock:
            cursor = self._db.execute(
                "INSERT INTO pending (content, scope, metadata, stamp) VALUES (?, ?, ?, ?)",
                (content, write.scope_key, write.metadata_json, stamp),
            )
        return Queued(int(cursor.lastrowid or 0))

    def pending(self) -> int:
        """How many queued writes wait in the journal (of every process)."""
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM pending").fetchone()[0])

    def flush(self, *, limit: int | None = None) -> tuple[tuple[int, Remembered], ...]:
        """Apply queued writes in the order they were queued (at most ``limit``): each
        ticket with its outcome. A write another process applied first is not repeated."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, content, scope, metadata, stamp FROM pending ORDER BY id"
                + ("" if limit is None else f" LIMIT {int(limit)}")
            ).fetchall()
            if not rows:
                return ()
            tickets, prepared = [], []
            for row in rows:
                ticket, content, scope, metadata, stamp = queued_fields(row, path=self.path)
                tickets.append(ticket)
                try:  # one queued elsewhere, under a larger limit, is refused as too_large
                    prepared.append(self._prepare(content, scope, metadata, stamp, sized=False))
                except (TypeError, ValueError) as exc:  # SettingError is a ValueError
                    raise MemoryFileError(f"{self.path}: queued write {ticket}: {exc}") from None
            return tuple(zip(tickets, self._apply(prepared, claim=tickets), strict=True))

    def forget(self, record_id: int, *, stamp: float | None = None) -> bool:
        """Forget one memory (and its subject's history); True if it was current."""
        with self._transaction():
            self._sync()
            row = self._db.execute(
                f"SELECT {_RECORD_COLUMNS} FROM memories WHERE id = ? AND status = 'current'",
                (record_id,),
            ).fetchone()
            if row is None:
                return False
            self._evict([row], "forgotten", self._now(stamp))
        return True

    def expire(self, now: float | None = None) -> tuple[MemoryEviction, ...]:
        """Forget every memory whose time-to-live has run out by ``now`` (default: the
        memory's clock), in every scope."""
        when = self._now(now)
        with self._transaction():
            self._sync()
            rows = self._db.execute(
                f"SELECT {_RECORD_COLUMNS} FROM memories WHERE status = 'current' "
                "AND expires IS NOT NULL AND expires <= ? ORDER BY id",
                (when,),
            ).fetchall()
            return self._evict(rows, "expired", when)

    # -- reading ------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        *,
        scope: Mapping[str, str],
        k: int = 5,
        min_score: float = 0.0,
        now: float | None = None,
        touch: bool = False,
    ) -> tuple[MemoryRecord, ...]:
        """The ``k`` current memories of ``scope`` most similar to ``query`` (score >=
        ``min_score``), best first (ties: oldest first); exact, not approximate. With a
        time (``now``, or the memory's clock) expired memories are forgotten first, and
        ``touch`` makes the recalled ones recently used."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise SettingError(f"k must be an int >= 1, got {k!r}")
        if not isinstance(query, str):
            raise TypeError(f"a query must be a string, got {type(query).__name__}")
        scope_key, _ = _scope(scope)
        vector = embed_many(self.embed, [query])[0]
        self._check_dim(vector)
        when = now if now is not None else (self.clock.now() if self.clock is not None else None)
        with self._lock:
            if when is not None and self._has_expired(scope_key, float(when)):
                with self._transaction():
                    self._sync()
                    self._expire_scope(scope_key, float(when))
            with self._transaction(write=False):
                self._sync()
                index = self._index(scope_key)
                candidates = index.top_candidates(vector, k)
                scored = self._exact_scores(candidates, vector)
            order = sorted(scored, key=lambda pair: (-pair[1], pair[0]))
            chosen = [(i, s) for i, s in order if s >= min_score][:k]
            records = self._records([i for i, _ in chosen], dict(chosen))
            if self.duplicates.recall_window:
                window = self._recalled.setdefault(
                    scope_key, deque(maxlen=self.duplicates.recall_window)
                )
                self._recalled.move_to_end(scope_key)  # as many windows as loaded indexes
                while len(self._recalled) > self.index_budget.scopes:
                    self._recalled.popitem(last=False)
                stored = self._vectors([r.id for r in records])
                window.append(
                    (
                        tuple(r.id for r in records),
                        np.vstack([stored[r.id] for r in records]).astype(np.float64)
                        if records
                        else np.zeros((0, vector.size)),
                        tuple(r.content for r in records),
                    )
                )
            if touch and records and when is not None:
                with self._transaction():
                    self._db.executemany(
                        "UPDATE memories SET last_used = MAX(last_used, ?) WHERE id = ?",
                        [(float(when), r.id) for r in records],
                    )
        return records

    def records(self, *, scope: Mapping[str, str]) -> tuple[MemoryRecord, ...]:
        """Every current memory of ``scope``, oldest first."""
        scope_key, _ = _scope(scope)
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_RECORD_COLUMNS} FROM memories WHERE scope = ? AND status = 'current' "
                "ORDER BY id",
                (scope_key,),
            ).fetchall()
        return tuple(_record(r, path=self.path) for r in rows)

    def history(self, *, scope: Mapping[str, str], subject: str) -> tuple[MemoryRecord, ...]:
        """Every kept version of ``subject`` in ``scope`` (superseded, retired, the
        retractions and the current one), oldest first."""
        scope_key, _ = _scope(scope)
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_RECORD_COLUMNS} FROM memories WHERE scope = ? AND subject = ? "
                "ORDER BY id",
                (scope_key, subject),
            ).fetchall()
        return tuple(_record(r, path=self.path) for r in rows)

    def current(self, *, scope: Mapping[str, str], subject: str) -> MemoryRecord | None:
        """The current fact about ``subject`` in ``scope``, if there is one."""
        scope_key, _ = _scope(scope)
        with self._lock:
            row = self._db.execute(
                f"SELECT {_RECORD_COLUMNS} FROM memories WHERE scope = ? AND subject = ? "
                "AND status = 'current'",
                (scope_key, subject),
            ).fetchone()
        return None if row is None else _record(row, path=self.path)

    def count(self, *, scope: Mapping[str, str] | None = None) -> int:
        """How many current memories ``scope`` holds (every scope's when None)."""
        with self._lock:
            if scope is None:
                row = self._db.execute(
                    "SELECT COUNT(*) FROM memories WHERE status = 'current'"
                ).fetchone()
            else:
                row = self._db.execute(
                    "SELECT COUNT(*) FROM memories WHERE scope = ? AND status = 'current'",
                    (_scope(scope)[0],),
                ).fetchone()
        return int(row[0])

    def evictions(
        self, *, scope: Mapping[str, str] | None = None, limit: int | None = None
    ) -> tuple[MemoryEviction, ...]:
        """The eviction records (of ``scope``, or all), oldest first; the latest ``limit``."""
        sql = (
            "SELECT memory_id, scope, content, subject, importance, last_used, pinned, reason, "
            "stamp FROM evictions"
        )
        args: list[Any] = []
        if scope is not None:
            sql += " WHERE scope = ?"
            args.append(_scope(scope)[0])
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        return tuple(
            MemoryEviction(
                int(r[0]),
                scope_of(r[1], where=f"{self.path}: eviction record of memory {r[0]}"),
                r[2],
                r[3],
                float(r[4]),
                float(r[5]),
                bool(r[6]),
                r[7],
                float(r[8]),
            )
            for r in reversed(rows)
        )

    def index_bytes(self) -> int:
        """Bytes held by the loaded vector indexes (as each was when last used)."""
        return self._indexes.nbytes

    def loaded_scopes(self) -> int:
        """How many scopes' indexes are loaded (at most ``IndexBudget.scopes``)."""
        return len(self._indexes)

    # -- internals: writing -------------------------------------------------------------

    def _prepare(
        self,
        content: str,
        scope: Mapping[str, str],
        metadata: Mapping[str, Any] | None,
        stamp: float | None,
        *,
        sized: bool = True,
    ) -> _Write:
        """A write checked (``sized``: a text over ``Retention.max_chars`` is refused with
        a ``MemoryTooLarge``; else ``_write_one`` refuses it as ``too_large``)."""
        if not isinstance(content, str):
            raise TypeError(f"content must be a string, got {type(content).__name__}")
        if sized:
            self.retention.check_size(content)
        scope_key, scope_map = _scope(scope)
        meta = _metadata(metadata)
        if stamp is not None and (
            isinstance(stamp, bool)
            or not isinstance(stamp, int | float)
            or not math.isfinite(stamp)
        ):
            raise SettingError(f"a stamp must be a finite number or None, got {stamp!r}")
        return _Write(
            content.strip(),
            scope_key,
            scope_map,
            meta,
            json.dumps(_thaw(meta), sort_keys=True),
            None if stamp is None else float(stamp),
            MemoryTerms.of(meta),
        )

    def _apply(
        self, writes: list[_Write], *, claim: Sequence[int] | None = None
    ) -> tuple[Remembered, ...]:
        limit = self.retention.max_chars
        kept = [w for w in writes if w.content and len(w.content) <= limit]
        texts = [w.content for w in kept]
        vectors = embed_many(self.embed, texts) if texts else np.zeros((0, self.identity.dim))
        if texts:
            self._check_dim(vectors[0])
        for w, vector in zip(kept, vectors, strict=True):
            w.vector = vector
        outcomes: list[Remembered] = []
        with self._transaction():
            if claim is not None:  # only the journal rows no other process applied first
                marks = ",".join("?" * len(claim))
                taken = {
                    int(r[0])
                    for r in self._db.execute(
                        f"DELETE FROM pending WHERE id IN ({marks}) RETURNING id", list(claim)
                    ).fetchall()
                }
                writes = [w for w, t in zip(writes, claim, strict=True) if t in taken]
            self._sync()
            for w in writes:
                outcomes.append(self._write_one(w))
            self._writes += len(writes)
            if self._writes >= _PRUNE_EVERY:
                self._writes = 0
                self._db.execute(
                    "DELETE FROM changes WHERE seq <= (SELECT MAX(seq) FROM changes) - ?",
                    (_CHANGES_KEPT,),
                )
        if debug_enabled(_log):
            for o in outcomes:
                if o.stored:
                    _log.debug("ltm_stored", reason=o.reason, id=o.record.id if o.record else None)
                else:
                    _log.debug("ltm_refused", reason=o.reason, similar_to=o.similar_to)
        return tuple(outcomes)

    def _write_one(self, w: _Write) -> Remembered:
        if not w.content:
            return Remembered(False, "empty")
        if len(w.content) > self.retention.max_chars:
            _log.warning("ltm_too_large", chars=len(w.content), max_chars=self.retention.max_chars)
            return Remembered(False, "too_large")
        when = self._now(w.stamp)
        expired = self._expire_scope(w.scope_key, when)
        terms = w.terms
        replaced: int | None = None
        status: Status = "current"
        if terms.subject is not None:
            current = self._db.execute(
                "SELECT id, content, metadata, stamp FROM memories "
                "WHERE scope = ? AND subject = ? AND status = 'current'",
                (w.scope_key, terms.subject),
            ).fetchone()
            if not terms.holds:
                if current is None:
                    return Remembered(False, "nothing_to_retire", evicted=expired)
                if when < float(current[3]):
                    return Remembered(False, "older", similar_to=int(current[0]), evicted=expired)
                replaced, status = int(current[0]), "retraction"
            elif current is not None:
                if when < float(current[3]):
                    return Remembered(False, "older", similar_to=int(current[0]), evicted=expired)
                if (
                    when == float(current[3])
                    and current[1] == w.content
                    and current[2] == w.metadata_json
                ):
                    return Remembered(
                        False,
                        "duplicate",
                        similar_to=int(current[0]),
                        similarity=1.0,
                        evicted=expired,
                    )
                replaced = int(current[0])
        else:
            refused = self._refusal(w)
            if refused is not None:
                return refused
        if replaced is not None:  # superseded or retired before the new row takes its place
            self._db.execute(
                "UPDATE memories SET status = ? WHERE id = ?",
                ("retired" if status == "retraction" else "superseded", replaced),
            )
            self._drop_from_index(w.scope_key, [replaced])
        ttl = terms.ttl if terms.ttl is not None else self.retention.ttl
        expires = None if ttl is None else when + ttl
        cursor = self._db.execute(
            "INSERT INTO memories (scope, content, metadata, stamp, embedding, last_used, "
            "importance, pinned, expires, subject, holds, status, numbers, negates) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                w.scope_key,
                w.content,
                w.metadata_json,
                when,
                w.vector.astype("<f4").tobytes(),
                when,
                terms.importance,
                int(terms.pinned),
                expires,
                terms.subject,
                int(terms.holds),
                status,
                *_stored_claim(w.content),
            ),
        )
        record_id = int(cursor.lastrowid or 0)
        if replaced is not None:
            self._db.execute(
                "UPDATE memories SET replaced_by = ? WHERE id = ?", (record_id, replaced)
            )
        if status == "current":
            self._db.execute(
                "INSERT INTO changes (scope, memory_id, op) VALUES (?, ?, 'add')",
                (w.scope_key, record_id),
            )
            self._index(w.scope_key).add(
                [record_id], w.vector[None, :], [self.duplicates.claim(w.content)]
            )
            self._synced = self._last_seq()
        if terms.subject is not None:
            self._prune_history(w.scope_key, terms.subject)
        evicted, alarm = self._fit(w.scope_key, when)
        record = MemoryRecord(
            record_id,
            w.content,
            w.scope,
            w.metadata,
            when,
            subject=terms.subject,
            importance=terms.importance,
            pinned=terms.pinned,
            last_used=when,
            expires=expires,
            status=status,
        )
        reason: Reason = (
            "stored"
            if replaced is None
            else ("retired" if status == "retraction" else "superseded")
        )
        return Remembered(
            True, reason, record, replaced=replaced, evicted=expired + evicted, capacity_alarm=alarm
        )

    def _refusal(self, w: _Write) -> Remembered | None:
        """Why the write filter refuses a text memory, or None."""
        policy = self.duplicates
        vector = w.vector
        for ids, vectors, contents in self._recalled.get(w.scope_key, ()):
            if not ids:
                continue
            sims = vectors @ vector
            for i in np.argsort(-sims, kind="stable"):
                if sims[i] < policy.echo_threshold:
                    break
                if policy.same_claim(w.content, contents[i]):
                    return Remembered(False, "recalled", None, ids[i], float(sims[i]))
        index = self._index(w.scope_key)
        candidates = index.reaching(vector, policy.threshold, policy.claim(w.content))
        if not len(candidates):
            return None
        scored = [
            (i, s) for i, s in self._exact_scores(candidates, vector) if s >= policy.threshold
        ]
        if not scored:
            return None
        scored.sort(key=lambda pair: (-pair[1], pair[0]))
        texts: dict[int, str] = dict(
            self._db.execute(
                f"SELECT id, content FROM memories WHERE id IN ({','.join('?' * len(scored))})",
                [i for i, _ in scored],
            ).fetchall()
        )
        for memory_id, similarity in scored:
            if policy.same_claim(w.content, texts[memory_id]):
                return Remembered(False, "duplicate", None, memory_id, similarity)
        return None

    def _fit(self, scope_key: str, when: float) -> tuple[tuple[MemoryEviction, ...], bool]:
        capacity = self.retention.capacity
        if capacity is None:
            return (), False
        excess = len(self._index(scope_key)) - capacity
        if excess <= 0:
            return (), False
        rows = self._db.execute(
            f"SELECT {_RECORD_COLUMNS} FROM memories WHERE scope = ? AND status = 'current' "
            "AND pinned = 0 ORDER BY importance, last_used, id LIMIT ?",
            (scope_key, excess),
        ).fetchall()
        evicted = self._evict(rows, "capacity", when)
        alarm = len(rows) < excess
        if alarm:
            _log.warning(
                "ltm_capacity_alarm",
                scope=scope_key,
                capacity=capacity,
                held=len(self._index(scope_key)),
            )
        return evicted, alarm

    def _has_expired(self, scope_key: str, when: float) -> bool:
        return (
            self._db.execute(
                "SELECT 1 FROM memories WHERE scope = ? AND status = 'current' "
                "AND expires IS NOT NULL AND expires <= ? LIMIT 1",
                (scope_key, when),
            ).fetchone()
            is not None
        )

    def _expire_scope(self, scope_key: str, when: float) -> tuple[MemoryEviction, ...]:
        rows = self._db.execute(
            f"SELECT {_RECORD_COLUMNS} FROM memories WHERE scope = ? AND status = 'current' "
            "AND expires IS NOT NULL AND expires <= ? ORDER BY id",
            (scope_key, when),
        ).fetchall()
        return self._evict(rows, "expired", when) if rows else ()

    def _evict(
        self, rows: Sequence[Sequence[Any]], reason: EvictionReason, when: float
    ) -> tuple[MemoryEviction, ...]:
        out = []
        for row in rows:
            record = _record(row, path=self.path)
            scope_key = row[2]
            self._db.execute(
                "INSERT INTO evictions (memory_id, scope, content, subject, importance, "
                "last_used, pinned, reason, stamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.id,
                    scope_key,
                    record.content,
                    record.subject,
                    record.importance,
                    record.last_used,
                    int(record.pinned),
                    reason,
                    when,
                ),
            )
            if record.subject is not None:  # the subject goes, with its history
                self._db.execute(
                    "DELETE FROM memories WHERE scope = ? AND subject = ?",
                    (scope_key, record.subject),
                )
            else:
                self._db.execute("DELETE FROM memories WHERE id = ?", (record.id,))
            self._drop_from_index(scope_key, [record.id])
            out.append(
                MemoryEviction(
                    record.id,
                    record.scope,
                    record.content,
                    record.subject,
                    record.importance,
                    record.last_used,
                    record.pinned,
                    reason,
                    when,
                )
            )
            if debug_enabled(_log):
                _log.debug("ltm_evicted", id=record.id, reason=reason, scope=scope_key)
        if out:  # the latest ``Retention.evictions`` records stay
            self._db.execute(
                "DELETE FROM evictions WHERE id <= (SELECT MAX(id) FROM evictions) - ?",
                (self.retention.evictions,),
            )
        return tuple(out)

    def _drop_from_index(self, scope_key: str, ids: Sequence[int]) -> None:
        self._db.executemany(
            "INSERT INTO changes (scope, memory_id, op) VALUES (?, ?, 'drop')",
            [(scope_key, i) for i in ids],
        )
        index = self._indexes.peek(scope_key)
        if index is not None:
            index.remove(ids)
        self._synced = self._last_seq()

    def _prune_history(self, scope_key: str, subject: str) -> None:
        self._db.execute(
            "DELETE FROM memories WHERE id IN (SELECT id FROM memories WHERE scope = ? "
            "AND subject = ? AND status != 'current' ORDER BY id DESC LIMIT -1 OFFSET ?)",
            (scope_key, subject, self.retention.history),
        )

    # -- internals: the index -----------------------------------------------------------

    def _last_seq(self) -> int:
        return int(self._db.execute("SELECT MAX(seq) FROM changes").fetchone()[0] or 0)

    def _sync(self) -> None:
        """Catch the loaded indexes up with changes other connections committed (called
        inside a transaction, so what it reads is what the transaction sees)."""
        rows = self._db.execute(
            "SELECT seq, scope, memory_id, op FROM changes WHERE seq > ? ORDER BY seq",
            (self._synced,),
        ).fetchall()
        if not rows:
            return
        if int(rows[0][0]) != self._synced + 1 and self._indexes:  # pruned past us: reload
            _log.info("ltm_index_reloaded", scopes=len(self._indexes))
            self._indexes.clear()
            self._synced = int(rows[-1][0])
            return
        added: dict[int, str] = {}
        for _, scope_key, memory_id, op in rows:
            index = self._indexes.peek(scope_key)
            if index is None:
                continue
            if op == "add":
                added[int(memory_id)] = scope_key
            elif added.pop(int(memory_id), None) is None:
                index.remove([int(memory_id)])
        if added:
            vectors = self._vectors(list(added))
            claims = self._claims(list(vectors))
            for memory_id, scope_key in added.items():
                index = self._indexes.peek(scope_key)
                if memory_id in vectors and index is not None:
                    index.add([memory_id], vectors[memory_id][None, :], [claims[memory_id]])
        self._synced = int(rows[-1][0])

    def _index(self, scope_key: str) -> ScopeIndex:
        """The scope's index, loaded on first use (inside a transaction, after ``_sync``)
        and held within the ``IndexBudget``."""
        index = self._indexes.use(scope_key)
        if index is not None:
            return index
        dim = self.identity.dim
        (held,) = self._db.execute(
            "SELECT COUNT(*) FROM memories WHERE scope = ? AND status = 'current'", (scope_key,)
        ).fetchone()
        index = ScopeIndex(dim, capacity=max(8, int(held) + int(held) // 8))
        cursor = self._db.execute(
            "SELECT id, embedding, numbers, negates, CASE WHEN numbers IS NULL THEN content END "
            "FROM memories WHERE scope = ? AND status = 'current' ORDER BY id",
            (scope_key,),
        )
        claim = self._claim_reader()
        while rows := cursor.fetchmany(8192):  # in slices: bounded temporaries
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(-1, dim)
            index.add([int(r[0]) for r in rows], matrix, [claim(r[2], r[3], r[4]) for r in rows])
        index.fit()  # once, now, rather than as the scope doubled while it loaded
        self._indexes.put(scope_key, index)
        return index

    def _vectors(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        out: dict[int, np.ndarray] = {}
        dim = self.identity.dim
        for start in range(0, len(ids), 900):  # SQLite's bound on parameters
            chunk = list(ids[start : start + 900])
            marks = ",".join("?" * len(chunk))
            for memory_id, blob in self._db.execute(
                f"SELECT id, embedding FROM memories WHERE id IN ({marks})", chunk
            ):
                vector = np.frombuffer(blob, dtype="<f4")
                if vector.size != dim:
                    raise EmbedderMismatch(
                        f"{self.path}: memory {memory_id} holds a {vector.size}-dimensional "
                        f"vector, not {dim}"
                    )
                out[int(memory_id)] = vector
        return out

    def _claims(self, ids: Sequence[int]) -> dict[int, Claim]:
        out: dict[int, Claim] = {}
        claim = self._claim_reader()
        for start in range(0, len(ids), 900):  # SQLite's bound on parameters
            chunk = list(ids[start : start + 900])
            marks = ",".join("?" * len(chunk))
            out.update(
                (int(i), claim(numbers, negation, content))
                for i, numbers, negation, content in self._db.execute(
                    "SELECT id, numbers, negates, CASE WHEN numbers IS NULL THEN content END "
                    f"FROM memories WHERE id IN ({marks})",
                    chunk,
                )
            )
        return out

    def _claim_reader(self) -> Callable[[str | None, int | None, str | None], Claim]:
        """The filter's claim of a memory from its stored columns (numbers, negates; its
        content only when they are NULL)."""
        policy = self.duplicates

        def claim(numbers: str | None, negation: int | None, content: str | None) -> Claim:
            if numbers is None or negation is None:
                return policy.claim(content or "")
            return policy.claim_from(numbers, bool(negation))

        return claim

    def _exact_scores(self, ids: np.ndarray, vector: np.ndarray) -> list[tuple[int, float]]:
        if not len(ids):
            return []
        vectors = self._vectors([int(i) for i in ids])
        order = list(vectors)
        matrix = np.vstack([vectors[i] for i in order]).astype(np.float64)
        return list(zip(order, (matrix @ vector).tolist(), strict=True))

    def _check_dim(self, vector: np.ndarray) -> None:
        if vector.size != self.identity.dim:
            raise EmbedderMismatch(
                f"the embedder returned {vector.size} numbers; this memory holds "
                f"{self.identity.dim}-dimensional vectors"
            )

    def _now(self, stamp: float | None) -> float:
        if stamp is not None:
            return float(stamp)
        return self.clock.now() if self.clock is not None else 0.0

    def _records(self, ids: list[int], scores: Mapping[int, float]) -> tuple[MemoryRecord, ...]:
        if not ids:
            return ()
        marks = ",".join("?" * len(ids))
        rows = self._db.execute(
            f"SELECT {_RECORD_COLUMNS} FROM memories WHERE id IN ({marks})", ids
        ).fetchall()
        by_id = {int(r[0]): r for r in rows}
        return tuple(
            _record(by_id[i], scores.get(i, 0.0), path=self.path) for i in ids if i in by_id
        )


def _stored_claim(content: str) -> tuple[str, int]:
    """The ``numbers`` and ``negates`` columns of a memory of ``content``."""
    numbers, negation = claim_of(content)
    return numbers, int(negation)


def _script(db: sqlite3.Connection, text: str) -> None:
    """Run each statement of ``text`` (``executescript`` would commit the transaction)."""
    for statement in text.split(";"):
        if statement.strip():
            db.execute(statement)


def _record(row: Sequence[Any], score: float = 0.0, *, path: str) -> MemoryRecord:
    """A ``memories`` row as a record, its columns checked (``MemoryFileError`` if not)."""
    f = record_fields(row, path=path)
    return MemoryRecord(f[0], f[1], f[2], f[3], f[4], score, *f[5:])


def _scope(scope: Mapping[str, str]) -> tuple[str, FrozenDict[str, str]]:
    if not isinstance(scope, Mapping):
        raise TypeError(
            f"a scope is a mapping of labels such as {{'robot': 'r1'}}, got {type(scope).__name__}"
        )
    for key, value in scope.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise SettingError(f"scope labels must map strings to strings, got {key!r}: {value!r}")
    plain = dict(sorted(scope.items()))
    return json.dumps(plain, sort_keys=True, ensure_ascii=False), FrozenDict(plain)


def _metadata(metadata: Mapping[str, Any] | None) -> FrozenDict[str, Any]:
    if metadata is None:
        return FrozenDict()
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a mapping, got {type(metadata).__name__}")
    try:
        json.dumps(_thaw(metadata))
    except (TypeError, ValueError) as exc:
        raise SettingError(f"metadata must be JSON data: {exc}") from exc
    frozen: FrozenDict[str, Any] = freeze(metadata, key="metadata")
    return frozen


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_thaw(v) for v in value]
    return value


def checked_scope(scope: Mapping[str, str]) -> tuple[str, FrozenDict[str, str]]:
    """A scope checked: its canonical text (sorted JSON, as the store keys it) and labels."""
    return _scope(scope)


def checked_metadata(metadata: Mapping[str, Any] | None) -> FrozenDict[str, Any]:
    """Metadata checked (JSON data) and frozen, as the store keeps it."""
    return _metadata(metadata)
