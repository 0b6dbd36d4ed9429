"""Declared writes: what each cabin may write, delete and emit, and the guard that holds it
to that.

A spec's ``[writes]`` table (``runtime.spec.Writes``) lists patterns, exact keys or globs
as in ``board_keys``: ``board`` (keys the cabin may write), ``delete`` (keys it may delete)
and ``events`` (event kinds it may emit). What a declared table leaves out is refused. A
spec without the table declares nothing: its cabin may write and delete any key but a
protected one, and emit any event (``UNDECLARED``, so that specs from before ``[writes]``
keep working; ``check-spec`` warns about them).

Protected keys (``PROTECTED``: ``goal:*`` and ``safety:*``, the keys working memory pins)
change only through a cabin whose spec names them explicitly: a pattern that starts with
the protected pattern's literal part (``safety:*``, ``safety:forbidden:*``,
``goal:deliver:t1``) grants them; a broad ``*``, ``s*`` or ``*:forbidden:*`` does not.

``WriteGuard`` holds every cabin's declaration. The tick loop asks it about each write,
delete and event of an outbox before applying it (``refusal``: None, or why not) and counts
every one refused. A cabin that keeps asking for the same refused change would log an event
per tick, so ``RefusalWatch`` reports refusals by *episode* (``runtime.episodes``, policy
``UntilSeen``): the loop logs a ``write_refused`` event (``refused_event``) when a cabin's
outbox is refused a (op, key or kind) that its previous outbox was not; the episode ends
at the first outbox of that cabin applied without that refusal (for a synchronous cabin,
the next tick without it; for an asynchronous one, its next decision without it; a cabin
that failed applied no outbox, which neither continues nor ends an episode).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from runtime.episodes import EpisodePolicy, Episodes, UntilSeen
from runtime.patterns import PatternSet, is_glob, literal_prefix, matches
from runtime.spec import Writes

__all__ = [
    "PROTECTED",
    "REFUSED_KIND",
    "UNDECLARED",
    "Op",
    "Refusal",
    "RefusalWatch",
    "WriteGuard",
    "grants",
    "lint",
    "refused_event",
]

PROTECTED: tuple[str, ...] = ("goal:*", "safety:*")
"""The keys only a cabin that names them explicitly may write or delete."""

UNDECLARED = "undeclared"
"""What a spec without ``[writes]`` declares: any key but the protected ones, any event."""

REFUSED_KIND = "write_refused"
"""The kind of the event that says a write, delete or event was refused."""

Op = Literal["write", "delete", "emit"]
"""What a cabin asked: to write a board key, delete one, or emit an event."""

_CACHE_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why one write, delete or event of a cabin was refused: ``not_declared`` (its spec's
    ``[writes]`` has no pattern for it) or ``protected`` (a ``goal:*`` or ``safety:*`` key
    its spec does not name explicitly)."""

    cabin: str
    op: Op
    name: str
    """The board key, or the event kind."""
    reason: Literal["not_declared", "protected"]
    detail: str


def grants(pattern: str, key: str, protected: Sequence[str] = PROTECTED) -> bool:
    """Whether the declared ``pattern`` lets a cabin change ``key``: it matches it and,
    for a protected key, names the protected family explicitly."""
    if not matches(key, pattern):
        return False
    family = _family(key, protected)
    return family is None or literal_prefix(pattern).startswith(literal_prefix(family))


def _family(key: str, protected: Sequence[str]) -> str | None:
    """The protected pattern ``key`` falls under, or None."""
    return next((p for p in protected if matches(key, p)), None)


class _Declared:
    """One cabin's declaration, compiled: None for a list it leaves undeclared."""

    __slots__ = ("board", "delete", "events", "writes")

    def __init__(self, writes: Writes | None) -> None:
        self.writes = writes
        self.board = None if writes is None else writes.board
        self.delete = None if writes is None else writes.delete
        self.events = None if writes is None else PatternSet(writes.events)


class WriteGuard:
    """Every cabin's declared writes (``cabin name -> Writes | None``); ``refusal`` says
    whether a write, delete or event may go through. A cabin it does not know is held to
    nothing declared (the undeclared default)."""

    _derived = ("*",)  # made from the specs, a setting: a checkpoint holds none of it

    def __init__(
        self, declared: Mapping[str, Writes | None], *, protected: Sequence[str] = PROTECTED
    ) -> None:
        self.protected = tuple(protected)
        self._declared = {name: _Declared(w) for name, w in declared.items()}
        self._undeclared = _Declared(None)
        self._cache: dict[tuple[str, Op, str], Refusal | None] = {}

    def declared(self, cabin: str) -> Writes | None:
        """What ``cabin``'s spec declares (None: nothing)."""
        return self._declared.get(cabin, self._undeclared).writes

    def refusal(self, cabin: str, op: Op, name: str) -> Refusal | None:
        """None if ``cabin`` may ``op`` the key (or event kind) ``name``, else why not."""
        cached = self._cache.get((cabin, op, name), False)
        if cached is not False:
            return cached  # type: ignore[return-value]
        found = self._judge(cabin, op, name)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[(cabin, op, name)] = found
        return found

    def _judge(self, cabin: str, op: Op, name: str) -> Refusal | None:
        mine = self._declared.get(cabin, self._undeclared)
        if op == "emit":
            if mine.events is None or mine.events.match(name):
                return None
            return Refusal(
                cabin, op, name, "not_declared", f"its spec's [writes] events has no {name!r}"
            )
        patterns = mine.board if op == "write" else mine.delete
        table = "board" if op == "write" else "delete"
        family = _family(name, self.protected)
        if family is not None:
            if patterns is not None and any(grants(p, name, self.protected) for p in patterns):
                return None
            return Refusal(
                cabin,
                op,
                name,
                "protected",
                f"{family} keys change only through a cabin whose spec names them in "
                f"[writes] {table} (e.g. {literal_prefix(family)}*; a broad '*' does not)",
            )
        if patterns is None or any(matches(name, p) for p in patterns):
            return None
        return Refusal(
            cabin, op, name, "not_declared", f"its spec's [writes] {table} has no pattern for it"
        )


def lint(writes: Writes | None, protected: Sequence[str] = PROTECTED) -> list[str]:
    """Warnings about a declaration that will not do what its author likely means: none at
    all (the undeclared default), and a broad pattern that cannot grant a protected key."""
    if writes is None:
        return [
            "declares no [writes]: its cabin may write and delete any board key but "
            f"{' and '.join(protected)}, and emit any event; declare [writes] board, delete "
            "and events to have the runtime hold it to them"
        ]
    found = []
    for table, patterns in (("board", writes.board), ("delete", writes.delete)):
        for pattern in patterns:
            start = literal_prefix(pattern)
            for family in protected:
                needed = literal_prefix(family)
                if is_glob(pattern) and needed.startswith(start) and needed != start:
                    found.append(
                        f"writes.{table} {pattern!r} does not grant {family} keys: they change "
                        f"only through a pattern that names them (e.g. {needed}*)"
                    )
    return found


def refused_event(refusal: Refusal, tick: int) -> dict[str, Any]:
    """The data of the ``write_refused`` event for ``refusal`` at ``tick``: the cabin, what
    it asked (``op``), the ``key`` (or the event ``kind``), the reason and its detail."""
    what = "kind" if refusal.op == "emit" else "key"
    return {
        "cabin": refusal.cabin,
        "op": refusal.op,
        what: refusal.name,
        "reason": refusal.reason,
        "detail": refusal.detail,
        "tick": tick,
    }


class RefusalWatch:
    """Follows each cabin's refusals outbox by outbox: one report per episode of a (cabin,
    op, name) refusal (see the module docstring). (A plain class: a checkpoint gives its
    state back to the loop's own watch.)"""

    def __init__(self, policy: EpisodePolicy | None = None) -> None:
        self.policy: EpisodePolicy = UntilSeen() if policy is None else policy
        self._episodes: Episodes[tuple[str, str, str]] = Episodes(self.policy)

    def observe(
        self, cabin: str, refused: Sequence[Refusal], *, tick: int, time: float
    ) -> list[Refusal]:
        """Take the refusals of one applied outbox of ``cabin``: those that open an
        episode, in order (one per (op, name)); the cabin's open episodes this outbox does
        not repeat end as the policy says."""
        episodes = self._episodes
        opened: list[Refusal] = []
        seen: set[tuple[str, str, str]] = set()
        for no in refused:
            key: tuple[str, str, str] = (cabin, no.op, no.name)
            seen.add(key)
            if episodes.hit(key, tick=tick, time=time, reason=no.reason):
                opened.append(no)
        for key in episodes.open:
            if key[0] == cabin and key not in seen:
                episodes.miss(key, tick=tick, time=time)
        return opened

    @property
    def open(self) -> tuple[tuple[str, str, str], ...]:
        """The (cabin, op, name) refusals whose episode is open, in the order they opened."""
        return self._episodes.open
