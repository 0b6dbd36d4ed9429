"""The executor cabin: carries out the planner's current step on the robot.

``Executor`` (``cabin.py``) is the cabin; the retry policies it follows are in ``retry.py``.
"""

from cabins.executor.cabin import (
    EPISODE_QUIET_TICKS,
    REACTIONS,
    REANNOUNCE_TICKS,
    RETRYABLE_REASONS,
    Executor,
    Step,
)

__all__ = [
    "EPISODE_QUIET_TICKS",
    "REACTIONS",
    "REANNOUNCE_TICKS",
    "RETRYABLE_REASONS",
    "Executor",
    "Step",
]
