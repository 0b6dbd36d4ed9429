"""Retry policies: how hard the executor tries a pick or drop again after it fails.

A ``RetryPolicy`` is a small frozen value: how many attempts a step gets, how fast
the robot approaches its dock (a fraction of its normal speed) and how many ticks it
waits between attempts. Two presets ship: ``NORMAL`` and ``CONSERVATIVE`` (fewer
tries, a slower approach, a back-off between tries).

``RetryChooser`` picks the policy from what a cabin can see (the executor's reader
counts the failure records in view and says why they are missing). It turns conservative
when recent ``action_failed`` events are in the view, and also when the failure
records are *missing* from the view for a reason other than ``absent`` (a fault,
an eviction, a stale source): a cabin that cannot see its failures must assume
they happened. ``absent`` means there simply were none, so the policy stays normal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from runtime.cabin import Outbox
from runtime.errors import SettingError

__all__ = [
    "CONSERVATIVE",
    "FAILURE_KIND",
    "FAILURE_PATTERN",
    "MODE_KEY",
    "NORMAL",
    "PolicyChoice",
    "RetryChooser",
    "RetryMode",
    "RetryPolicy",
]

FAILURE_KIND = "action_failed"
"""The event kind of a failed action."""

FAILURE_PATTERN = "event:action_failed*"
"""The required pattern naming the failure records in a view."""

MODE_KEY = "retry:mode"
"""The board key that shows the name of the policy in force."""

Cause = Literal["no_failures", "recent_failures", "records_missing"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a failed action is retried.

    ``max_attempts`` counts the first try; ``approach_speed_factor`` scales the speed
    of the final approach to a dock, in (0, 1]; ``backoff_ticks`` is the wait between
    a failure and the next attempt.
    """

    name: str
    max_attempts: int
    approach_speed_factor: float
    backoff_ticks: int

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise SettingError(f"a retry policy needs a non-empty name, got {self.name!r}")
        if (
            isinstance(self.max_attempts, bool)
            or not isinstance(self.max_attempts, int)
            or self.max_attempts < 1
        ):
            raise SettingError(
                f"retry policy {self.name!r}: max_attempts must be an int >= 1, "
                f"got {self.max_attempts!r}"
            )
        factor = self.approach_speed_factor
        if (
            isinstance(factor, bool)
            or not isinstance(factor, (int, float))
            or not 0.0 < factor <= 1.0
        ):
            raise SettingError(
                f"retry policy {self.name!r}: approach_speed_factor must be in "
                f"(0, 1], got {factor!r}"
            )
        if (
            isinstance(self.backoff_ticks, bool)
            or not isinstance(self.backoff_ticks, int)
            or self.backoff_ticks < 0
        ):
            raise SettingError(
                f"retry policy {self.name!r}: backoff_ticks must be an int >= 0, "
                f"got {self.backoff_ticks!r}"
            )

    def exhausted(self, attempts: int) -> bool:
        """True when ``attempts`` tries leave none under this policy."""
        return attempts >= self.max_attempts


NORMAL = RetryPolicy("normal", max_attempts=3, approach_speed_factor=1.0, backoff_ticks=0)
CONSERVATIVE = RetryPolicy(
    "conservative", max_attempts=2, approach_speed_factor=0.5, backoff_ticks=20
)


@dataclass(frozen=True, slots=True)
class PolicyChoice:
    """The policy in force and why: ``missing_reason`` is set when the records are hidden."""

    policy: RetryPolicy
    cause: Cause
    failures_seen: int = 0
    missing_reason: str | None = None


@dataclass(frozen=True, slots=True)
class RetryChooser:
    """Chooses ``normal`` or ``conservative`` from what the view says of the failure
    records (``pattern``): the executor's reader counts them and says why they are
    missing."""

    normal: RetryPolicy = NORMAL
    conservative: RetryPolicy = CONSERVATIVE
    pattern: str = FAILURE_PATTERN

    def choose(self, failures: int, missing_reason: str | None) -> PolicyChoice:
        """The policy for a tick whose view holds ``failures`` failure records, which are
        missing for ``missing_reason`` (None: not missing)."""
        if failures:
            return PolicyChoice(self.conservative, "recent_failures", failures)
        if missing_reason is not None and missing_reason != "absent":
            return PolicyChoice(self.conservative, "records_missing", 0, missing_reason)
        return PolicyChoice(self.normal, "no_failures")


class RetryMode:
    """The retry policy in force, chosen each tick by ``chooser``, and the board key
    ``retry:mode`` (``MODE_KEY``) that shows it, written when it changes."""

    __slots__ = ("_mode", "chooser")

    def __init__(self, chooser: RetryChooser) -> None:
        self.chooser = chooser
        self._mode: str | None = None

    @property
    def mode(self) -> str | None:
        """The name of the policy in force at the last tick (None before the first)."""
        return self._mode

    def policy(self, failures: int, missing_reason: str | None, out: Outbox) -> RetryPolicy:
        """The policy for this tick (see ``RetryChooser.choose``); ``retry:mode`` is
        written when it is another than the last tick's."""
        policy = self.chooser.choose(failures, missing_reason).policy
        if policy.name != self._mode:
            self._mode = policy.name
            out.write(MODE_KEY, policy.name)
        return policy
