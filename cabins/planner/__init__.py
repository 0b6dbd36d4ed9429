"""The planner cabin: the goal stack, the plan of the active delivery and its route.

``Planner`` (``cabin.py``) is the cabin, a facade over its parts, one module each:

- ``settings``: ``PlannerSettings``, every tuning value, checked in one place;
- ``seen``: the view, read once per tick into a ``Seen`` that the parts take;
- ``missing``: one reaction per episode of a missing required item (``REACTIONS``);
- ``layout``: the shelves, zones and bounds remembered, and the route planner on them;
- ``hold``: why no route may be planned this tick;
- ``goals``: the goal stack and the active task;
- ``steps``: the active task's plan (``delivery`` makes its steps, ``stall`` watches
  its progress, ``energy`` says when to charge first): reports, re-plans, the next step,
  the ``plan`` board value;
- ``route``: the route: kept, planned again, past the movers or up to them
  (``departure``: where it starts; ``shrink``: what it keeps clear of);
- ``standoff`` and ``give_way``: a stand-off, and where to give way in it;
- ``watchdog`` and ``recovery``: no progress on the active task, and what is done
  about it (re-route, defer, abandon);
- ``blocked_spots``: where the way was blocked, kept in long-term memory.
"""

from cabins.planner.blocked_spots import BlockedSpot, blocked_subject
from cabins.planner.cabin import Planner
from cabins.planner.give_way import give_way_route, travel_direction
from cabins.planner.missing import REACTIONS
from cabins.planner.settings import PlannerSettings

__all__ = [
    "REACTIONS",
    "BlockedSpot",
    "Planner",
    "PlannerSettings",
    "blocked_subject",
    "give_way_route",
    "travel_direction",
]
