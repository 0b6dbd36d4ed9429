"""How a run's summary tells a cabin's row (its counts and its missing items), the same way
in the table, the report and the docs.

The summary counts, per cabin and reason, pattern-ticks: each tick at which a spec pattern
matched nothing, once per pattern. ``absent`` is the common, harmless reason (nothing of
that kind exists: no failure record to see because nothing failed), so the text says so
rather than leave a large count looking like trouble.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ABSENT_NOTE", "CABIN_COUNTS", "cabin_text", "counts_of", "missing_text"]

ABSENT_NOTE = "absent: nothing of that kind existed, e.g. no failures"


def missing_text(reasons: Mapping[str, Any]) -> str:
    """``{"absent": 2400, "stale": 3}`` as ``absent 2400, stale 3 pattern-ticks (absent:
    ...)``; ``none`` when empty."""
    if not reasons:
        return "none"
    text = ", ".join(f"{k} {v}" for k, v in reasons.items()) + " pattern-ticks"
    return text + (f" ({ABSENT_NOTE})" if "absent" in reasons else "")


CABIN_COUNTS = (
    ("commands", "commands"),
    ("events", "events"),
    ("reactions", "reactions"),
    ("writes", "writes"),
    ("deletes", "deletes"),
    ("writes_refused", "refused"),
    ("failures", "failures"),
)
"""A cabin row's counts (``Simulation.summary()['cabins']``) and their labels, in order."""


def counts_of(row: Mapping[str, Any]) -> str:
    """One cabin's summary counts as text (``commands 3 · events 1 · ... · failures 0``)."""
    return " · ".join(f"{label} {row.get(key, 0)}" for key, label in CABIN_COUNTS)


def cabin_text(row: Mapping[str, Any]) -> str:
    """One cabin's summary row as text: its counts, then its missing items
    (``commands 3 · events 1 · ... · missing items: none``)."""
    return f"{counts_of(row)} · missing items: {missing_text(row.get('missing') or {})}"
