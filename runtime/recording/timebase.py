"""Log time: where a run's moments sit on the wall-clock axis of a recording or live view.

A run's clock (simulated, or paced on the wall clock) counts seconds from 0. The run's
start as wall-clock time is taken once, by the application, when the run starts (the
command line does it; nothing in the loop reads the time of day), and passed in. Every
message of a recording and of a live view is then logged at ``start + run time``, in
nanoseconds since the Unix epoch, and the ``timestamp`` fields of Foxglove's messages
carry the same instant, so that a player's timeline reads as the time the run was made,
the same live and from the file. tickwork's own fields (``stamp``, ``time``) stay run
seconds. The start is kept in the recording's ``run`` metadata (``start_time_ns``, and
``start_time`` in ISO 8601 for people), from which a reader maps log times back.

A start of 0 (the default of library use, and of recordings made before the start was
kept) makes log time the run time itself. Any writer that stamps messages of a run (the
MCAP recorder, a live view, another recording profile) uses one ``TimeBase``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from runtime.errors import SettingError

NS = 1_000_000_000
MAX_START_NS = 2**62
"""A start past this (year 2116) is refused: log times are unsigned 64-bit nanoseconds."""
START_KEY = "start_time_ns"
START_TEXT_KEY = "start_time"


@dataclass(frozen=True, slots=True)
class TimeBase:
    """A run's wall-clock start, in nanoseconds since the Unix epoch (0: none)."""

    start_ns: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.start_ns, bool) or not isinstance(self.start_ns, int):
            raise SettingError(f"a run's start must be integer nanoseconds, got {self.start_ns!r}")
        if not 0 <= self.start_ns <= MAX_START_NS:
            raise SettingError(
                f"a run's start must be 0..{MAX_START_NS} ns since 1970, got {self.start_ns}"
            )

    @classmethod
    def at(cls, unix_seconds: float) -> TimeBase:
        """The time base of a run that started at ``unix_seconds`` (``time.time()``)."""
        return cls(max(0, round(unix_seconds * NS)))

    def log_time(self, seconds: float) -> int:
        """The log time (ns since the epoch) of run time ``seconds``."""
        return self.start_ns + max(0, round(seconds * NS))

    def stamp(self, seconds: float) -> tuple[int, int]:
        """Run time ``seconds`` as the whole seconds and nanoseconds of its log time."""
        return divmod(self.log_time(seconds), NS)

    def run_seconds(self, log_time: int) -> float:
        """The run time of a message logged at ``log_time``."""
        return (log_time - self.start_ns) / NS

    def metadata(self) -> dict[str, str]:
        """The ``run`` metadata entries that keep the start (empty for a start of 0)."""
        if self.start_ns == 0:
            return {}
        when = datetime.fromtimestamp(self.start_ns / NS, tz=UTC)
        return {
            START_KEY: str(self.start_ns),
            START_TEXT_KEY: when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }

    @classmethod
    def from_metadata(cls, run: Mapping[str, str]) -> TimeBase:
        """The time base a recording's ``run`` metadata names (start 0 when it names none);
        ``SettingError`` for a start that is not a count of nanoseconds."""
        text = run.get(START_KEY)
        if text is None:
            return cls()
        if not (isinstance(text, str) and text.isascii() and text.isdigit() and len(text) < 20):
            raise SettingError(f"the recording's {START_KEY} is not a count of ns: {text!r}")
        return cls(int(text))


EPOCH = TimeBase()
"""Log time equal to run time: a run with no wall-clock start."""
