"""Capacity pressure: what a spec selected and working memory did not keep, reported.

At a freeze a spec is *under pressure* when an item it selected was evicted for capacity
or never admitted: its view's ``evicted`` says which, ``WorkingSet.pressure`` names every
such spec, and the working set's ``capacity_alarm`` is raised. The loop hands each working
set to a ``PressureWatch``, which reports it once per *episode* per spec (an episode ends
when its policy says so, by default once the spec lost nothing for ``DEFAULT_QUIET``
seconds) as a ``capacity_pressure`` event (``pressure_event``) and counts, per spec, the
episodes, the ticks under pressure and the items lost (an item lost at three ticks counts
three times): ``TickStats.pressure``.

The event's advice follows the design's: tighten what the specs select (``map_limit``,
``map_share``, ``map_radius``, ``corridor_limit``, ``event_window``, ``event_limit``) before
growing the capacity. Memory is shared, so the part to tighten first is the one that holds
the most of it (``crowding``), whichever spec it belongs to: a planner's wide map window
starves the executor's battery reading as surely as its own events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime.episodes import EpisodePolicy, Episodes, QuietSeconds
from runtime.freeze import FrozenDict

if TYPE_CHECKING:
    from runtime.pack import WorkingSet
    from runtime.spec import ContextSpec

__all__ = [
    "DEFAULT_QUIET",
    "LOST_SHOWN",
    "NO_PRESSURE",
    "PRESSURE_TAGS",
    "PressureCount",
    "PressureWatch",
    "advice",
    "crowding",
    "part_of",
    "pressure_event",
]

LOST_SHOWN = 16
"""The most lost keys a ``capacity_pressure`` event lists (``count`` says how many)."""

DEFAULT_QUIET = 2.0
"""Seconds without a loss after which a spec's pressure episode ends (``QuietSeconds``):
pressure that comes and goes as the robot moves is one episode, not one per tick."""

PRESSURE_TAGS = ("capacity", "alarm")
"""The tags of a ``capacity_pressure`` event."""


@dataclass(frozen=True, slots=True)
class PressureCount:
    """One spec's capacity pressure over a run: episodes reported, ticks at which it lost
    something, and items lost (summed over those ticks)."""

    episodes: int = 0
    ticks: int = 0
    lost: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"episodes": self.episodes, "ticks": self.ticks, "lost": self.lost}


NO_PRESSURE: FrozenDict[str, PressureCount] = FrozenDict()
"""The pressure counts of a run in which no spec lost anything."""


@dataclass(slots=True)
class _Tally:
    episodes: int = 0
    ticks: int = 0
    lost: int = 0


def part_of(key: str, via: str) -> str:
    """Which part of a spec selected an item: ``map_window``, ``corridor``, ``events``,
    ``notes`` or ``board`` (by the filter that let it in, ``via``)."""
    if via.startswith("map:window"):
        return "map_window"
    if via.startswith("map:corridor"):
        return "corridor"
    if via.startswith("log:") or key.startswith("event:"):
        return "events"
    if key.startswith("note:"):
        return "notes"
    if key.startswith("map:"):
        return "map_window"
    return "board"


_KNOBS = {
    "map_window": "map_limit or map_share, or a smaller map_radius",
    "corridor": "corridor_limit, or a narrower corridor_width",
    "events": "event_limit, event_window",
    "notes": "fewer scratchpad notes",
    "board": "narrower board_keys patterns",
}


_PARTS = ("map_window", "corridor", "events", "notes", "board")
"""The parts of a view, the first to tighten first when two hold as many items (a map
window grows with the floor; board keys are what the cabin reads by name)."""


def crowding(views: Mapping[str, Mapping[str, str]]) -> tuple[str, str, int]:
    """The part of a spec that holds the most of working memory: ``(spec, part, items)``,
    from each spec's kept items (view key → via); on a tie, the earlier in ``_PARTS``."""
    best = ("", "board", 0)
    for name, items in views.items():
        counts: dict[str, int] = {}
        for key, via in items.items():
            part = part_of(key, via)
            counts[part] = counts.get(part, 0) + 1
        for part, held in counts.items():
            if (held, -_PARTS.index(part)) > (best[2], -_PARTS.index(best[1])):
                best = (name, part, held)
    return best


def advice(
    name: str,
    lost: int,
    views: Mapping[str, Mapping[str, str]],
    specs: Mapping[str, ContextSpec],
    capacity: int,
    room: int,
) -> str:
    """What to tighten so that spec ``name``, which lost ``lost`` selected items, keeps
    what it selects: the part of a spec that holds the most of working memory (``views``:
    each spec's kept items, view key → via) first; for a map window, a ``map_limit`` that
    leaves ``room`` items (as many as the specs lost together) free; growing the
    ``capacity`` last."""
    owner, part, held = crowding(views)
    spec = specs.get(owner)
    if spec is None or held == 0:
        return (
            f"{name} lost {lost} selected item(s) to capacity ({capacity}) while the specs "
            "keep nothing: pinned items fill memory; grow the capacity"
        )
    hint = _KNOBS[part]
    if part == "map_window":
        hint = f"map_limit = {max(1, held - room)}; its map_radius is {spec.map_radius:g} m" + (
            f", map_limit {spec.map_limit}" if spec.map_limit is not None else ""
        )
    elif part == "corridor":
        hint = f"corridor_limit = {max(1, held - room)}"
    elif part == "events":
        hint = f"event_limit is {spec.event_limit}, event_window {spec.event_window:g} s"
    whose = "its" if owner == name else f"{owner}'s"
    return (
        f"{name} lost {lost} selected item(s) to capacity ({capacity}); {whose} "
        f"{part.replace('_', ' ')} holds {held} items: tighten it first ({hint}), then "
        "the other windows and limits; grow the capacity last"
    )


def pressure_event(
    tick: int, ws: WorkingSet, name: str, specs: Mapping[str, ContextSpec]
) -> dict[str, Any]:
    """The data of the ``capacity_pressure`` event of spec ``name`` at ``ws``."""
    selection = ws.selections[name]
    lost = list(selection.evicted)
    load = ws.occupancy
    views = {n: {key: item.via for key, item in s.items.items()} for n, s in ws.selections.items()}
    room = len({e.key for e in ws.evictions if e.reason == "capacity"})
    return {
        "spec": name,
        "tick": tick,
        "lost": lost[:LOST_SHOWN],
        "count": len(lost),
        "selected": len(selection.items) + len(lost),
        "capacity": load.capacity,
        "held": load.held,
        "pinned": load.pinned,
        "advice": advice(name, len(lost), views, specs, load.capacity, room),
    }


class PressureWatch:
    """Follows capacity pressure spec by spec across working sets: one report per episode
    (``observe`` returns the specs whose episode opened), and the counts. (A plain class,
    not a dataclass: a checkpoint gives its state back to the loop's own watch.)"""

    def __init__(self, policy: EpisodePolicy | None = None) -> None:
        self.policy: EpisodePolicy = QuietSeconds(DEFAULT_QUIET) if policy is None else policy
        self._episodes: Episodes[str] = Episodes(self.policy)
        self._tallies: dict[str, _Tally] = {}

    def observe(self, tick: int, time: float, ws: WorkingSet) -> list[str]:
        """Take the pressure of ``ws``: the specs under pressure whose episode opens now,
        in selection order."""
        pressure = ws.pressure
        episodes = self._episodes
        opened: list[str] = []
        for name, lost in pressure.items():
            tally = self._tallies.get(name)
            if tally is None:
                tally = self._tallies[name] = _Tally()
            tally.ticks += 1
            tally.lost += len(lost)
            if episodes.hit(name, tick=tick, time=time):
                tally.episodes += 1
                opened.append(name)
        if episodes.open:
            for name in episodes.open:
                if name not in pressure:
                    episodes.miss(name, tick=tick, time=time)
        return opened

    @property
    def active(self) -> bool:
        """Whether an episode is open (a working set without pressure may end it)."""
        return bool(self._episodes.open)

    def counts(self) -> FrozenDict[str, PressureCount]:
        """Per spec that was ever under pressure: its ``PressureCount``."""
        if not self._tallies:
            return NO_PRESSURE
        return FrozenDict(
            {n: PressureCount(t.episodes, t.ticks, t.lost) for n, t in self._tallies.items()}
        )
