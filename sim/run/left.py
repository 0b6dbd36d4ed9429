"""Why each reachable task still undelivered at the end of a run was left: its cause.

A run that ends with a reachable task undelivered fails (``sim.run.verdict``), but "2
reachable tasks undelivered (t2, t3)" says nothing of why: the robot may have waited for a
mover at a bay's mouth for the last twenty minutes while the planner's watchdog did not
count the wait (hard:85), a task may never have been started because the one before it
took the rest of the run, or it may have been set aside and never taken again. So the
summary says, for each such task, what became of it (``tasks_left``), and the verdict's
line names it: "t2: in progress at the end, on t2:go_drop (picked at 601.2 s): waiting for
movers since 1812.0 s (41 waits, the last at 2811.0 s)", "t3: never started: the run's time
ran out while t2 was in progress".

``TaskTrail`` follows the planner's events (a log listener, beside the harness's tally):
when each task was started, set aside (deferred, abandoned) and taken again, when a step
of it was last done (``action_done``), and what kept it from progress since: waits for
movers (``wait_for_obstacles``; a ``let_pass`` is the same wait going on), give-ways
(``give_way``) and ``stalled`` alarms. At the end, ``left`` turns that, the world's
record of each task (released, picked) and the planner's ``plan`` value on the board (the
task and step in hand) into one ``LeftTask`` per undelivered task. It reads events only,
never a cabin: any planner that keeps the task protocol's events is explained the same
way, and nothing it writes changes the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from runtime import Event
from runtime.snapshot import JsonValue

__all__ = ["LeftTask", "State", "TaskTrail", "left"]

_SIGNS = {
    "waiting_for_mover": ("waiting for movers", "wait"),
    "stand_off": ("in a stand-off", "give-way"),
}
"""What a sign of a task held up says, and what one of them is called."""

State = Literal["not_released", "never_started", "in_progress", "deferred", "abandoned", "idle"]
"""What became of a task left undelivered: its goal was never posted (released after the
run's end); never started; in progress at the end; set aside (deferred) and not taken
again; abandoned by the planner; started once, then neither in hand nor set aside."""


@dataclass(frozen=True, slots=True)
class LeftTask:
    """One task left undelivered: its ``state``, what kept it (``cause``: ``waiting_for_mover``,
    ``stand_off``, ``stalled:<cause>``, ``charging``, ``moving``, ``time_ran_out`` ...),
    since when (``since``, s, when known), and one line for people (``text``)."""

    task: str
    state: State
    cause: str
    since: float | None
    text: str

    def as_json(self) -> dict[str, Any]:
        return {"state": self.state, "cause": self.cause, "since": self.since, "text": self.text}


class TaskTrail:
    """What the planner's events said about each task (see the module docstring)."""

    _state_types: ClassVar[dict[str, Any]] = {
        "started": dict[str, float],
        "progress": dict[str, float],
        "aside": dict[str, dict[str, JsonValue]],
        "blocked": dict[str, dict[str, JsonValue]],
    }

    def __init__(self) -> None:
        self.started: dict[str, float] = {}  # task -> when it was first started
        self.progress: dict[str, float] = {}  # task -> its last start, or step done
        self.aside: dict[str, dict[str, Any]] = {}  # task -> how it was set aside, and when
        self.blocked: dict[str, dict[str, Any]] = {}  # task -> its waits etc. since progress

    def __call__(self, event: Event) -> None:
        data = event.data if isinstance(event.data, Mapping) else {}
        task = data.get("task")
        if not isinstance(task, str):
            return
        kind, now = event.kind, float(event.stamp)
        if kind in ("task_started", "action_done"):
            self.started.setdefault(task, now)
            self.progress[task] = now
            self.blocked.pop(task, None)
            if kind == "task_started":
                self.aside.pop(task, None)
        elif kind == "task_deferred":
            reason = str(data.get("reason", "unknown"))
            self.aside[task] = {"how": "deferred", "at": now, "reason": reason}
        elif kind == "task_abandoned":
            reason = str(data.get("reason", "unknown"))
            self.aside[task] = {"how": "abandoned", "at": now, "reason": reason}
        elif kind == "task_resumed":
            self.aside.pop(task, None)
        elif kind == "wait_for_obstacles":
            self._block(task, "waiting_for_mover", now)
        elif kind == "let_pass":  # the same wait, held on for a mover: not one more wait
            self._block(task, "waiting_for_mover", now, counted=False)
        elif kind == "give_way":
            self._block(task, "stand_off", now)
        elif kind == "alarm" and data.get("kind") == "stalled":
            self._block(task, f"stalled:{data.get('cause', 'unknown')}", now)

    def _block(self, task: str, what: str, now: float, *, counted: bool = True) -> None:
        """One more sign that ``task`` is held up (``what``) at ``now``; not ``counted``:
        the last one still goes on at ``now``."""
        seen = self.blocked.setdefault(task, {})
        first, count, _ = seen.get(what, (now, 0, now))
        seen[what] = [first, count + int(counted or count == 0), now]


def left(
    trail: TaskTrail,
    undelivered: Sequence[str],
    *,
    in_hand: str | None,
    step: str | None,
    released: Mapping[str, bool],
    picked: Mapping[str, float | None],
) -> dict[str, LeftTask]:
    """Each task of ``undelivered`` with why it was left at the run's end: the planner had
    ``in_hand`` on ``step`` (its ``plan`` value), ``released`` says whose goal was posted
    and ``picked`` when each task's item was picked up (None: never)."""
    out: dict[str, LeftTask] = {}
    for task in undelivered:
        out[task] = _why(trail, task, in_hand, step, released, picked)
    return out


def _why(
    trail: TaskTrail,
    task: str,
    in_hand: str | None,
    step: str | None,
    released: Mapping[str, bool],
    picked: Mapping[str, float | None],
) -> LeftTask:
    behind = (
        f"while {in_hand} was in progress"
        if in_hand is not None and in_hand != task
        else "while the planner had no task in hand"
    )
    if not released.get(task, True):
        return LeftTask(task, "not_released", "time_ran_out", None, "never released")
    aside = trail.aside.get(task)
    if aside is not None and aside.get("how") == "abandoned":
        at = float(aside["at"])
        text = f"abandoned at {at:.1f} s: {aside.get('reason')}"
        return LeftTask(task, "abandoned", str(aside.get("reason")), at, text)
    if task == in_hand:
        return _in_progress(trail, task, step, picked.get(task))
    if aside is not None:
        at = float(aside["at"])
        text = (
            f"deferred at {at:.1f} s ({aside.get('reason')}), not taken again: "
            f"the run's time ran out {behind}"
        )
        return LeftTask(task, "deferred", str(aside.get("reason")), at, text)
    if task not in trail.started:
        text = f"never started: the run's time ran out {behind}"
        return LeftTask(task, "never_started", "time_ran_out", None, text)
    since = trail.progress.get(task)
    text = f"started at {trail.started[task]:.1f} s, not in hand at the end ({behind})"
    return LeftTask(task, "idle", "time_ran_out", since, text)


def _in_progress(trail: TaskTrail, task: str, step: str | None, picked: float | None) -> LeftTask:
    """The task in hand at the end: its step, and what held it up since its last progress
    (each kind of sign: since when, how many, the last; its cause is the latest sign), or
    that it was under way."""
    where = f"on {step}" if step is not None else "with no step running"
    carried = f" (picked at {picked:.1f} s)" if picked is not None else ""
    head = f"in progress at the end, {where}{carried}"
    blocked = trail.blocked.get(task) or {}
    if blocked:
        signs = sorted(blocked, key=lambda k: float(blocked[k][0]))  # by when first seen
        parts = []
        for sign in signs:
            first, count, latest = blocked[sign]
            what, noun = _SIGNS.get(sign, (f"stalled ({sign.split(':', 1)[-1]})", "alarm"))
            parts.append(
                f"{what} since {float(first):.1f} s ({count} {noun}"
                f"{'' if count == 1 else 's'}, the last at {float(latest):.1f} s)"
            )
        main = max(signs, key=lambda k: float(blocked[k][2]))  # the latest sign
        text = f"{head}: " + "; ".join(parts)
        return LeftTask(task, "in_progress", main, float(blocked[signs[0]][0]), text)
    since = trail.progress.get(task)
    cause = "charging" if step is not None and ":charge" in step else "moving"
    text = f"{head}: under way since {since:.1f} s, the run's time ran out" if since else head
    return LeftTask(task, "in_progress", cause, since, text)
