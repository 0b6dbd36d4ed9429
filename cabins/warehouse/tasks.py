"""The task protocol: how a cabin refuses or defers a delivery task, with a reason.

A task is a delivery goal, ``goal:deliver:<task>``. A cabin that will not have it done
writes ``task:refused:<task>`` = ``{"task", "reason", "cabin"}`` (``refuse_task``); one that
wants it later writes ``task:deferred:<task>`` = ``{"task", "reason", "cabin", "until"}``
(``defer_task``; ``until`` in simulated seconds, or None: for as long as the key stays).
Deleting the key withdraws it. The reason must be a non-empty string; a value without one
is no request. ``cabin`` names the cabin for readers of the value (a view carries no
writer); the board reading's source, which the runtime sets, is the authority (a run's
summary takes it from there). The spec declares the write like any other
(``[writes] board = ["task:refused:*"]``).

The planner honours both (``cabins.planner.recovery``): it does not start a refused task,
and starts a deferred one only once its time has come; the task it works on is set aside
unless the robot already carries its item (then it is delivered: the robot can carry one
item and could serve no other task). It says so once per request, with a ``task_refused``
event ``{"task", "cabin", "reason"}`` or a ``task_deferred`` event with the ``cabin``, and
with ``task_resumed`` when it takes the task up again. A run's summary counts refused tasks
apart from undelivered ones, and its verdict does not fail a run for them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final, Literal

from runtime.cabin import Outbox
from runtime.errors import SettingError

__all__ = [
    "TASK_DEFERRED_PREFIX",
    "TASK_PREFIX",
    "TASK_REFUSED_PREFIX",
    "TaskRequest",
    "defer_task",
    "deferred_key",
    "refuse_task",
    "refused_key",
]

TASK_PREFIX: Final = "task:"
"""Every key of the task protocol starts so."""
TASK_REFUSED_PREFIX: Final = "task:refused:"
"""``task:refused:<task>``: a cabin will not have ``task`` done."""
TASK_DEFERRED_PREFIX: Final = "task:deferred:"
"""``task:deferred:<task>``: a cabin wants ``task`` done later."""

MAX_REASON = 500
"""The longest reason kept (characters); a longer one is cut."""


def refused_key(task: str) -> str:
    return f"{TASK_REFUSED_PREFIX}{task}"


def deferred_key(task: str) -> str:
    return f"{TASK_DEFERRED_PREFIX}{task}"


@dataclass(frozen=True, slots=True)
class TaskRequest:
    """One cabin's refusal or deferral of a task, as read from the board."""

    task: str
    kind: Literal["refused", "deferred"]
    reason: str
    cabin: str
    """Who refused or deferred it, as the value says ("?" when it does not)."""
    until: float | None = None
    """For a deferral: from when the task may be taken (None: while the key stays)."""

    @classmethod
    def read(cls, key: str, value: Any) -> TaskRequest | None:
        """The request ``key`` holds, or None if the key or value is not one (no reason, a
        task that is not the key's, an ``until`` that is not a finite number); a value that
        names no cabin is from ``"?"``."""
        if key.startswith(TASK_REFUSED_PREFIX):
            kind: Literal["refused", "deferred"] = "refused"
            task = key[len(TASK_REFUSED_PREFIX) :]
        elif key.startswith(TASK_DEFERRED_PREFIX):
            kind = "deferred"
            task = key[len(TASK_DEFERRED_PREFIX) :]
        else:
            return None
        get = getattr(value, "get", None)
        if not task or get is None:
            return None
        reason = get("reason")
        if not isinstance(reason, str) or not reason.strip() or get("task", task) != task:
            return None
        cabin = get("cabin")
        cabin = cabin if isinstance(cabin, str) and cabin else "?"
        until = get("until") if kind == "deferred" else None
        if until is not None and (
            isinstance(until, bool)
            or not isinstance(until, int | float)
            or not math.isfinite(until)
        ):
            return None
        return cls(task, kind, reason[:MAX_REASON], cabin, None if until is None else float(until))

    def holds(self, now: float) -> bool:
        """Whether the task may not be taken at ``now`` for this request."""
        return self.kind == "refused" or self.until is None or now < self.until


def _check(task: str, reason: str) -> None:
    if not isinstance(task, str) or not task or any(c.isspace() or c in "*?[]" for c in task):
        raise SettingError(f"a task id must be a non-empty string without wildcards, got {task!r}")
    if not isinstance(reason, str) or not reason.strip():
        raise SettingError(f"refusing or deferring task {task!r} needs a reason, got {reason!r}")


def refuse_task(out: Outbox, task: str, reason: str) -> None:
    """Refuse ``task`` with ``reason``: write ``task:refused:<task>`` (declare it in the spec's
    ``[writes] board``)."""
    _check(task, reason)
    out.write(refused_key(task), {"task": task, "reason": reason, "cabin": out.cabin})


def defer_task(out: Outbox, task: str, reason: str, *, until: float | None = None) -> None:
    """Defer ``task`` with ``reason`` until the simulated time ``until`` (None: until the
    key is deleted): write ``task:deferred:<task>`` (declare it in ``[writes] board``)."""
    _check(task, reason)
    if until is not None and (
        isinstance(until, bool) or not isinstance(until, int | float) or not math.isfinite(until)
    ):
        raise SettingError(f"deferring task {task!r}: until must be a finite time, got {until!r}")
    out.write(
        deferred_key(task),
        {
            "task": task,
            "reason": reason,
            "cabin": out.cabin,
            "until": None if until is None else float(until),
        },
    )
