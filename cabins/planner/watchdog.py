"""The watchdog: the active task gets no further for ``watchdog_s`` seconds.

Progress on a task means something real happened, never that a re-plan did:

- a step was done that the task had not done yet (its action at its target): a go-to
  step re-planned after a failed pick is done again at once, and that is no progress;
- the way left along the route to the current go-to step's target became
  ``progress_step`` metres shorter than it ever was on this task since the last such
  step: a robot that backs off and comes back, or is re-routed there again, gets no
  nearer than before; one that picked up and drives back to the charger it charged at
  before does (measured against its first visit, the whole way back was no progress,
  and a legitimate second charge on a long floor ended in a ``stalled`` alarm, hard:86);
  when the planner learned more of the floor, the least so far grows by as much as the
  way grew where the robot stands (``remeasure``: a way round a row of shelves seen one
  by one grows with each, hard:136);
- a charge done at a charger the task charged at before, the first time since a new step
  was done: the robot sets off afresh from the charger, and the way back to where it
  turned is measured anew (hard:35: 20 m from a drop, the robot turned back 40 m to
  charge; the way to the charger and back was no nearer than where it turned, and a
  ``stalled`` alarm fired as it drove back on a full battery). A second charge with no new
  step done between is a cycle, and no progress (hard:85); but the way back after it is
  not counted either: while the robot gets ``progress_step`` nearer a target other than a
  charger at ``_BACK_SPEED`` or faster, measured afresh from the charger, the clock does
  not run, up to where the way left is shorter than ever (then it is progress again).
  Time stuck on the way back counts, and so does the way to a charger again: that is the
  cycle itself. (hard:10 s1: 3.1 m from its drop, a picker sent the robot out of
  its bay; waiting drained the battery, it went back to charge, and a ``stalled`` alarm
  fired as it drove back, its way no shorter than 3.1 m yet.)

A stretch of ``watchdog_s`` seconds with none of these is a stalled episode: ``watch``
says so once, with its cause, and the clock starts again (the next stretch without
progress is another episode). The cause is what the planner saw most in the episode
(``Situation``): repeated action failures when actions failed twice or more, a
stand-off when one began in it, else the most seen of waiting for a mover, no route,
charging and driving (plain no progress). The clock does not run while the planner
holds (no pose, no safety items, ...: those have alarms of their own), nor while the
battery rises on a charge step (a charge takes minutes), but it is paused then, not set
back: a charge is no progress on the task. (hard:85: a robot on a tight battery waited
at a lane on its way to a bay, went back to the charger, charged, came back and waited
again, for the whole run: each charge counted as progress, the watchdog never fired, and
two tasks were left undelivered with no alarm.)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Final, Literal

from shapely.geometry.base import BaseGeometry

from cabins.planner.seen import Seen
from cabins.planner.settings import PlannerSettings
from cabins.warehouse.routing import Route
from cabins.warehouse.shapes import locate, point
from runtime.agent.plan import Plan
from runtime.position import read_xy

__all__ = ["CAUSES", "Situation", "Stalled", "Watchdog"]

Situation = Literal["stand_off", "waiting_for_mover", "no_route", "charging", "moving"]
"""What the planner does on one tick of a task: in a stand-off with a mover (giving way
or going round it), waiting for movers on its way, with no route to its target,
charging, or driving (or acting) as planned."""

CAUSES: Final = (
    "repeated_action_failure",
    "stand_off",
    "waiting_for_mover",
    "no_route",
    "charging",
    "no_progress",
)
"""The causes a ``stalled`` alarm gives, most specific first."""

_AT_TARGET: Final = 0.05  # m: a route ending this near the step's target leads there
_CHARGED: Final = 0.01  # a rise of the battery (share of full) that is progress
_FAILURES: Final = 2  # failed actions in an episode that make it repeated failure
_BACK_SPEED: Final = 0.1  # m/s: the way back after a charge cycle made this fast is not counted


@dataclass(frozen=True, slots=True)
class Stalled:
    """A stalled episode: ``task`` (on ``step``) got no further for ``seconds``, because
    of ``cause`` (one of ``CAUSES``)."""

    task: str
    step: str | None
    cause: str
    seconds: float


class Watchdog:
    """Watches the progress of the active task (see the module docstring)."""

    def __init__(self, settings: PlannerSettings) -> None:
        self._settings = settings
        self._task: str | None = None
        self._since = 0.0  # when the task last made progress, or the episode began
        self._done: set[str] = set()  # ids of the task's steps seen done
        self._milestones: set[tuple[str, str | None]] = set()  # (action, target) done
        self._recharged = 0  # milestones done when a charge last counted as progress
        self._best: dict[tuple[float, float], float] = {}  # target -> least way left (m)
        self._back: dict[tuple[float, float], float] | None = None  # the same, since a cycle
        self._back_at = 0.0  # when the way back last got progress_step nearer
        self._battery: tuple[str, float, float] | None = None  # charge step, highest, when
        self._last = 0.0  # the time of the last tick watched
        self._situations: Counter[str] = Counter()
        self._failures = 0  # the task's failed actions when the episode began
        self._remeasure = False  # the floor was learned since the way left was last measured
        self._lines: dict[tuple[float, float], BaseGeometry] = {}  # target -> last line measured

    @property
    def task(self) -> str | None:
        """The task watched, or None."""
        return self._task

    def start(self, task: str, seen: Seen, failures: int) -> None:
        """Watch ``task`` from now (it was started or resumed): nothing done yet."""
        self._task = task
        self._done = set()
        self._milestones = set()
        self._recharged = 0
        self._best = {}
        self._lines = {}
        self._back = None
        self._battery = None
        self._episode(seen.time, failures)

    def stop(self) -> None:
        """No task to watch."""
        self._task = None

    def rebase(self) -> None:
        """The robot was re-routed on purpose (the long way round): the way left is
        measured afresh along the new route, not against the way it had before."""
        self._best = {}

    def remeasure(self) -> None:
        """The planner learned more of the floor (a shelf came into view): the next way
        left measured to the target is set beside the way last measured, from where the
        robot is then, and the least so far grows by as much as the way grew there. A way
        round a row of shelves seen one by one grows with each: it is longer than was
        known, not a lack of progress. (hard:136: the robot, gone round a lane a forklift
        was in, followed the next aisle along a row it had seen the first four shelves of;
        each shelf seen took its way round one gap further, from 22 m to 86 m, and a
        ``stalled`` alarm fired after 90 s on a way it drove at the pace of a forklift
        ahead.) Only the growth counts, not where the robot stands: one that backed off
        meanwhile (giving way, with the shelf learned then) gets no nearer than before by
        coming back; and a way that did not grow keeps its least."""
        self._remeasure = True

    def watch(
        self,
        seen: Seen,
        plan: Plan | None,
        *,
        line: BaseGeometry | None,
        route: Route | None,
        situation: Situation | None,
        failures: int,
    ) -> Stalled | None:
        """Follow one tick of the task: ``line`` is the route written (``route``, as a
        line), ``situation`` what the planner does (None while it holds), ``failures``
        how many of the task's actions failed so far. A ``Stalled`` once per episode."""
        task = self._task
        if task is None or plan is None:
            return None
        now = seen.time
        last, self._last = self._last, now
        if situation is None:  # holding: the clock does not run
            self._since = min(now, self._since + max(0.0, now - last))
            self._back_at = now  # (a hold is not counted twice on the way back)
            return None
        progressed = self._steps_done(plan)
        progressed |= self._nearer(seen, plan, line, route)
        if progressed:
            self._back = None
        rose_since = self._charged(seen, plan)
        if rose_since is not None:  # charging: the clock does not run, but it is no progress
            self._since = min(now, self._since + max(0.0, now - max(rose_since, self._since)))
        if progressed:
            self._episode(now, failures)
            return None
        self._situations[situation] += 1
        seconds = now - self._since
        if seconds < self._settings.watchdog_s:
            return None
        current = plan.current
        stalled = Stalled(
            task,
            None if current is None else current.id,
            self._cause(failures),
            round(seconds, 3),
        )
        self._episode(now, failures)
        return stalled

    def _episode(self, now: float, failures: int) -> None:
        self._since = now
        self._last = now
        self._situations = Counter()
        self._failures = failures

    def _steps_done(self, plan: Plan) -> bool:
        """Whether a step was done that the task had not done before."""
        new = False
        for step in plan:
            if step.status != "done" or step.id in self._done:
                continue
            self._done.add(step.id)
            milestone = (step.action, step.target)
            if milestone not in self._milestones:
                self._milestones.add(milestone)
                new = True
            elif step.action == "charge" and self._recharged < len(self._milestones):
                new = True  # the first charge again since a new step was done
            elif step.action == "charge":
                self._back = {}  # a cycle: the way back is measured afresh, not counted
            if new and step.action == "charge":
                self._recharged = len(self._milestones)
        if new:  # it sets off afresh: a target it was near before is measured anew
            self._best = {}
        return new

    def _nearer(
        self, seen: Seen, plan: Plan, line: BaseGeometry | None, route: Route | None
    ) -> bool:
        """Whether the way left to the current go-to step's target, along a route that
        leads there, is ``progress_step`` shorter than ever on this task."""
        current = plan.current
        if current is None or current.action != "go_to" or seen.pose is None:
            return False
        target = read_xy(current.data.get("target_xy"))
        if target is None or not route or line is None:
            return False
        end = route[-1]
        if abs(end[0] - target[0]) > _AT_TARGET or abs(end[1] - target[1]) > _AT_TARGET:
            return False  # a route aside, out of a mover's way: not towards the target
        here = point(*seen.pose)
        left = float(line.length) - locate(line, here)
        best = self._best.get(target)
        last, self._lines[target] = self._lines.get(target), line
        remeasure, self._remeasure = self._remeasure, False
        if best is None:
            self._best[target] = left
            return False
        if remeasure and last is not None:
            grown = left - (float(last.length) - locate(last, here))
            if grown > 0.0:  # the same place, further from the target than it was known
                best = self._best[target] = best + grown
        if left <= best - self._settings.progress_step:
            self._best[target] = left
            return True
        if self._back is not None and current.target not in seen.charger_places():
            self._way_back(seen.time, target, left)  # (the way to a charger is the cycle)
        return False

    def _way_back(self, now: float, target: tuple[float, float], left: float) -> None:
        """After a charge cycle: when the way left to ``target`` got ``progress_step``
        shorter than on the way back so far, soon enough for ``_BACK_SPEED``, the time it
        took is not counted (the clock is set forward by it)."""
        assert self._back is not None
        step = self._settings.progress_step
        back = self._back.get(target)
        if back is not None and left > back - step:
            return
        self._back[target] = left
        if back is not None and now - self._back_at <= step / _BACK_SPEED:
            self._since = min(now, self._since + (now - self._back_at))
        self._back_at = now

    def _charged(self, seen: Seen, plan: Plan) -> float | None:
        """Since when the battery rose on the current charge step, when it rose by
        ``_CHARGED`` now (None: it did not)."""
        current = plan.current
        if current is None or current.action != "charge" or seen.battery is None:
            self._battery = None
            return None
        known = self._battery
        if known is None or known[0] != current.id:
            self._battery = (current.id, seen.battery, seen.time)
            return None
        if seen.battery >= known[1] + _CHARGED:
            self._battery = (current.id, seen.battery, seen.time)
            return known[2]
        return None

    def _cause(self, failures: int) -> str:
        """The cause of the episode ending now (see the module docstring)."""
        if failures - self._failures >= _FAILURES:
            return "repeated_action_failure"
        situations = self._situations
        if situations["stand_off"]:
            return "stand_off"
        named = ("waiting_for_mover", "no_route", "charging", "moving")
        most = max(named, key=lambda s: situations[s])  # the first of equals
        return "no_progress" if most == "moving" or not situations[most] else most
