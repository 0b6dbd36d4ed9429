"""What each cabin did, read back from a recording: the counts of a run summary's cabin
rows (``runtime.activity``), over the ticks the recording holds.

The ``/decisions`` channel holds every outbox the loop was handed (a dropped asynchronous
decision too, marked so, and a failed cabin's ``failed``); the run's specs (the ``specs``
metadata) say what each cabin may change, so the same ``WriteGuard`` the loop used tells
which writes, deletes and events of an applied outbox went through and which were refused:
every refusal, where the log holds one ``write_refused`` event per episode. Deletes count
those that removed a key, the cabin's deletes on the ``/board`` channel. What each cabin
missed comes from its views (``collect``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from runtime.activity import CabinActivity
from runtime.recording.format import BOARD, DECISIONS
from runtime.recording.reader import Recording
from runtime.spec import ContextSpec, Writes
from runtime.writes import WriteGuard
from sim.report.html import ReportError

__all__ = ["activity", "declared_writes"]

_NAMES = tuple(CabinActivity().as_dict())


def declared_writes(recording: Recording) -> dict[str, Writes | None]:
    """Each recorded spec's ``[writes]`` (None: it declares none), from the run metadata."""
    text = recording.metadata.get("specs")
    if text is None:
        return {}
    try:
        specs = json.loads(text)
        if not isinstance(specs, dict):
            raise ValueError("not a table of specs")
        return {str(n): ContextSpec.model_validate(s).writes for n, s in specs.items()}
    except (ValueError, ValidationError) as exc:
        raise ReportError(f"{recording.path}: bad specs in the run metadata ({exc})") from None


def activity(recording: Recording, cabins: Iterable[str]) -> dict[str, dict[str, int]]:
    """Per cabin (``cabins`` first, in order, then any other the decisions name), the counts
    of ``CabinActivity`` over the recorded ticks."""
    guard = WriteGuard(declared_writes(recording))
    counts: dict[str, dict[str, int]] = {c: dict.fromkeys(_NAMES, 0) for c in cabins}

    def of(cabin: str) -> dict[str, int]:
        return counts.setdefault(cabin, dict.fromkeys(_NAMES, 0))

    for message in recording.messages(DECISIONS):
        for cabin, decision in message["cabins"].items():
            _count(of(cabin), guard, cabin, decision)
    for record in recording.messages(BOARD):
        if record["deleted"] and record["source"] in counts:
            counts[record["source"]]["deletes"] += 1
    return counts


def _count(
    mine: dict[str, int], guard: WriteGuard, cabin: str, decision: Mapping[str, Any]
) -> None:
    """Add one recorded outbox of ``cabin`` to its counts, as the loop applied it."""
    if decision["failed"] is not None:
        mine["failures"] += 1
        return
    if decision.get("status") == "dropped":
        return
    mine["commands"] += len(decision["commands"])
    mine["reactions"] += len(decision["reactions"])
    for w in decision["writes"]:
        refused = guard.refusal(cabin, "delete" if w["delete"] else "write", w["key"])
        if refused is not None:
            mine["writes_refused"] += 1
        elif not w["delete"]:
            mine["writes"] += 1
    for e in decision["events"]:
        if guard.refusal(cabin, "emit", e["kind"]) is not None:
            mine["writes_refused"] += 1
        else:
            mine["events"] += 1
