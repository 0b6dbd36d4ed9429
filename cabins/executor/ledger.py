"""The step ledger: what the executor did about each step and what came of it.

Per step (``StepKey``) it keeps the attempts (how many, when the last one failed, under
which plan revision the last one was final) and the steps reported done (under which
revision, when, at which attempt); besides, the pick or drop commanded and not yet
answered, the charge in progress, the last action outcome taken and the tasks dropped.
From these it reports ``action_done`` and ``action_failed`` (with ``final: true`` once
the retry policy in force gives no more attempts, or at once for a reason retrying
cannot fix), reports a done step again when the plan still shows it after a while, and
starts a step afresh when a newer plan revision asks for it again. When the plan's task
changes, the records of other tasks go.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from cabins.executor.plan import PlanReading, Step, StepKey
from cabins.executor.retry import RetryPolicy
from cabins.executor.seen import Seen
from cabins.executor.settings import ExecutorSettings
from cabins.warehouse.values import ActionOutcome, read_battery
from runtime.cabin import Outbox

__all__ = ["REANNOUNCE_TICKS", "RETRYABLE_REASONS", "StepLedger"]

REANNOUNCE_TICKS: Final = 40
"""Ticks after which a step reported done, still current in the plan, is reported again
(the event may have been lost, or missed by the planner)."""

RETRYABLE_REASONS: Final = frozenset(
    {"failed", "not_at_dock", "moving", "not_at_charger", "no_outcome"}
)
"""Outcome reasons worth another attempt; any other refusal is final at once."""


@dataclass(slots=True)
class _Attempts:
    """A step's attempts: how many, when the last failed, under which plan revision the
    last one was final (the planner re-plans then; a newer revision starts afresh)."""

    count: int = 0
    failed_tick: int | None = None
    final_revision: int | None = None


@dataclass(frozen=True, slots=True)
class _Done:
    """A step reported done: under which plan revision, when, at which attempt."""

    revision: int
    tick: int
    attempt: int


@dataclass(frozen=True, slots=True)
class _Pending:
    """A pick or drop commanded and not yet answered."""

    key: StepKey
    step: str
    action: str
    task: str | None
    attempt: int
    baseline: int
    tick: int


class StepLedger:
    """The executor's record of steps, attempts and outcomes (see the module docstring)."""

    def __init__(self, settings: ExecutorSettings) -> None:
        self._settings = settings
        self._attempts: dict[StepKey, _Attempts] = {}
        self._done: dict[StepKey, _Done] = {}
        self._pending: _Pending | None = None
        self._charging: StepKey | None = None
        self._last_action_id = -1
        self._dropped: list[str] = []
        self._task: str | None = None
        self._revision = 0

    @property
    def revision(self) -> int:
        """The plan revision last followed."""
        return self._revision

    @property
    def waiting(self) -> bool:
        """Whether a pick or drop commanded is not answered yet."""
        return self._pending is not None

    def follow_plan(self, plan: PlanReading) -> None:
        """Take the plan's revision; a new task drops the records of the others."""
        self._revision = plan.revision
        if plan.task != self._task:
            self._task = plan.task
            keep = plan.task or ""
            self._attempts = {k: a for k, a in self._attempts.items() if k[0] == keep}
            self._done = {k: r for k, r in self._done.items() if k[0] == keep}

    def stop_charging(self) -> None:
        self._charging = None

    # -- outcomes ---------------------------------------------------------------------------

    def poll_outcome(self, seen: Seen, out: Outbox, policy: RetryPolicy) -> None:
        """Take a new action outcome; a pick or drop unanswered for too long has failed."""
        last = seen.outcome
        if last is not None and last.id > self._last_action_id:
            self._last_action_id = last.id
            self._outcome(seen.tick, out, policy, last)
        pending = self._pending
        if pending is not None and seen.tick - pending.tick > self._settings.outcome_timeout_ticks:
            self._resolve(seen.tick, out, policy, pending, ok=False, reason="no_outcome")

    def _outcome(self, tick: int, out: Outbox, policy: RetryPolicy, last: ActionOutcome) -> None:
        action, ok, reason = last.action, last.ok, last.reason
        pending = self._pending
        if (
            pending is not None
            and action == pending.action
            and last.id > pending.baseline
            and last.task == pending.task
        ):
            self._resolve(tick, out, policy, pending, ok=ok, reason=reason)
        elif action == "charge" and self._charging is not None and not ok:
            key = self._charging
            self._charging = None
            self.fail(tick, out, policy, key, reason, count=0)

    def _resolve(
        self,
        tick: int,
        out: Outbox,
        policy: RetryPolicy,
        pending: _Pending,
        *,
        ok: bool,
        reason: str,
    ) -> None:
        self._pending = None
        if ok or (pending.action == "pick" and reason == "already_carrying"):
            if pending.action == "drop" and pending.task is not None:
                self._remember_drop(pending.task)
            self.succeed(tick, out, pending.key, pending.attempt)
            return
        self.fail(tick, out, policy, pending.key, reason, count=pending.attempt)

    def succeed(self, tick: int, out: Outbox, key: StepKey, attempt: int) -> None:
        """Report the step done (``action_done``) at ``attempt``."""
        task, step, action = key
        out.emit(
            "action_done",
            {"action": action, "task": task or None, "step": step, "attempt": attempt},
        )
        self._done[key] = _Done(self._revision, tick, attempt)
        self._attempts.pop(key, None)

    def fail(
        self, tick: int, out: Outbox, policy: RetryPolicy, key: StepKey, reason: str, *, count: int
    ) -> None:
        """Report an attempt at the step failed (``action_failed``), final when ``reason``
        is not worth another or ``policy`` gives no more; ``count`` is the attempts made
        when the step has no record yet."""
        record = self._attempts.setdefault(key, _Attempts(count=count))
        task, step, action = key
        final = reason not in RETRYABLE_REASONS or policy.exhausted(record.count)
        out.emit(
            "action_failed",
            {
                "action": action,
                "task": task or None,
                "step": step,
                "attempt": record.count,
                "reason": reason,
                "final": final,
            },
        )
        record.failed_tick = tick
        if final:
            record.final_revision = self._revision

    def _remember_drop(self, task: str) -> None:
        if task not in self._dropped:
            self._dropped.append(task)
            del self._dropped[:-32]

    # -- steps ------------------------------------------------------------------------------

    def reported_done(self, tick: int, out: Outbox, step: Step, revision: int) -> bool:
        """Whether ``step`` was reported done under plan ``revision`` or an older one (it is
        reported again once ``REANNOUNCE_TICKS`` have passed); a newer revision asks for
        it again and starts it afresh."""
        done = self._done.get(step.key)
        if done is None:
            return False
        if revision <= done.revision:
            if tick - done.tick >= REANNOUNCE_TICKS:
                self.succeed(tick, out, step.key, done.attempt)  # not heard: say again
            return True
        del self._done[step.key]  # a newer plan wants it again
        return False

    def spent(self, key: StepKey) -> bool:
        """Whether the step's attempts ran out under this plan revision (the planner
        re-plans); ones spent under an older revision start afresh."""
        record = self._attempts.get(key)
        if record is not None and record.final_revision is not None:
            if self._revision <= record.final_revision:
                return True
            self._attempts[key] = _Attempts()
        return False

    def finish_if_done(self, seen: Seen, out: Outbox, step: Step) -> bool:
        """Report the step done, and say so, when what it would bring about holds already
        (the cargo picked, the cargo dropped, the battery charged)."""
        if not self._already_done(seen, step):
            return False
        self._charging = None
        record = self._attempts.get(step.key)
        self.succeed(
            seen.tick, out, step.key, record.count if record is not None and record.count else 1
        )
        return True

    def backing_off(self, key: StepKey, tick: int, policy: RetryPolicy) -> bool:
        """Whether the step failed too recently to try again under ``policy`` (at least a
        tick, so that the policy has seen the failure)."""
        record = self._attempts.get(key)
        return (
            record is not None
            and record.failed_tick is not None
            and tick < record.failed_tick + max(1, policy.backoff_ticks)
        )

    def command(self, tick: int, out: Outbox, step: Step) -> None:
        """Command the step's action: ``charge`` every tick (one attempt per charge), a
        pick or drop once, then wait for its outcome."""
        key = step.key
        record = self._attempts.get(key)
        if record is None:
            record = self._attempts[key] = _Attempts()
        if step.action == "charge":
            if self._charging != key:
                self._charging = key
                record.count += 1
            out.command("charge", charger=step.target)
            return
        record.count += 1
        out.command(step.action, task=step.task)
        self._pending = _Pending(
            key, step.id, step.action, step.task, record.count, self._last_action_id, tick
        )

    def _already_done(self, seen: Seen, step: Step) -> bool:
        if step.action == "pick":
            return step.task is not None and seen.cargo == step.task
        if step.action == "drop":
            return step.task is not None and step.task in self._dropped
        battery = read_battery(seen.battery)
        until = self._settings.charge_until if step.until is None else step.until
        return battery is not None and battery >= until
