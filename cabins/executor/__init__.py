"""The executor cabin: carries out the planner's current step on the robot.

``Executor`` (``cabin.py``) is the cabin, a facade over its parts (its docstring lists
them); ``ExecutorSettings`` (``settings.py``) its tuning values; the retry policies it
follows are in ``retry.py``.
"""

from cabins.executor.cabin import Executor
from cabins.executor.ledger import REANNOUNCE_TICKS, RETRYABLE_REASONS
from cabins.executor.missing import EPISODE_QUIET_TICKS, REACTIONS
from cabins.executor.plan import Step
from cabins.executor.settings import ExecutorSettings

__all__ = [
    "EPISODE_QUIET_TICKS",
    "REACTIONS",
    "REANNOUNCE_TICKS",
    "RETRYABLE_REASONS",
    "Executor",
    "ExecutorSettings",
    "Step",
]
