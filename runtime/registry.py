"""The registry: what a system writes (board keys, event kinds), so a spec that names
something no one writes is caught before a run instead of leaving its cabin blind.

A ``Registry`` holds ``BoardEntry``\\ s (a key or a ``prefix:*`` family, its value's type
and unit, who writes it) and ``EventEntry``\\ s (a kind, its data fields, who emits it).
``Registry.check(spec)`` compares a spec's board keys, event kinds, required patterns and
weights with it and returns ``Finding``\\ s: a name nothing writes, with the closest known
names ("did you mean"), and weights whose pattern nothing the spec selects can match. It
checks the spec's declared writes (``[writes]``) too: a key it deletes that nothing writes,
and a key it writes or an event kind it emits that no one else does but that is close to a
known one (a new name is the cabin's own; a near miss is likely a typo). The runtime's own
event kinds are ``RUNTIME_EVENTS``; an application adds its own entries (the warehouse's
are ``cabins.warehouse.registry``), and what other specs declare they write counts as known
(``with_declared``).

Findings are warnings by default (a user cabin may write a key the registry does not know);
``strict`` callers turn them into errors.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from runtime.patterns import is_glob, literal_prefix, overlaps
from runtime.spec import ContextSpec

__all__ = ["RUNTIME_EVENTS", "BoardEntry", "EventEntry", "Finding", "Registry"]


@dataclass(frozen=True, slots=True)
class BoardEntry:
    """A board key (or a ``prefix:*`` family of keys) someone writes."""

    key: str
    type: str
    unit: str
    writer: str
    description: str


@dataclass(frozen=True, slots=True)
class EventEntry:
    """An event kind someone emits, and its data fields."""

    kind: str
    fields: tuple[str, ...]
    writer: str
    description: str


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a spec names that nothing writes or that selects nothing."""

    spec: str
    where: str
    name: str
    message: str
    suggestions: tuple[str, ...] = ()

    def text(self) -> str:
        hint = f" (did you mean {' or '.join(map(repr, self.suggestions))}?)"
        return f"{self.where} {self.name!r}: {self.message}" + (hint if self.suggestions else "")


RUNTIME_EVENTS: tuple[EventEntry, ...] = (
    EventEntry(
        "cabin_failed", ("cabin", "error_type", "message", "tick"), "runtime", "a cabin raised"
    ),
    EventEntry(
        "tick_overrun", ("tick", "compute_s", "skipped"), "runtime", "a tick ran over its period"
    ),
    EventEntry(
        "capacity_alarm",
        ("tick", "held", "pinned", "capacity", "phase"),
        "runtime",
        "pinned items alone overflow working memory (phase start or end)",
    ),
    EventEntry(
        "capacity_pressure",
        ("spec", "lost", "count", "selected", "capacity", "held", "pinned", "advice"),
        "runtime",
        "a spec lost items it selected to capacity (once per episode)",
    ),
    EventEntry(
        "decision_late",
        ("cabin", "decided_tick", "tick", "age_ticks", "age_s", "limit", "policy", "phase"),
        "runtime",
        "an asynchronous decision is overdue, or came back late and was applied or dropped",
    ),
    EventEntry(
        "write_refused",
        ("cabin", "op", "key", "kind", "reason", "detail", "tick"),
        "runtime",
        "a cabin's write, delete (key) or event (kind) outside its spec's [writes] was refused "
        "(reason not_declared or protected)",
    ),
    EventEntry(
        "remembered",
        ("content", "stored", "why"),
        "runtime",
        "a cabin's memory write reached long-term memory (or why not)",
    ),
)


DECLARED = "declared in its [writes]"
"""The description of the entries ``Registry.with_declared`` adds."""


@dataclass(frozen=True)
class Registry:
    """What is written: board entries and event entries (see the module docstring)."""

    board: tuple[BoardEntry, ...] = ()
    events: tuple[EventEntry, ...] = RUNTIME_EVENTS
    map_kinds: tuple[str, ...] = ()
    """The kinds of the map's features (``map:<id>`` items carry them)."""
    map_prefixes: tuple[str, ...] = ()
    """The ``map:<prefix>:`` forms of feature ids, for weight patterns."""
    _keys: tuple[str, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "_keys", tuple(e.key for e in self.board))

    def extended(
        self, *, board: Iterable[BoardEntry] = (), events: Iterable[EventEntry] = ()
    ) -> Registry:
        """This registry with more entries."""
        return Registry(
            board=(*self.board, *board),
            events=(*self.events, *events),
            map_kinds=self.map_kinds,
            map_prefixes=self.map_prefixes,
        )

    def with_declared(self, specs: Iterable[ContextSpec]) -> Registry:
        """This registry with what ``specs`` declare they write (``[writes]``): their board
        patterns (but a bare glob such as ``*``, which names nothing) and event kinds count
        as written, by the cabin each spec names."""
        board: list[BoardEntry] = []
        events: list[EventEntry] = []
        for spec in specs:
            if spec.writes is None:
                continue
            board += [
                BoardEntry(p, "-", "-", spec.name, DECLARED)
                for p in spec.writes.board
                if literal_prefix(p)
            ]
            events += [
                EventEntry(k, (), spec.name, DECLARED) for k in spec.writes.events if not is_glob(k)
            ]
        return self.extended(board=board, events=events) if board or events else self

    def knows_key(self, pattern: str) -> bool:
        """Whether some written key matches ``pattern`` (or, for a glob, some family
        overlaps it)."""
        return any(_overlap(pattern, known) for known in self._keys)

    def knows_kind(self, kind: str) -> bool:
        return any(e.kind == kind for e in self.events)

    def check(self, spec: ContextSpec) -> list[Finding]:
        """What ``spec`` names that nothing writes, and weights that select nothing."""
        found: list[Finding] = []
        for pattern in spec.board_keys:
            if not self.knows_key(pattern):
                found.append(self._unknown(spec, "board_keys", pattern, self._keys))
        kinds = [e.kind for e in self.events]
        for kind in spec.event_kinds:
            if not self.knows_kind(kind):
                found.append(self._unknown(spec, "event_kinds", kind, kinds))
        for kind in spec.map_kinds:
            if self.map_kinds and kind not in self.map_kinds:
                found.append(self._unknown(spec, "map_kinds", kind, self.map_kinds))
        selectable = self._selectable(spec)
        for pattern in spec.required:
            if not any(_overlap(pattern, s) for s in selectable):
                found.append(
                    self._unknown(spec, "required", pattern, selectable, "nothing selected")
                )
        for pattern in spec.weights:
            if not any(_overlap(pattern, s) for s in selectable):
                found.append(
                    self._unknown(spec, "weights", pattern, selectable, "weighs nothing selected")
                )
        return found + self._check_writes(spec)

    def _check_writes(self, spec: ContextSpec) -> list[Finding]:
        """A delete of a key nothing writes, and a written key or emitted kind that is a
        near miss of a known one."""
        writes = spec.writes
        if writes is None:
            return []
        found: list[Finding] = []
        # what is known but from this spec's own declaration
        keys = [e.key for e in self.board if (e.writer, e.description) != (spec.name, DECLARED)]
        kinds = [e.kind for e in self.events if (e.writer, e.description) != (spec.name, DECLARED)]
        for pattern in writes.board:
            if not any(_overlap(pattern, k) for k in keys):
                near = self._unknown(spec, "writes.board", pattern, keys, "no one else writes it")
                if near.suggestions:
                    found.append(near)
        for pattern in writes.delete:
            if not any(_overlap(pattern, k) for k in (*keys, *writes.board)):
                found.append(self._unknown(spec, "writes.delete", pattern, keys))
        for kind in writes.events:
            if not is_glob(kind) and kind not in kinds:
                near = self._unknown(spec, "writes.events", kind, kinds, "no one else emits it")
                if near.suggestions:
                    found.append(near)
        return found

    def _selectable(self, spec: ContextSpec) -> list[str]:
        """Patterns of every item ``spec`` can select: its board keys, ``map:*`` forms of
        its map window and corridor, ``event:<kind>:*`` of its event window, ``note:*``."""
        out = list(spec.board_keys)
        if (spec.map_center and spec.map_radius > 0) or spec.corridor_width > 0:
            out += ["map:*"] + [f"map:{p}:*" for p in self.map_prefixes]
        if spec.event_window > 0:
            kinds = spec.event_kinds or tuple(e.kind for e in self.events)
            out += ["event:*"] + [f"event:{k}:*" for k in kinds]
        return [*out, "note:*"]

    @staticmethod
    def _unknown(
        spec: ContextSpec,
        where: str,
        name: str,
        known: Sequence[str],
        message: str = "nothing writes it",
    ) -> Finding:
        close = tuple(difflib.get_close_matches(name, list(dict.fromkeys(known)), n=2, cutoff=0.6))
        return Finding(spec.name, where, name, message, close)


def _overlap(a: str, b: str) -> bool:
    """Whether some key can match both patterns (exact keys or globs)."""
    if is_glob(a) and is_glob(b):
        pa, pb = literal_prefix(a), literal_prefix(b)
        return pa.startswith(pb) or pb.startswith(pa)
    return overlaps(a, b)
