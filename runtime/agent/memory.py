"""Memory tiers of an agent: short-term trace, long-term recall, and the working state.

The seed's three tiers, beside the tick-level working memory and the scratchpad:

- ``ShortTermMemory`` is the bounded conversation trace (messages and tool results)
  of one session. When it overflows, the oldest turns are handed to a rolling-summary
  hook and replaced by its summary; the system prompt and the goal are never
  dropped, and an assistant message that calls tools is kept or dropped together
  with the results of those calls, never separated from them.
- ``LongTermMemory`` remembers facts across sessions and recalls them by embedding
  similarity, within a metadata scope (e.g. robot and session): a recall never
  returns another scope's memories. A write filter refuses near-duplicates and
  refuses to store again what was just recalled. Records live in SQLite (stdlib
  ``sqlite3``; a file or ``":memory:"``) and are searched by numpy cosine similarity.
  The embedding function is pluggable; the default ``HashingEmbedder`` is
  deterministic feature hashing, so nothing downloads a model.
- ``WorkingState`` is one task's state: goal, plan, current step, variables and
  step results; ``snapshot()`` is a deep copy.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import re
import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import structlog

from runtime.agent.plan import Plan
from runtime.clock import Clock
from runtime.errors import SettingError
from runtime.freeze import FrozenDict, freeze

__all__ = [
    "Embedder",
    "HashingEmbedder",
    "LongTermMemory",
    "MemoryRecord",
    "Message",
    "Remembered",
    "ShortTermMemory",
    "Summarizer",
    "ToolCall",
    "WorkingState",
    "omitted_summary",
]

_log = structlog.get_logger(__name__)

# -- short-term memory --------------------------------------------------------------------

Role = Literal["system", "user", "assistant", "tool"]
_ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call an assistant message makes: its id, the tool and the JSON arguments."""

    id: str
    name: str
    arguments: str = "{}"

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message: a system, user or assistant turn, or a tool's result."""

    role: Role
    content: str | None = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None  # the tool's name, on a tool result

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise SettingError(
                f"a message role must be one of {', '.join(_ROLES)}, got {self.role!r}"
            )
        if self.tool_calls and self.role != "assistant":
            raise SettingError(f"only an assistant message calls tools, not a {self.role} one")
        if (self.role == "tool") != (self.tool_call_id is not None):
            raise SettingError(
                "a tool message needs the tool_call_id it answers, and only a "
                f"tool message has one (role {self.role!r}, "
                f"tool_call_id {self.tool_call_id!r})"
            )
        ids = [c.id for c in self.tool_calls]
        if len(set(ids)) != len(ids):
            raise SettingError(f"an assistant message calls two tools with one id: {ids}")
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))

    def to_openai(self) -> dict[str, Any]:
        """The message as a chat-completions request message."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


Summarizer = Callable[[str | None, Sequence[Message]], str]
"""``(previous summary or None, messages being dropped) -> the new summary``."""


def omitted_summary(previous: str | None, dropped: Sequence[Message]) -> str:
    """The default summary: how many earlier messages were dropped, and which tools ran."""
    count = len(dropped)
    tools: list[str] = []
    found = re.match(
        r"\[(\d+) earlier messages omitted(?:; tools used: ([^\]]*))?\]", previous or ""
    )
    if found:
        count += int(found[1])
        tools = [t for t in (found[2] or "").split(", ") if t]
    for message in dropped:
        for call in message.tool_calls:
            if call.name not in tools:
                tools.append(call.name)
    used = f"; tools used: {', '.join(tools)}" if tools else ""
    return f"[{count} earlier messages omitted{used}]"


class ShortTermMemory:
    """A bounded message trace with a rolling summary (see the module docstring).

    ``messages()`` is: the system prompt, the goal (as a user message), the summary
    of dropped turns (as a system message), then the kept turns. It holds at most
    ``max_messages`` messages, except while the newest turn alone needs more room
    (an assistant message with many tool calls and their results is never split).
    """

    def __init__(self, *, max_messages: int = 30, summarize: Summarizer | None = None) -> None:
        if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 4:
            raise SettingError(
                "max_messages must be an int >= 4 (system, goal, summary and "
                f"one turn), got {max_messages!r}"
            )
        self.max_messages = max_messages
        self.summarize: Summarizer = summarize if summarize is not None else omitted_summary
        self._system: Message | None = None
        self._goal: Message | None = None
        self._summary: str | None = None
        self._turns: deque[list[Message]] = deque()
        self.dropped = 0

    # -- fixed parts --------------------------------------------------------------------

    @property
    def system(self) -> str | None:
        return None if self._system is None else self._system.content

    def set_system(self, text: str) -> None:
        """Set (or rebuild) the system prompt; it is never dropped."""
        self._system = Message("system", text)

    @property
    def goal(self) -> str | None:
        return None if self._goal is None else self._goal.content

    def set_goal(self, text: str) -> None:
        """Set the goal, kept as the first user message; it is never dropped."""
        self._goal = Message("user", text)
        self._fit()

    @property
    def summary(self) -> str | None:
        """The rolling summary of the dropped turns, or None while nothing was dropped."""
        return self._summary

    # -- the trace ----------------------------------------------------------------------

    def add(self, message: Message) -> None:
        """Append a message. A tool result must answer an open call of the last turn."""
        if not isinstance(message, Message):
            raise TypeError(f"add takes a Message, got {type(message).__name__}")
        last = self._turns[-1] if self._turns else []
        open_calls = _open_calls(last)
        if message.role == "tool":
            if message.tool_call_id not in open_calls:
                raise SettingError(
                    f"tool result for call {message.tool_call_id!r}, which is "
                    f"not an open call of the last assistant message "
                    f"(open: {open_calls})"
                )
            last.append(message)
        else:
            if open_calls:
                raise SettingError(
                    f"tool call(s) {open_calls} have no result yet; add their "
                    "results before the next message"
                )
            self._turns.append([message])
        self._fit()

    def add_user(self, content: str) -> None:
        self.add(Message("user", content))

    def add_assistant(self, content: str | None, tool_calls: Sequence[ToolCall] = ()) -> None:
        self.add(Message("assistant", content, tuple(tool_calls)))

    def add_tool_result(self, call_id: str, content: str, *, name: str | None = None) -> None:
        self.add(Message("tool", content, tool_call_id=call_id, name=name))

    def messages(self) -> tuple[Message, ...]:
        out: list[Message] = []
        if self._system is not None:
            out.append(self._system)
        if self._goal is not None:
            out.append(self._goal)
        if self._summary is not None:
            out.append(Message("system", f"Summary of earlier turns: {self._summary}"))
        for turn in self._turns:
            out.extend(turn)
        return tuple(out)

    def __len__(self) -> int:
        return len(self.messages())

    def to_openai(self) -> list[dict[str, Any]]:
        """The messages as a chat-completions ``messages`` list."""
        return [m.to_openai() for m in self.messages()]

    def to_prompt_context(self) -> str:
        """The trace as plain text (``role: content``, ``[tool:name] result``)."""
        lines = []
        for m in self.messages():
            if m.role == "tool":
                lines.append(f"[tool:{m.name or m.tool_call_id}] {m.content}")
            else:
                calls = "".join(f" -> {c.name}({c.arguments})" for c in m.tool_calls)
                lines.append(f"{m.role}: {m.content or ''}{calls}")
        return "\n".join(lines)

    def _fit(self) -> None:
        fixed = (self._system is not None) + (self._goal is not None)
        dropped: list[Message] = []
        while len(self._turns) > 1:
            summary_slot = 1 if (self._summary is not None or dropped) else 0
            held = sum(len(t) for t in self._turns)
            if fixed + summary_slot + held <= self.max_messages:
                break
            dropped.extend(self._turns.popleft())
        if dropped:
            self._summary = self.summarize(self._summary, tuple(dropped))
            self.dropped += len(dropped)
            _log.debug("short_term_summarized", dropped=len(dropped), total=self.dropped)


def _open_calls(turn: list[Message]) -> list[str]:
    if not turn:
        return []
    answered = {m.tool_call_id for m in turn[1:]}
    return [c.id for c in turn[0].tool_calls if c.id not in answered]


# -- embeddings ---------------------------------------------------------------------------

Embedder = Callable[[str], Any]
"""A text -> 1-D vector function (a list or numpy array of floats, fixed length)."""

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Deterministic feature hashing of words, word pairs and character n-grams.

    Texts sharing words and word pieces get similar vectors; the same text always
    gets the same unit vector (blake2b, not Python's salted ``hash``); no model.
    """

    def __init__(self, dim: int = 256, *, ngram: int = 3) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 8:
            raise SettingError(f"dim must be an int >= 8, got {dim!r}")
        if isinstance(ngram, bool) or not isinstance(ngram, int) or ngram < 2:
            raise SettingError(f"ngram must be an int >= 2, got {ngram!r}")
        self.dim = dim
        self.ngram = ngram
        self.name = f"hashing-{dim}-{ngram}"

    def __call__(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise TypeError(f"HashingEmbedder embeds strings, got {type(text).__name__}")
        vector = np.zeros(self.dim, dtype=np.float64)
        words = [w.lower() for w in _WORD.findall(text)]
        for feature, weight in self._features(words):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            h = int.from_bytes(digest, "little")
            vector[h % self.dim] += weight if (h >> 63) & 1 else -weight
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    def _features(self, words: list[str]) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = [(f"w:{w}", 1.0) for w in words]
        out += [(f"b:{a} {b}", 0.5) for a, b in itertools.pairwise(words)]
        n = self.ngram
        for w in words:
            padded = f"#{w}#"
            out += [(f"c:{padded[i : i + n]}", 0.25) for i in range(max(1, len(padded) - n + 1))]
        return out


# -- long-term memory ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One long-term memory; ``score`` is its similarity to the query that recalled it."""

    id: int
    content: str
    scope: FrozenDict[str, str]
    metadata: FrozenDict[str, Any]
    stamp: float
    score: float = 0.0


@dataclass(frozen=True, slots=True)
class Remembered:
    """What ``remember`` did: stored (with the record) or refused, and why."""

    stored: bool
    reason: Literal["stored", "duplicate", "recalled", "empty"]
    record: MemoryRecord | None = None
    similar_to: int | None = None
    similarity: float = 0.0


_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    content TEXT NOT NULL,
    metadata TEXT NOT NULL,
    stamp REAL NOT NULL,
    embedding BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_scope ON memories (scope);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class LongTermMemory:
    """Facts remembered across sessions, recalled by similarity within a scope.

    A scope is a mapping of string labels, e.g. ``{"robot": "r1", "session": "s7"}``;
    a recall returns only records whose scope is exactly the one asked for.
    ``remember`` refuses a text whose similarity to a record of its scope reaches
    ``duplicate_threshold``, or to one of the records the last ``recall_window``
    recalls in its scope returned reaches ``echo_threshold`` (storing what was just
    recalled would echo it back forever).
    """

    def __init__(
        self,
        path: str = ":memory:",
        *,
        embed: Embedder | None = None,
        duplicate_threshold: float = 0.95,
        echo_threshold: float = 0.85,
        recall_window: int = 1,
        clock: Clock | None = None,
    ) -> None:
        for name, value in (
            ("duplicate_threshold", duplicate_threshold),
            ("echo_threshold", echo_threshold),
        ):
            if not 0.0 < value <= 1.0:
                raise SettingError(f"{name} must be in (0, 1], got {value!r}")
        if recall_window < 0:
            raise SettingError(f"recall_window must be >= 0, got {recall_window!r}")
        self.path = path
        self.embed: Embedder = embed if embed is not None else HashingEmbedder()
        self.embedder_name = str(
            getattr(self.embed, "name", None)
            or getattr(self.embed, "__qualname__", type(self.embed).__name__)
        )
        self.duplicate_threshold = duplicate_threshold
        self.echo_threshold = echo_threshold
        self.recall_window = recall_window
        self.clock = clock
        self._lock = threading.RLock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30.0)
        self._db.executescript(_SCHEMA)
        self._dim: int | None = None
        self._recalled: dict[str, deque[tuple[tuple[int, ...], np.ndarray]]] = {}
        self._check_embedder()

    # -- life cycle ---------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> LongTermMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------

    def remember(
        self,
        content: str,
        *,
        scope: Mapping[str, str],
        metadata: Mapping[str, Any] | None = None,
        stamp: float | None = None,
    ) -> Remembered:
        """Store ``content`` in ``scope`` unless the write filter refuses it."""
        if not isinstance(content, str):
            raise TypeError(f"content must be a string, got {type(content).__name__}")
        scope_key, scope_map = _scope(scope)
        meta = _metadata(metadata)
        text = content.strip()
        if not text:
            return Remembered(False, "empty")
        vector = self._vector(text)
        with self._lock:
            for ids, vectors in self._recalled.get(scope_key, ()):
                if len(ids):
                    sims = vectors @ vector
                    best = int(np.argmax(sims))
                    if sims[best] >= self.echo_threshold:
                        _log.debug("ltm_refused", reason="recalled", similar_to=ids[best])
                        return Remembered(False, "recalled", None, ids[best], float(sims[best]))
            ids_all, matrix = self._scope_vectors(scope_key)
            if len(ids_all):
                sims = matrix @ vector
                best = int(np.argmax(sims))
                if sims[best] >= self.duplicate_threshold:
                    _log.debug("ltm_refused", reason="duplicate", similar_to=ids_all[best])
                    return Remembered(False, "duplicate", None, ids_all[best], float(sims[best]))
            when = (
                float(stamp)
                if stamp is not None
                else (self.clock.now() if self.clock is not None else 0.0)
            )
            cursor = self._db.execute(
                "INSERT INTO memories (scope, content, metadata, stamp, embedding) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    scope_key,
                    text,
                    json.dumps(_thaw(meta), sort_keys=True),
                    when,
                    vector.astype(np.float32).tobytes(),
                ),
            )
            self._db.commit()
            record_id = int(cursor.lastrowid or 0)
        record = MemoryRecord(record_id, text, scope_map, meta, when)
        _log.debug("ltm_stored", id=record_id, scope=scope_key)
        return Remembered(True, "stored", record)

    def forget(self, record_id: int) -> bool:
        """Delete one record; True if it existed."""
        with self._lock:
            cursor = self._db.execute("DELETE FROM memories WHERE id = ?", (record_id,))
            self._db.commit()
            return cursor.rowcount > 0

    # -- reading ------------------------------------------------------------------------

    def recall(
        self, query: str, *, scope: Mapping[str, str], k: int = 5, min_score: float = 0.0
    ) -> tuple[MemoryRecord, ...]:
        """The ``k`` records of ``scope`` most similar to ``query`` (score >= ``min_score``),
        best first (ties: oldest first). Only records of exactly this scope are searched."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise SettingError(f"k must be an int >= 1, got {k!r}")
        scope_key, _ = _scope(scope)
        vector = self._vector(query)
        with self._lock:
            ids, matrix = self._scope_vectors(scope_key)
            if not len(ids):
                return ()
            sims = matrix @ vector
            order = sorted(range(len(ids)), key=lambda i: (-float(sims[i]), ids[i]))
            chosen = [i for i in order if sims[i] >= min_score][:k]
            records = self._records(
                [ids[i] for i in chosen], {ids[i]: float(sims[i]) for i in chosen}
            )
            if self.recall_window:
                window = self._recalled.setdefault(scope_key, deque(maxlen=self.recall_window))
                window.append(
                    (
                        tuple(ids[i] for i in chosen),
                        matrix[chosen] if chosen else np.zeros((0, len(vector))),
                    )
                )
        return records

    def records(self, *, scope: Mapping[str, str]) -> tuple[MemoryRecord, ...]:
        """Every record of ``scope``, oldest first."""
        scope_key, _ = _scope(scope)
        with self._lock:
            rows = self._db.execute(
                "SELECT id FROM memories WHERE scope = ? ORDER BY id", (scope_key,)
            ).fetchall()
            return self._records([int(r[0]) for r in rows], {})

    def count(self, *, scope: Mapping[str, str] | None = None) -> int:
        """How many records ``scope`` holds (all scopes when None)."""
        with self._lock:
            if scope is None:
                row = self._db.execute("SELECT COUNT(*) FROM memories").fetchone()
            else:
                row = self._db.execute(
                    "SELECT COUNT(*) FROM memories WHERE scope = ?", (_scope(scope)[0],)
                ).fetchone()
        return int(row[0])

    # -- internals ----------------------------------------------------------------------

    def _check_embedder(self) -> None:
        with self._lock:
            rows = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
            stored = rows.get("embedder")
            if stored is None:
                self._db.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('embedder', ?)", (self.embedder_name,)
                )
                self._db.commit()
            elif stored != self.embedder_name:
                raise SettingError(
                    f"{self.path}: memories were embedded with {stored!r}, "
                    f"not {self.embedder_name!r}; use the same embedder "
                    "(similarities across embedders mean nothing)"
                )
            dim = rows.get("dim")
            self._dim = int(dim) if dim is not None else None

    def _vector(self, text: str) -> np.ndarray:
        raw = np.asarray(self.embed(text), dtype=np.float64)
        if raw.ndim != 1 or not raw.size or not np.all(np.isfinite(raw)):
            raise SettingError(
                f"the embedder must return a non-empty 1-D vector of finite "
                f"numbers, got shape {raw.shape}"
            )
        with self._lock:
            if self._dim is None:
                self._dim = int(raw.size)
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('dim', ?)", (str(self._dim),))
                self._db.commit()
            elif raw.size != self._dim:
                raise SettingError(
                    f"the embedder returned {raw.size} numbers; this memory "
                    f"holds {self._dim}-dimensional vectors"
                )
        norm = float(np.linalg.norm(raw))
        return raw / norm if norm > 0 else raw

    def _scope_vectors(self, scope_key: str) -> tuple[list[int], np.ndarray]:
        rows = self._db.execute(
            "SELECT id, embedding FROM memories WHERE scope = ? ORDER BY id", (scope_key,)
        ).fetchall()
        dim = self._dim or 1
        if not rows:
            return [], np.zeros((0, dim))
        ids = [int(r[0]) for r in rows]
        matrix = np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
        return ids, matrix.astype(np.float64)

    def _records(self, ids: list[int], scores: Mapping[int, float]) -> tuple[MemoryRecord, ...]:
        if not ids:
            return ()
        marks = ",".join("?" * len(ids))
        rows = self._db.execute(
            f"SELECT id, content, scope, metadata, stamp FROM memories WHERE id IN ({marks})", ids
        ).fetchall()
        by_id = {int(r[0]): r for r in rows}
        out = []
        for record_id in ids:
            row = by_id[record_id]
            out.append(
                MemoryRecord(
                    record_id,
                    row[1],
                    FrozenDict(json.loads(row[2])),
                    freeze(json.loads(row[3])),
                    float(row[4]),
                    scores.get(record_id, 0.0),
                )
            )
        return tuple(out)


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


# -- working state ------------------------------------------------------------------------


@dataclass(slots=True)
class WorkingState:
    """One task's state: the goal, its plan, the current step, variables and step results."""

    goal: str
    plan: Plan | None = None
    current_step: str | None = None
    variables: dict[str, Any] = field(default_factory=dict)
    step_results: dict[str, Any] = field(default_factory=dict)

    def set_plan(self, plan: Plan) -> None:
        """Adopt ``plan``; a current step the plan no longer has is forgotten."""
        if not isinstance(plan, Plan):
            raise TypeError(f"set_plan takes a Plan, got {type(plan).__name__}")
        self.plan = plan
        if self.current_step is not None and self.current_step not in plan:
            self.current_step = None

    def start_step(self, step_id: str) -> None:
        """Make ``step_id`` (a step of the plan) the current step."""
        if self.plan is None or step_id not in self.plan:
            known = ", ".join(self.plan.ids) if self.plan is not None else "no plan"
            raise SettingError(f"no step {step_id!r} in the plan (steps: {known})")
        self.current_step = step_id

    def set_step_result(self, step_id: str, result: Any) -> None:
        self.step_results[str(step_id)] = result

    def set_variable(self, name: str, value: Any) -> None:
        self.variables[name] = value

    def snapshot(self) -> WorkingState:
        """A deep copy: changing it never changes this state, nor the other way round."""
        return copy.deepcopy(self)
