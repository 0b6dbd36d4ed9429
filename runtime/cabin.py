"""Cabins and their outboxes: how decision components act without touching the truth.

A cabin (planner, executor, monitor, or one a user writes) has a ``name``, a
``spec`` and a ``step(view, out)``. It reads only its frozen view and writes
only intentions to its ``Outbox``: board writes, events, commands for the world,
reactions to missing items, changes to its own scratchpad notes and facts for
long-term memory. The loop
applies every outbox after all cabins of the tick have run, so no cabin sees
another's writes in the same tick.

``decide`` runs one step isolated: a cabin that raises, or that writes notes without a
scratchpad, gives a ``CabinFailure`` instead of an outbox (the loop drops that outbox and
logs why), whether it decided inside the tick or off it.

Beyond the protocol a cabin may declare its ``timing``, a ``recheck`` of a late decision,
a ``late_policy`` (``DropLate``, ``RecheckLate``: what happens to a decision that comes
back late) and the ``latency_share`` of the decision it just made; ``timing_of``,
``recheck``, ``late_policy`` and ``latency_share`` read them with their defaults. A
``CabinWrapper`` runs a cabin inside another (``Asynchronous``, the simulator's faulty
cabin): it forwards all of these to the cabin it wraps, so a wrapper says only what it
changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np

from runtime.board import check_write
from runtime.errors import SettingError
from runtime.freeze import FrozenDict, freeze
from runtime.scratchpad import NOTE_PREFIX, check_note_key
from runtime.timing import Timing

if TYPE_CHECKING:
    from runtime.pack import CabinView
    from runtime.spec import ContextSpec


@runtime_checkable
class Cabin(Protocol):
    """A decision component run once per tick."""

    @property
    def name(self) -> str: ...

    @property
    def spec(self) -> ContextSpec: ...

    def step(self, view: CabinView, out: Outbox) -> None: ...


@dataclass(frozen=True, slots=True)
class BoardWrite:
    key: str
    value: Any
    ttl: float | None = None
    delete: bool = False


@dataclass(frozen=True, slots=True)
class EmittedEvent:
    kind: str
    data: Any
    tags: frozenset[str]


@dataclass(frozen=True, slots=True)
class Command:
    """An instruction for whatever the runtime drives (the simulator's world, a robot)."""

    cabin: str
    name: str
    args: FrozenDict[str, Any]


@dataclass(frozen=True, slots=True)
class Reaction:
    """A cabin's declared reaction to a missing item, e.g. ``retry:conservative``."""

    cabin: str
    pattern: str
    reaction: str
    detail: FrozenDict[str, Any]


@dataclass(frozen=True, slots=True)
class NoteOp:
    """A change to the cabin's scratchpad: write a note, clear the pad, or scope it to a task."""

    op: Literal["write", "clear", "scope"]
    key: str | None = None
    value: Any = None
    description: str = ""
    task: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryWrite:
    """A fact a cabin asks long-term memory to keep, within a scope (e.g. the scenario)."""

    content: str
    scope: FrozenDict[str, str]
    metadata: FrozenDict[str, Any]
    stamp: float | None = None


@dataclass(frozen=True, slots=True)
class CabinFailure:
    """Why a cabin's outbox was dropped: the exception it raised (its type and message)."""

    cabin: str
    error_type: str
    message: str


class Outbox:
    """What one cabin intends at one tick; values are frozen as they are put in."""

    __slots__ = ("cabin", "commands", "events", "memories", "notes", "reactions", "writes")

    def __init__(self, cabin: str) -> None:
        self.cabin = cabin
        self.writes: list[BoardWrite] = []
        self.events: list[EmittedEvent] = []
        self.commands: list[Command] = []
        self.reactions: list[Reaction] = []
        self.notes: list[NoteOp] = []
        self.memories: list[MemoryWrite] = []

    def write(self, key: str, value: Any, *, ttl: float | None = None) -> None:
        check_write(key, ttl)  # refused here, in the cabin's step, where failures are isolated
        self.writes.append(BoardWrite(key, freeze(value, key=key), ttl))

    def delete(self, key: str) -> None:
        check_write(key, None)
        self.writes.append(BoardWrite(key, None, None, delete=True))

    def emit(
        self, kind: str, data: Any = None, *, tags: tuple[str, ...] | frozenset[str] = ()
    ) -> None:
        if not isinstance(kind, str) or not kind:
            raise SettingError(f"an event needs a kind (a non-empty string), got {kind!r}")
        if isinstance(tags, str):
            raise SettingError(
                f"event {kind!r}: tags must be a collection of strings, got {tags!r}"
            )
        tags = tuple(tags)
        if not all(isinstance(t, str) and t for t in tags):
            raise SettingError(f"event {kind!r}: tags must be non-empty strings, got {tags!r}")
        self.events.append(EmittedEvent(kind, freeze(data, key=kind), frozenset(tags)))

    def command(self, name: str, **args: Any) -> None:
        self.commands.append(Command(self.cabin, name, freeze(args, key=name)))  # a FrozenDict

    def react(self, pattern: str, reaction: str, **detail: Any) -> None:
        self.reactions.append(
            Reaction(self.cabin, pattern, reaction, freeze(detail, key=reaction))  # a FrozenDict
        )

    def note(self, key: str, value: Any, description: str = "") -> None:
        """Write (or overwrite) a note in this cabin's scratchpad, visible from the next tick."""
        check_note_key(key)
        if not isinstance(description, str):
            raise SettingError(
                f"the description of note {key!r} must be a string, "
                f"got {type(description).__name__}"
            )
        self.notes.append(NoteOp("write", key, freeze(value, key=NOTE_PREFIX + key), description))

    def clear_notes(self) -> None:
        """Drop every note of this cabin's scratchpad (before the notes written after it)."""
        self.notes.append(NoteOp("clear"))

    def scope_notes(self, task: str | None) -> None:
        """Scope this cabin's scratchpad to ``task`` (a goal's board key); a different task
        than the current one clears the pad first, and the pad is cleared when the goal
        key leaves the board."""
        if task is not None and (not isinstance(task, str) or not task):
            raise SettingError(f"a task must be a non-empty board key or None, got {task!r}")
        self.notes.append(NoteOp("scope", task=task))

    def remember(
        self,
        content: str,
        *,
        scope: Mapping[str, str],
        metadata: Mapping[str, Any] | None = None,
        stamp: float | None = None,
    ) -> None:
        """Ask the loop's long-term memory to keep ``content`` within ``scope``; the loop
        logs a ``remembered`` event saying whether it was stored, and why not."""
        if not isinstance(content, str) or not content.strip():
            raise SettingError(f"a memory needs content (a non-empty string), got {content!r}")
        if not isinstance(scope, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in scope.items()
        ):
            raise SettingError(f"a memory's scope must map strings to strings, got {scope!r}")
        if stamp is not None and (isinstance(stamp, bool) or not isinstance(stamp, int | float)):
            raise SettingError(f"a memory's stamp must be a number or None, got {stamp!r}")
        self.memories.append(
            MemoryWrite(
                content,
                FrozenDict(dict(scope)),
                FrozenDict(freeze(dict(metadata or {}), key=content)),
                stamp,
            )
        )

    def __bool__(self) -> bool:
        return bool(
            self.writes
            or self.events
            or self.commands
            or self.reactions
            or self.notes
            or self.memories
        )


def decide(cabin: Cabin, view: CabinView, *, has_pad: bool) -> Outbox | CabinFailure:
    """Run ``cabin`` once on ``view``: its outbox, or the failure that drops it (it raised,
    or it wrote notes and ``has_pad`` is false)."""
    out = Outbox(cabin.name)
    try:
        cabin.step(view, out)
    except Exception as exc:  # a cabin's failure must not stop the loop
        return CabinFailure(cabin.name, type(exc).__name__, str(exc))
    if out.notes and not has_pad:
        return CabinFailure(
            cabin.name,
            "NoScratchpad",
            f"cabin {cabin.name!r} wrote {len(out.notes)} note change(s) but "
            "has no scratchpad (Assembler(..., scratchpads=...)); its outbox was dropped",
        )
    return out


# -- what a cabin may declare beyond the protocol --------------------------------------------

LATE_PREFIX = "late:"
"""Board key prefix of the cabins that are late: ``late:<cabin>``."""


def timing_of(cabin: Cabin) -> Timing:
    """The cabin's timing: its own ``timing`` attribute if it has one, else its spec's."""
    own = getattr(cabin, "timing", None)
    if isinstance(own, Timing):
        return own
    spec_timing = getattr(cabin.spec, "timing", None)
    return spec_timing if isinstance(spec_timing, Timing) else Timing()


def latency_share(cabin: Cabin) -> float:
    """The share of its declared latency the decision ``cabin`` just made takes on a
    simulated clock: its own ``latency_share()`` if it has one (an LLM cabin that asked its
    model nothing says 0), else 1."""
    own = getattr(cabin, "latency_share", None)
    if not callable(own):
        return 1.0
    share = float(own())
    return min(1.0, share) if share > 0 else 0.0


def recheck(cabin: Cabin, decided: CabinView, current: CabinView, out: Outbox) -> bool:
    """Whether a late decision still holds: the cabin's own ``recheck(decided, current, out)``
    if it has one, else whether ``current`` shows the same items and missing items (its own
    ``late:<cabin>`` item aside: that it is late is why it is asked)."""
    own = getattr(cabin, "recheck", None)
    if callable(own):
        return bool(own(decided, current, out))
    return same_view(decided, current, ignore=(LATE_PREFIX + cabin.name,))


def same_view(a: CabinView, b: CabinView, *, ignore: tuple[str, ...] = ()) -> bool:
    """Whether two views hold the same keys with equal values and the same missing items
    (the keys in ``ignore`` aside)."""
    keys = a.keys() - set(ignore)
    if keys != b.keys() - set(ignore) or dict(a.missing) != dict(b.missing):
        return False
    return all(_same(a[key], b[key]) for key in keys)


def _same(x: Any, y: Any) -> bool:
    if x is y:
        return True
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return bool(np.array_equal(x, y))
    try:
        return bool(x == y)
    except (TypeError, ValueError):  # e.g. containers of arrays
        return False


class LatePolicy(Protocol):
    """What happens to a decision that comes back late."""

    name: str

    def keep(self, cabin: Cabin, decided: CabinView, current: CabinView, out: Outbox) -> bool:
        """True to apply the late outbox ``out``, decided on ``decided``, at the tick whose
        view is ``current``."""
        ...


class DropLate:
    """A late decision is dropped."""

    name = "drop"

    def keep(self, cabin: Cabin, decided: CabinView, current: CabinView, out: Outbox) -> bool:
        return False


class RecheckLate:
    """A late decision is applied only if it still holds: ``recheck(cabin, ...)`` says."""

    name = "recheck"

    def keep(self, cabin: Cabin, decided: CabinView, current: CabinView, out: Outbox) -> bool:
        return recheck(cabin, decided, current, out)


def late_policy(cabin: Cabin) -> LatePolicy:
    """The cabin's own ``late_policy`` object if it has one, else its timing's ``on_late``."""
    own = getattr(cabin, "late_policy", None)
    if own is not None and callable(getattr(own, "keep", None)):
        return own  # type: ignore[no-any-return]
    return RecheckLate() if timing_of(cabin).on_late == "recheck" else DropLate()


def innermost(cabin: Cabin) -> Cabin:
    """The cabin at the heart of any number of ``CabinWrapper``s around it."""
    while isinstance(cabin, CabinWrapper):
        cabin = cabin.inner
    return cabin


class CabinWrapper:
    """A cabin that runs ``inner``: its name, spec, notes, timing, re-check of a late
    decision, late policy, latency share and step are the inner cabin's (each read with its default,
    as the loop reads a bare cabin's). A subclass overrides only what it changes; a
    wrapper of a wrapper forwards to the innermost cabin through each."""

    def __init__(self, inner: Cabin) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def spec(self) -> ContextSpec:
        return self.inner.spec

    @property
    def uses_notes(self) -> bool:
        """Whether the wrapped cabin keeps scratchpad notes (the loop checks it has a pad)."""
        return getattr(self.inner, "uses_notes", False) is True

    @property
    def timing(self) -> Timing:
        """The wrapped cabin's timing (an asynchronous cabin stays asynchronous)."""
        return timing_of(self.inner)

    def step(self, view: CabinView, out: Outbox) -> None:
        self.inner.step(view, out)

    def recheck(self, decided: CabinView, current: CabinView, out: Outbox) -> bool:
        """The wrapped cabin's re-check of a late decision."""
        return recheck(self.inner, decided, current, out)

    def latency_share(self) -> float:
        """The wrapped cabin's share of its latency, for the decision it just made."""
        return latency_share(self.inner)

    @property
    def late_policy(self) -> LatePolicy | None:
        """The wrapped cabin's own late policy, if it has one (else the loop uses the
        timing's ``on_late``)."""
        own: LatePolicy | None = getattr(self.inner, "late_policy", None)
        return own
