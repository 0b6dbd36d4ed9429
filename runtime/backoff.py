"""Backoff: when a failed call to a remote service is tried again, or not at all.

A caller that fails (an HTTP error, a timeout, a dropped connection) should neither give up
at once nor try again at once: ``Backoff`` is the policy that says how long to wait. After
the ``n``-th failure in a row it waits ``base * factor ** (n - 1)`` seconds, at most
``cap``, less a random share of up to ``jitter`` of it (so that callers that failed
together do not come back together); the draw is from the ``numpy.random.Generator`` the
caller passes in, never from a global generator, so a seeded run waits the same every
time. A ``Retry-After`` the server sent (``retry_after_seconds``: delay-seconds, an
HTTP-date, or OpenAI's ``retry-after-ms``) is honoured on the statuses of
``honour_retry_after`` (429 and 503): the wait is at least that long, cut to ``cap``. A
status in ``permanent`` (400, 401, 403, 404, 422: the request or the credentials are
wrong, and asking again cannot help) is not tried again: ``wait`` returns None.

The policy only computes the wait; it never sleeps. The caller compares its own clock
(a simulated clock, a fake one in tests) with the time it failed plus the wait.
"""

from __future__ import annotations

import email.utils
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from runtime.errors import SettingError

__all__ = ["PERMANENT_STATUSES", "Backoff", "retry_after_seconds"]

PERMANENT_STATUSES = frozenset({400, 401, 403, 404, 422})
"""HTTP statuses that asking again cannot fix: a bad request (a prompt over the model's
context length among them), bad or missing credentials, no permission, no such model or
route, arguments the server cannot process."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Backoff:
    """Exponential backoff with jitter that honours ``Retry-After`` (see the module
    docstring): ``base`` seconds after the first failure, ``factor`` times more after each
    further one, at most ``cap`` seconds; ``jitter`` is the largest share of a wait taken
    off at random."""

    base: float = 1.0
    factor: float = 2.0
    cap: float = 60.0
    jitter: float = 0.5
    permanent: frozenset[int] = PERMANENT_STATUSES
    honour_retry_after: frozenset[int] = frozenset({429, 503})

    def __post_init__(self) -> None:
        for name, low in (("base", 0.0), ("cap", 0.0), ("factor", 1.0)):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value < low
                or (name != "factor" and value == 0)
            ):
                bound = "at least 1" if name == "factor" else "positive seconds"
                raise SettingError(f"{name} must be {bound}, got {value!r}")
        if self.cap < self.base:
            raise SettingError(f"cap ({self.cap!r}) must be at least base ({self.base!r})")
        if isinstance(self.jitter, bool) or not (
            isinstance(self.jitter, (int, float)) and 0 <= self.jitter <= 1
        ):
            raise SettingError(f"jitter must be a share in [0, 1], got {self.jitter!r}")
        for name in ("permanent", "honour_retry_after"):
            statuses = getattr(self, name)
            if not isinstance(statuses, frozenset) or not all(
                isinstance(s, int) and not isinstance(s, bool) for s in statuses
            ):
                raise SettingError(f"{name} must be a frozenset of HTTP statuses, got {statuses!r}")

    def is_permanent(self, status: int | None) -> bool:
        """Whether a failure of this HTTP status is never tried again."""
        return status is not None and status in self.permanent

    def wait(
        self,
        failures: int,
        rng: np.random.Generator,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> float | None:
        """Seconds to wait after the ``failures``-th failure in a row (1 for the first)
        before trying again, drawn from ``rng``; None when ``status`` is permanent.
        ``retry_after`` (seconds the server asked for) counts on the statuses of
        ``honour_retry_after``."""
        if failures < 1:
            raise SettingError(f"failures counts from 1, got {failures!r}")
        if self.is_permanent(status):
            return None
        nominal = self.cap
        # compared in logs first, so that no power overflows however long it has failed
        if (failures - 1) * math.log(self.factor) < math.log(self.cap / self.base):
            nominal = min(self.cap, self.base * self.factor ** (failures - 1))
        drawn = nominal * (1.0 - self.jitter * float(rng.random()))
        if retry_after is not None and status in self.honour_retry_after:
            drawn = max(drawn, min(max(retry_after, 0.0), self.cap))
        return drawn


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The seconds a response's headers ask a client to wait: ``retry-after-ms`` (OpenAI's,
    milliseconds), else ``Retry-After`` as delay-seconds or as an HTTP-date, which is
    measured against the response's own ``Date`` header (the server's clock, never the
    local one; without a ``Date`` the date is not used). None when there is none or it
    cannot be read; never negative."""
    found = {str(k).lower(): str(v).strip() for k, v in headers.items()}
    millis = _number(found.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    value = found.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    until, now = _http_date(value), _http_date(found.get("date"))
    if until is None or now is None:
        return None
    return max(0.0, (until - now).total_seconds())


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _http_date(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return when if when.tzinfo is not None else None
