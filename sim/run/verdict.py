"""A run's verdict: one line that says whether the run was safe and did its work, and if not,
why, with the numbers behind each reason.

It is judged here and nowhere else, from the run's summary (``Simulation.summary()``, which
carries it as ``verdict``): ``python -m sim run`` prints it as its table's last line, puts it
in ``--json`` and takes its exit status from it, a campaign fails the runs whose verdict
fails, and the report and the doctor show it.

The rule:

- **What went wrong fails the run, however it ended**: a collision, a safety violation (a
  forbidden-zone entry), a stalled episode (the planner's watchdog saw no progress on its
  goal for its whole time: a liveness failure even when the task was done in the end), a
  task the planner abandoned, and the battery running flat (the robot is stranded).
- **Reachable tasks left undelivered fail a run that reached the scenario's end** (its
  duration), each named with why it was left when the summary says (``tasks_left``,
  ``sim.run.left``: "t3: never started: the run's time ran out while t2 was in progress").
  Tasks the scenario refused at load (a dock the robot cannot reach:
  ``tasks_undeliverable``) are not expected of it.
- **Tasks a cabin refused with a reason** (the task protocol, ``cabins.warehouse.tasks``:
  ``tasks_refused``, apart from ``tasks_undelivered``) do not fail a run: the verdict says
  how many, by whom and why ("2 tasks refused by cabins (t3 by triage: low battery)").
- **A run cut short** (``--ticks`` or ``--duration`` below the scenario's duration, or a
  signal: ``stopped_by``) with tasks left is not held to what it had no time to do, and does
  not pass either: its status is ``cut_short`` ("cut short: 3 of 8 delivered"), unless
  something that went wrong fails it.
- Otherwise it passed: "safe and delivered".

A summary from before these fields (an older recording's) is judged on what it holds: a
missing count is 0, undelivered tasks are counted without their ids, and a run whose length
is not known is taken to have reached its end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

Status = Literal["passed", "cut_short", "failed"]
"""``passed``: safe and delivered; ``cut_short``: stopped before the scenario's end with tasks
left and nothing failed; ``failed``: a reason below fails it."""

ReasonKind = Literal[
    "collision",
    "safety_violation",
    "undelivered",
    "stalled",
    "abandoned",
    "battery_flat",
    "refused",
    "cut_short",
]

SHOWN = 8
"""Task ids (or collisions, stalls) a reason's text names before it says how many more."""


@dataclass(frozen=True, slots=True)
class Reason:
    """One reason of a verdict: what it is, how many, a short text, the numbers behind it, and
    whether it fails the run (``cut_short`` does not)."""

    kind: ReasonKind
    count: int
    text: str
    fails: bool
    facts: Mapping[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "count": self.count,
            "text": self.text,
            "fails": self.fails,
            **{k: _plain(v) for k, v in self.facts.items()},
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    """A run's verdict: its status and its reasons (failing ones first, in the order of the
    rule above); ``delivered`` of ``reachable`` tasks were delivered."""

    status: Status
    reasons: tuple[Reason, ...]
    delivered: int
    reachable: int
    refused: int = 0
    """Tasks the scenario refused at load (their docks cannot be reached)."""
    refused_by_cabins: int = 0
    """Tasks a cabin refused with a reason (the task protocol): not delivered, not failed."""

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    @property
    def line(self) -> str:
        """The verdict in one line: "safe and delivered: 5 of 5 tasks", "cut short: 3 of 8
        delivered (...)" or "FAILED: " and every reason."""
        if self.status == "passed":
            refused = f" ({self.refused} refused at load: unreachable)" if self.refused else ""
            by_cabins = [r.text for r in self.reasons if r.kind == "refused"]
            return (
                f"safe and delivered: {self.delivered} of {self.reachable} tasks{refused}"
                + "".join(f"; {text}" for text in by_cabins)
            )
        texts = [r.text for r in self.reasons]
        if self.status == "cut_short":
            return "; ".join(texts)
        return "FAILED: " + "; ".join(texts)

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "line": self.line,
            "delivered": self.delivered,
            "reachable": self.reachable,
            "refused": self.refused,
            "refused_by_cabins": self.refused_by_cabins,
            "reasons": [r.as_json() for r in self.reasons],
        }


def judge(summary: Mapping[str, Any]) -> Verdict:
    """The verdict of the run ``summary`` describes (a ``Simulation.summary()``, or one read
    back from a recording or a ``--json`` output)."""
    delivered = _count(summary.get("deliveries_done"))
    refused = len(_list(summary.get("tasks_undeliverable")))
    reachable = max(0, _count(summary.get("tasks_total")) - refused)
    by_cabins = _refused_by_cabins(summary)
    left = _undelivered(summary, delivered, reachable - len(by_cabins))
    cut = _cut_short(summary) if left else None
    reasons = _incidents(summary)
    ids = [t for t in left if t is not None]
    why = _why_left(summary, ids)
    if left and cut is None:
        reasons.append(
            Reason(
                "undelivered",
                len(left),
                _plural(len(left), "reachable task")
                + " undelivered"
                + _named([f"{t}: {why[t]}" if t in why else t for t in ids]),
                True,
                _facts(tasks=ids, delivered=delivered, reachable=reachable, causes=why),
            )
        )
    reasons += _liveness(summary)
    if by_cabins:
        named = [
            f"{t} by {r.get('cabin', '?')}: {r.get('reason', '?')}" for t, r in by_cabins.items()
        ]
        reasons.append(
            Reason(
                "refused",
                len(by_cabins),
                _plural(len(by_cabins), "task") + " refused by cabins" + _named(named),
                False,
                _facts(tasks=by_cabins),
            )
        )
    if left and cut is not None:
        reasons.append(
            Reason(
                "cut_short",
                len(left),
                f"cut short: {delivered} of {reachable} delivered ({cut})",
                False,
                _facts(
                    tasks=ids,
                    delivered=delivered,
                    reachable=reachable,
                    ticks=_count(summary.get("ticks")),
                    scenario_ticks=summary.get("scenario_ticks"),
                    stopped_by=summary.get("stopped_by"),
                ),
            )
        )
    if any(r.fails for r in reasons):
        status: Status = "failed"
    elif left:
        status = "cut_short"
    else:
        status = "passed"
    return Verdict(status, tuple(reasons), delivered, reachable, refused, len(by_cabins))


def _incidents(summary: Mapping[str, Any]) -> list[Reason]:
    """Collisions and safety violations."""
    out = []
    collisions = _count(summary.get("collisions"))
    if collisions:
        details = [d for d in _list(summary.get("collision_details")) if isinstance(d, Mapping)]
        hits = [f"{d.get('hit', '?')} at tick {d.get('tick', '?')}" for d in details]
        out.append(
            Reason(
                "collision",
                collisions,
                _plural(collisions, "collision") + _named(hits),
                True,
                _facts(hits=[str(d.get("hit")) for d in details]),
            )
        )
    violations = _count(summary.get("safety_violations"))
    if violations:
        out.append(
            Reason(
                "safety_violation",
                violations,
                _plural(violations, "safety violation") + " (forbidden-zone entries)",
                True,
                _facts(),
            )
        )
    return out


def _liveness(summary: Mapping[str, Any]) -> list[Reason]:
    """Stalled episodes, abandoned tasks and a flat battery."""
    out = []
    stalled = _count(summary.get("stalled_episodes"))
    if stalled:
        stalls = [s for s in _list(summary.get("stalls")) if isinstance(s, Mapping)]
        causes: dict[str, int] = {}
        for s in stalls:
            cause = str(s.get("cause", "?"))
            causes[cause] = causes.get(cause, 0) + 1
        named = [f"{s.get('task', '?')}: {s.get('cause', '?')}" for s in stalls]
        out.append(
            Reason(
                "stalled",
                stalled,
                _plural(stalled, "stalled episode") + _named(named),
                True,
                _facts(causes=causes),
            )
        )
    abandoned = summary.get("tasks_abandoned")
    if isinstance(abandoned, Mapping) and abandoned:
        why = {str(task): str(reason) for task, reason in abandoned.items()}
        out.append(
            Reason(
                "abandoned",
                len(why),
                _plural(len(why), "task")
                + " abandoned"
                + _named([f"{t}: {r}" for t, r in why.items()]),
                True,
                _facts(tasks=why),
            )
        )
    empty_at = summary.get("battery_empty_at")
    if isinstance(empty_at, (int, float)) and not isinstance(empty_at, bool):
        out.append(
            Reason(
                "battery_flat",
                1,
                f"the battery ran flat at {empty_at:.1f} s",
                True,
                _facts(empty_at=float(empty_at)),
            )
        )
    return out


def _refused_by_cabins(summary: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The tasks cabins refused (task -> its cabin and reason); none in an older summary."""
    refused = summary.get("tasks_refused")
    if not isinstance(refused, Mapping):
        return {}
    return {str(t): r if isinstance(r, Mapping) else {} for t, r in refused.items()}


def _undelivered(summary: Mapping[str, Any], delivered: int, reachable: int) -> list[str | None]:
    """The reachable tasks not delivered (None for each one an older summary does not name)."""
    named = summary.get("tasks_undelivered")
    if isinstance(named, Sequence) and not isinstance(named, str):
        return [str(t) for t in named]
    return [None] * max(0, reachable - delivered)


def _why_left(summary: Mapping[str, Any], ids: Sequence[str]) -> dict[str, str]:
    """Why each task of ``ids`` was left (``tasks_left``'s texts, ``sim.run.left``); none for
    a task an older summary does not explain."""
    left = summary.get("tasks_left")
    if not isinstance(left, Mapping):
        return {}
    out = {}
    for task in ids:
        entry = left.get(task)
        text = entry.get("text") if isinstance(entry, Mapping) else None
        if isinstance(text, str) and text:
            out[task] = text
    return out


def _cut_short(summary: Mapping[str, Any]) -> str | None:
    """How the run was cut short (``stopped by SIGINT at tick 20 of 2400``), or None when it
    reached the scenario's end."""
    ticks = _count(summary.get("ticks"))
    scenario_ticks = summary.get("scenario_ticks")
    of = f" of {scenario_ticks}" if isinstance(scenario_ticks, int) else ""
    stopped_by = summary.get("stopped_by")
    if stopped_by is not None:
        return f"stopped by {stopped_by} at tick {ticks}{of}"
    if isinstance(scenario_ticks, int) and ticks < scenario_ticks:
        return f"stopped at tick {ticks}{of}"
    return None


def _named(items: Sequence[str]) -> str:
    """`` (a, b, c)``, at most ``SHOWN`` of them and how many more; empty for none."""
    if not items:
        return ""
    shown = ", ".join(items[:SHOWN])
    more = len(items) - SHOWN
    return f" ({shown}{f', and {more} more' if more > 0 else ''})"


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _facts(**facts: Any) -> Mapping[str, Any]:
    return MappingProxyType(facts)


def _plain(value: Any) -> Any:
    """A fact as JSON: mappings as dicts, sequences as lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
