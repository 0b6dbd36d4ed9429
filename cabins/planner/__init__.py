"""The planner cabin: the goal stack, the plan of the active delivery and its route.

``Planner`` (``planner.py``) is the cabin; the modules beside it are its parts. What
other code imports is here: the cabin, the reactions it reports for missing items, the
blocked spots it keeps in long-term memory, and where to give way to a mover.
"""

from cabins.planner.give_way import give_way_route, travel_direction
from cabins.planner.planner import REACTIONS, BlockedSpot, Planner, blocked_subject

__all__ = [
    "REACTIONS",
    "BlockedSpot",
    "Planner",
    "blocked_subject",
    "give_way_route",
    "travel_direction",
]
