"""Capacity pressure: what a spec selected and working memory did not keep, reported.

At a freeze a spec is *under pressure* when an item it selected was evicted for capacity
or never admitted: its view's ``evicted`` says which, ``WorkingSet.pressure`` names every
such spec, and the working set's ``capacity_alarm`` is raised. The loop hands each working
set to a ``PressureWatch``, which reports it once per *episode* per spec (an episode ends
when its policy says so, by default once the spec lost nothing for ``DEFAULT_QUIET``
seconds) as a ``capacity_pressure`` event (``pressure_event``) and counts, per spec, the
episodes, the ticks under pressure and the items lost (an item lost at three ticks counts
three times): ``TickStats.pressure``.

The event's advice follows the design's: tighten what the spec selects (``map_limit``,
``map_share``, ``map_radius``, ``corridor_limit``, ``event_window``, ``event_limit``) before
growing the capacity; the part of the view that holds the most items is named first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runtime.episodes import EpisodePolicy, Episodes, QuietSeconds
from runtime.freeze import FrozenDict

if TYPE_CHECKING:
    from runtime.pack import Selection, WorkingSet
    from runtime.spec import ContextSpec

__all__ = [
    "DEFAULT_QUIET",
    "LOST_SHOWN",
    "NO_PRESSURE",
    "PRESSURE_TAGS",
    "PressureCount",
    "PressureWatch",
    "advice",
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


def _part(via: str, key: str) -> str:
    """Which part of a spec selected an item: ``map_window``, ``corridor``, ``events``,
    ``notes`` or ``board``."""
    if via.startswith("map:window") or (not via and key.startswith("map:")):
        return "map_window"
    if via.startswith("map:corridor"):
        return "corridor"
    if via.startswith("log:") or key.startswith("event:"):
        return "events"
    if key.startswith("note:"):
        return "notes"
    return "board"


_KNOBS = {
    "map_window": "map_limit or map_share, or a smaller map_radius",
    "corridor": "corridor_limit, or a narrower corridor_width",
    "events": "event_limit, event_window",
    "notes": "fewer scratchpad notes",
    "board": "narrower board_keys patterns",
}


def advice(spec: ContextSpec, selection: Selection, capacity: int) -> str:
    """What to tighten in ``spec`` so that it keeps what it selects: the part of its view
    holding the most items first (for its map window, a ``map_limit`` that would leave room
    for what it lost), then growing ``capacity`` last."""
    parts: dict[str, int] = {}
    for key, item in selection.items.items():
        part = _part(item.via, key)
        parts[part] = parts.get(part, 0) + 1
    lost = len(selection.evicted)
    if not parts:
        return (
            f"{spec.name} kept nothing of what it selected; pinned items may fill memory: "
            f"grow the capacity ({capacity})"
        )
    biggest = max(parts, key=lambda p: (parts[p], p))
    held = parts[biggest]
    hint = _KNOBS[biggest]
    if biggest == "map_window":
        now = f"map_radius is {spec.map_radius:g} m" + (
            f", map_limit {spec.map_limit}" if spec.map_limit is not None else ""
        )
        hint = f"map_limit = {max(1, held - lost)}; its {now}"
    elif biggest == "events":
        hint = f"event_limit is {spec.event_limit}, event_window {spec.event_window:g} s"
    return (
        f"{spec.name} lost {lost} selected item(s) to capacity; its "
        f"{biggest.replace('_', ' ')} holds {held} of the {sum(parts.values())} items it "
        f"kept: tighten it first ({hint}), then the other windows; grow the capacity "
        f"({capacity}) last"
    )


def pressure_event(tick: int, ws: WorkingSet, name: str, spec: ContextSpec) -> dict[str, Any]:
    """The data of the ``capacity_pressure`` event of spec ``name`` at ``ws``."""
    selection = ws.selections[name]
    lost = list(selection.evicted)
    load = ws.occupancy
    return {
        "spec": name,
        "tick": tick,
        "lost": lost[:LOST_SHOWN],
        "count": len(lost),
        "selected": len(selection.items) + len(lost),
        "capacity": load.capacity,
        "held": load.held,
        "pinned": load.pinned,
        "advice": advice(spec, selection, load.capacity),
    }


@dataclass(slots=True)
class PressureWatch:
    """Follows capacity pressure spec by spec across working sets: one report per episode
    (``observe`` returns the specs whose episode opened), and the counts."""

    policy: EpisodePolicy = field(default_factory=lambda: QuietSeconds(DEFAULT_QUIET))
    _episodes: Episodes[str] = field(init=False)
    _tallies: dict[str, _Tally] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._episodes = Episodes(self.policy)

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
