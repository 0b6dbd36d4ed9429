"""The scratchpad: a cabin's task-scoped notes, the seed's working-memory "draft paper".

A ``Scratchpad`` is a source owned by the runtime, one per cabin that wants one.
It holds intermediate results of the task under way as key -> ``Note``: a write
overwrites the same key, a read of an absent key gives None, every write and clear
is logged with its tick. At each freeze the assembler puts a cabin's notes into
the working set as ``note:<key>`` items (only in that cabin's view), so they obey
capacity and eviction like every other item. A pad can be scoped to a task (the
board key of its goal): it is cleared when that key leaves the board, and when it
is scoped to another task, so notes are never carried from one task into the next.

Cabins never hold the pad: they read their notes from their view and change them
through their outbox (``Outbox.note``, ``clear_notes``, ``scope_notes``).
``to_prompt_text`` renders the notes deterministically (in key order) for a prompt; with
``value_chars`` each note's value is cut to that many characters with a visible marker
(``runtime.agent.clip``), so one huge note cannot swell every request.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import structlog
from pydantic import BaseModel

from runtime.agent.clip import clip
from runtime.errors import SettingError
from runtime.freeze import freeze

if TYPE_CHECKING:
    from runtime.pack import CabinView

__all__ = [
    "EMPTY_TEXT",
    "NOTE_PREFIX",
    "Note",
    "PadEntry",
    "Scratchpad",
    "check_note_key",
    "memory_key",
    "notes_in",
    "render_notes",
    "to_json_text",
    "view_key",
]

NOTE_PREFIX = "note:"
EMPTY_TEXT = "Scratchpad: (empty)"
_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}")

PadAction = Literal["write", "clear", "scope"]

_log = structlog.get_logger(__name__)


def memory_key(cabin: str, key: str) -> str:
    """The working-memory key of the item ``cabin``'s view shows as ``key``.

    A cabin's notes are ``note:<key>`` in its view but ``note:<cabin>/<key>`` in working
    memory, in the working set and in eviction records, so two cabins' pads never
    collide; every other key is the same in both.
    """
    if key.startswith(NOTE_PREFIX) and cabin:
        return f"{NOTE_PREFIX}{cabin}/{key[len(NOTE_PREFIX) :]}"
    return key


def view_key(cabin: str, key: str) -> str:
    """The key ``cabin``'s view shows for working-memory key ``key`` (``memory_key``
    undone)."""
    mine = f"{NOTE_PREFIX}{cabin}/"
    return NOTE_PREFIX + key[len(mine) :] if key.startswith(mine) else key


def check_note_key(key: Any) -> str:
    """Return ``key`` if it can name a note, else raise ValueError saying why.

    A note key is 1-128 characters of letters, digits, ``_ . : -`` (not starting
    with ``. : -``), so ``note:<key>`` is an exact item key, never a glob.
    """
    if not isinstance(key, str):
        raise SettingError(f"a note key must be a string, got {type(key).__name__} {key!r}")
    if not _KEY.fullmatch(key):
        raise SettingError(
            f"note key {key!r} is not allowed: use 1-128 letters, digits, '_', '.', ':' or "
            "'-' (snake_case such as 'total_revenue'), starting with a letter, digit or '_'"
        )
    return key


@dataclass(frozen=True, slots=True)
class Note:
    """One note: its key, its (frozen) value, what it is, the task it belongs to."""

    key: str
    value: Any
    description: str = ""
    task: str | None = None
    seq: int = 0  # the pad's version when it was written


@dataclass(frozen=True, slots=True)
class PadEntry:
    """One change to a pad: a write (with its key), a clear or a (re-)scope, and why."""

    action: PadAction
    tick: int | None
    key: str | None = None
    task: str | None = None
    reason: str = ""


class Scratchpad:
    """Task-scoped key -> note storage of one cabin (a source, owned by the runtime)."""

    _state_types: ClassVar[dict[str, Any]] = {
        "_notes": dict[str, Note],
        "_task": str | None,
        "_log": deque[PadEntry],
        "version": int,
    }

    def __init__(
        self, *, task: str | None = None, history: int = 10_000, lock: threading.RLock | None = None
    ) -> None:
        if history < 1:
            raise SettingError(f"history must be at least 1, got {history}")
        self.lock = lock if lock is not None else threading.RLock()
        self._notes: dict[str, Note] = {}
        self._task = task
        self._log: deque[PadEntry] = deque(maxlen=history)
        self.version = 0

    # -- reading ------------------------------------------------------------------------

    @property
    def task(self) -> str | None:
        """The goal key the pad is scoped to, or None."""
        return self._task

    @property
    def log(self) -> tuple[PadEntry, ...]:
        """Every write, clear and scope change (the newest ``history`` of them), in order."""
        with self.lock:
            return tuple(self._log)

    def read(self, key: str) -> Any:
        """The value under ``key``, or None when there is no such note."""
        note = self._notes.get(key)
        return None if note is None else note.value

    def get(self, key: str) -> Note | None:
        return self._notes.get(key)

    def list_keys(self) -> list[str]:
        """The keys of the notes, sorted."""
        return sorted(self._notes)

    def notes(self) -> tuple[Note, ...]:
        """The notes in key order."""
        with self.lock:
            return tuple(self._notes[k] for k in sorted(self._notes))

    def __len__(self) -> int:
        return len(self._notes)

    def __contains__(self, key: object) -> bool:
        return key in self._notes

    def __iter__(self) -> Iterator[str]:
        return iter(self.list_keys())

    def to_prompt_text(self, *, value_chars: int | None = None) -> str:
        """The notes as text for a prompt, in key order; ``EMPTY_TEXT`` when there are none.
        With ``value_chars``, each value is clipped to that many characters."""
        return render_notes(self.notes(), task=self._task, value_chars=value_chars)

    # -- changing -----------------------------------------------------------------------

    def write(
        self, key: str, value: Any, description: str = "", *, tick: int | None = None
    ) -> Note:
        """Put ``value`` (deep-frozen) under ``key``, replacing any note there."""
        check_note_key(key)
        if not isinstance(description, str):
            raise SettingError(
                f"the description of note {key!r} must be a string, "
                f"got {type(description).__name__}"
            )
        frozen = freeze(value, key=NOTE_PREFIX + key)
        with self.lock:
            self.version += 1
            note = Note(key, frozen, description, self._task, self.version)
            self._notes[key] = note
            self._log.append(PadEntry("write", tick, key, self._task))
        return note

    def clear(self, *, tick: int | None = None, reason: str = "") -> int:
        """Drop every note; returns how many there were. Logged even when empty."""
        with self.lock:
            count = len(self._notes)
            self._notes.clear()
            self.version += 1
            self._log.append(PadEntry("clear", tick, None, self._task, reason))
        _log.debug("scratchpad_cleared", tick=tick, task=self._task, notes=count, reason=reason)
        return count

    def scope(self, task: str | None, *, tick: int | None = None) -> None:
        """Scope the pad to ``task`` (a goal's board key), or unscope it with None.

        Scoping to a different task than the current one first clears the pad (notes
        never carry into another task); notes written while unscoped are adopted.
        """
        if task is not None and not isinstance(task, str):
            raise SettingError(f"a task must be a board key (str) or None, got {task!r}")
        with self.lock:
            if task == self._task:
                return
            if self._task is not None:
                self.clear(tick=tick, reason="task_changed")
            self._task = task
            self.version += 1
            self._notes = {k: dataclasses.replace(n, task=task) for k, n in self._notes.items()}
            self._log.append(PadEntry("scope", tick, None, task))

    def end_task(self, *, tick: int | None = None) -> int:
        """The scoped task is over: clear the pad and unscope it; returns the notes dropped."""
        with self.lock:
            task = self._task
            count = self.clear(tick=tick, reason="task_done")
            self._task = None
            self._log.append(PadEntry("scope", tick, None, None, "task_done"))
        _log.info("scratchpad_task_done", tick=tick, task=task, notes=count)
        return count

    # -- drafts -------------------------------------------------------------------------

    @classmethod
    def from_notes(cls, notes: Iterable[Note], *, task: str | None = None) -> Scratchpad:
        """A private pad holding ``notes`` (e.g. a cabin's draft built from its view).

        With ``task``, only notes of that task (or of no task) are taken.
        """
        pad = cls(task=task)
        for note in sorted(notes, key=lambda n: n.key):
            if task is None or note.task in (None, task):
                pad._notes[note.key] = dataclasses.replace(note, task=task)
        pad.version = max((n.seq for n in pad._notes.values()), default=0)
        return pad

    @classmethod
    def from_view(cls, view: CabinView, *, task: str | None = None) -> Scratchpad:
        """A private draft of the notes in ``view`` (see ``from_notes``)."""
        return cls.from_notes(notes_in(view), task=task)


def notes_in(view: Mapping[str, Any]) -> tuple[Note, ...]:
    """The ``Note`` values of the ``note:*`` items of a view, in key order."""
    return tuple(
        v
        for k, v in sorted(view.items(), key=lambda kv: kv[0])
        if k.startswith(NOTE_PREFIX) and isinstance(v, Note)
    )


def render_notes(
    notes: Iterable[Note], *, task: str | None = None, value_chars: int | None = None
) -> str:
    """Deterministic prompt text of ``notes`` (sorted by key); ``EMPTY_TEXT`` when none.
    With ``value_chars``, each note's value (as JSON) and description is clipped to that
    many characters with the ``runtime.agent.clip`` marker."""
    ordered = sorted(notes, key=lambda n: n.key)
    if not ordered:
        return EMPTY_TEXT
    header = f"Scratchpad (task {task}) - known so far:" if task else "Scratchpad - known so far:"
    lines = [header]
    for note in ordered:
        desc, value = note.description, to_json_text(note.value)
        if value_chars is not None:
            desc, value = clip(desc, value_chars), clip(value, value_chars)
        desc = f" ({desc})" if desc else ""
        lines.append(f"- {note.key}{desc}: {value}")
    return "\n".join(lines)


def to_json_text(value: Any) -> str:
    """Compact, deterministic JSON of a (frozen) value; what JSON cannot hold is described."""
    return json.dumps(
        _plain(value), ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
    )


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=repr)
    if isinstance(value, BaseModel):
        return _plain(value.model_dump())
    if isinstance(value, Note):
        return {"value": _plain(value.value), "description": value.description}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "geom_type") and hasattr(value, "bounds"):
        return {"geometry": value.geom_type, "bounds": [round(b, 3) for b in value.bounds]}
    if isinstance(value, bytes):
        return value.hex()
    return repr(value)
