"""The executor cabin: carries out the planner's current step on the robot.

Each tick it reads the ``plan`` and ``route`` the planner wrote and does the current
step:

- ``go_to``: follows ``route`` with pure pursuit, within the robot's limits; it slows
  for the end of the route, for speed zones (``constraint:speed:*``, looked for a
  stopping distance ahead along the route), for the final approach to a dock (the
  retry policy's ``approach_speed_factor``) and for obstacles (people, forklifts) on
  the route ahead, before which it stops and waits. Within the arrival tolerance of
  the target it stops and reports ``action_done``.
- ``pick`` / ``drop``: commands the action once, only when the acceptance predicate
  holds (near the dock and nearly stopped; otherwise it creeps closer or brakes
  first), then waits for an ``action:last`` with a newer id to learn the outcome. It
  reports ``action_done`` or ``action_failed`` and retries under the ``RetryPolicy``
  in force (``cabins.executor.retry``), with ``final: true`` once the attempts are spent.
- ``charge``: commands ``charge`` every tick while stopped at the charger until the
  battery reaches ``charge_until``.

It sends exactly one ``drive`` command every tick (``drive(v=0, w=0)`` to hold). When
it cannot see where it is, how fast it goes, its plan or its route, it holds; when the
speed-limit constraints are hidden from it, it caps its speed everywhere; when its
failure records are hidden, its retries turn conservative. Each of these is reported
as a reaction once per episode (an episode ends after ``EPISODE_QUIET_TICKS`` ticks
without the item missing). A spec's ``[on_missing]`` may pick ``stop:hold`` instead
of slowing down or of conservative retries (``REACTIONS`` lists what it can do for
each item); it refuses one it cannot carry out. The board key ``retry:mode`` shows the
policy in force.

The cabin is a facade over its parts, each holding one kind of state: ``ViewReader``
(``seen.py``: the view read once a tick, into a ``Seen`` the parts take), ``RetryMode``
(``retry.py``: the retry policy in force and ``retry:mode``), ``MissingItems``
(``missing.py``: the reactions in force and their episodes) and ``Approach``
(``approach.py``: how the robot gets to the step's target and acts there), over
``StepLedger`` (``ledger.py``: attempts, outcomes, steps done), ``Course`` (``course.py``:
the route followed and the progress along it) and ``Pursuit`` (``pursuit.py``, with
``zones.py`` and ``obstacles.py``: the command that follows a track). Its settings are
an ``ExecutorSettings`` (``settings.py``; ``settings``, read-only): each part that is
tuned takes that object, first, and reads its values from it.
"""

from __future__ import annotations

from collections.abc import Mapping

from cabins.executor.approach import Approach
from cabins.executor.ledger import StepLedger
from cabins.executor.missing import MissingItems
from cabins.executor.pursuit import HOLD
from cabins.executor.retry import RetryChooser, RetryMode
from cabins.executor.seen import ViewReader
from cabins.executor.settings import ExecutorSettings
from cabins.executor.zones import SpeedZones
from runtime.cabin import Outbox
from runtime.pack import CabinView
from runtime.spec import ContextSpec

__all__ = ["Executor"]


class Executor:
    """The executor cabin (see the module docstring)."""

    Settings = ExecutorSettings
    """What ``[params]`` in its spec may set (``runtime.settings.settings_from_spec``)."""

    def __init__(
        self,
        spec: ContextSpec,
        settings: ExecutorSettings | None = None,
        *,
        chooser: RetryChooser | None = None,
    ) -> None:
        settings = ExecutorSettings() if settings is None else settings
        if not isinstance(settings, ExecutorSettings):
            raise TypeError(f"settings must be ExecutorSettings, got {type(settings).__name__}")
        self._missing = MissingItems(spec)
        self.spec = spec
        self._settings = settings
        self._retry = RetryMode(RetryChooser() if chooser is None else chooser)
        self._reader = ViewReader(self._retry.chooser.pattern)
        zones = SpeedZones(settings, slow_when_blind=self._missing.slow_when_blind)
        self._approach = Approach(settings, StepLedger(settings), zones)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def settings(self) -> ExecutorSettings:
        """The executor's tuning values (its parts read them from this one object)."""
        return self._settings

    @property
    def reactions(self) -> Mapping[str, str]:
        """Required pattern -> the reaction in force: the spec's choice, else the default."""
        return self._missing.reactions

    @property
    def chooser(self) -> RetryChooser:
        """What chooses the retry policy each tick."""
        return self._retry.chooser

    @property
    def mode(self) -> str | None:
        """The name of the retry policy in force at the last step (None before the first)."""
        return self._retry.mode

    # -- the tick -------------------------------------------------------------------------

    def step(self, view: CabinView, out: Outbox) -> None:
        seen = self._reader.read(view)
        policy = self._retry.policy(seen.failures, seen.failures_missing, out)
        self._missing.report(seen.missing, seen.tick, seen.time, out)
        v, w = self._approach.drive(seen, out, policy)
        if self._missing.hold(seen.missing):
            v, w = HOLD
        out.command("drive", v=v, w=w)
