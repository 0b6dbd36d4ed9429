"""Event windows: each spec's recent events, carried on from one freeze to the next.

A spec's event window at ``now`` holds the events of its kinds and tags stamped since
``now - event_window`` (the newest ``event_limit``). Rather than query the log again each
tick, the last answer is carried on: events that aged out leave its front, events logged
since join its back, and the same ``Event`` objects stay. Specs with the same event filter
share one answer. Both paths read their windows here.
"""

from __future__ import annotations

from bisect import bisect_left
from math import inf
from operator import attrgetter
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from runtime.log import Event, EventLog
    from runtime.spec import ContextSpec

Window = tuple[float, int, int, float, tuple["Event", ...]]
"""An event filter's last answer: its time, the log's last seq then, the seq and stamp of
the newest event of its kinds then, and the events."""

_NO_WINDOW: Window = (inf, -1, -1, -inf, ())
"""The entry of an event filter with no last answer: never held (its time is later than
any clock)."""

_EVENT_STAMP = attrgetter("stamp")


class EventWindows:
    """The last answer of each event filter, and the windows it answers."""

    def __init__(self, log: EventLog) -> None:
        self.log = log
        self._windows: dict[tuple[Any, ...], Window] = {}

    _derived = ("_windows",)
    _state_types: ClassVar[dict[str, Any]] = {}  # its parts check theirs; nothing plain
    """A checkpoint holds no answers: a resumed run asks the log again."""

    def recent(self, spec: ContextSpec, now: float) -> tuple[Event, ...]:
        """The spec's event window at ``now``, carried on from the last tick's answer. A new
        query only when that cannot be trusted: the clock went back, or the log dropped one
        of the answer's events."""
        kinds = spec.event_kinds or None
        tags = spec.event_tags or None
        limit = spec.event_limit
        query = (spec.event_window, spec.event_kinds, spec.event_tags, limit)
        since = now - spec.event_window
        log = self.log
        last = log.seq
        at, logged, marker, marker_stamp, found = self._windows.get(query, _NO_WINDOW)
        # the last answer holds while the clock did not go back and the log kept its events
        if at <= now and (not found or found[0].seq > log.dropped):
            newest = (marker, marker_stamp) if last == logged else log.newest(kinds)
            if found and found[0].stamp < since:
                found = found[bisect_left(found, since, key=_EVENT_STAMP) :]
            if marker != newest[0]:  # every event logged since is newer than the answer's
                fresh = [
                    e
                    for e in log.query(
                        max(since, marker_stamp), now, kinds=kinds, tags=tags, limit=limit
                    )
                    if e.seq > marker
                ]
                if fresh:
                    found = (*found, *fresh)
                    if limit is not None and len(found) > limit:
                        found = found[-limit:]
        else:
            newest = log.newest(kinds)
            found = log.query(since, now, kinds=kinds, tags=tags, limit=limit)
        if newest[1] <= now:  # an event stamped after now would enter the window later
            self._windows[query] = (now, last, newest[0], newest[1], found)
        else:
            self._windows.pop(query, None)
        return found
