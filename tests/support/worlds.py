"""Tiny hand-written worlds whose run ends in a known verdict, in a second or two.

``TOO_SHORT``: one delivery 16 m away and 5 s to make it, so that the run reaches the
scenario's end with its one reachable task undelivered. ``RUNS_FLAT``: the same floor, 60 s
and a battery for about 4 m with no charger, so that the robot runs flat on its way.
``TWO_TASKS``: two short deliveries along one aisle, t1 then t2, and 25 s for both.
"""

from __future__ import annotations

from pathlib import Path

TOO_SHORT = """\
name = "too_short"
description = "one delivery 16 m away and 5 s to make it: it cannot be done in time"
duration = 5.0

[floor]
min_x = 0.0
min_y = 0.0
max_x = 20.0
max_y = 6.0

[[docks]]
id = "near"
x = 2.0
y = 3.0

[[docks]]
id = "far"
x = 18.0
y = 3.0

[robot]
radius = 0.35
max_speed = 1.5
max_turn_rate = 2.0
max_accel = 1.0
start = { x = 2.0, y = 3.0, theta = 0.0 }
battery_wh = 100.0
drain_wh_per_m = 0.1
drain_wh_per_s = 0.01
charge_wh_per_s = 0.5

[[tasks]]
id = "t1"
pickup = "near"
drop = "far"
"""

RUNS_FLAT = (
    TOO_SHORT.replace('name = "too_short"', 'name = "runs_flat"')
    .replace("duration = 5.0", "duration = 60.0")
    .replace("battery_wh = 100.0", "battery_wh = 0.5")
    .replace(
        "one delivery 16 m away and 5 s to make it: it cannot be done in time",
        "a battery for about 4 m, a delivery 16 m away and no charger",
    )
)


TWO_TASKS = """\
name = "two_tasks"
description = "two short deliveries along one aisle"
duration = 25.0

[floor]
min_x = 0.0
min_y = 0.0
max_x = 14.0
max_y = 6.0

[[docks]]
id = "a"
x = 2.0
y = 3.0

[[docks]]
id = "b"
x = 6.0
y = 3.0

[[docks]]
id = "c"
x = 10.0
y = 3.0

[robot]
radius = 0.35
max_speed = 1.5
max_turn_rate = 2.0
max_accel = 1.0
start = { x = 2.0, y = 3.0, theta = 0.0 }
battery_wh = 100.0
drain_wh_per_m = 0.1
drain_wh_per_s = 0.01
charge_wh_per_s = 0.5

[[tasks]]
id = "t1"
pickup = "a"
drop = "b"

[[tasks]]
id = "t2"
pickup = "b"
drop = "c"
"""


def write_world(folder: Path, text: str, name: str = "world.toml") -> Path:
    """``text`` written to ``folder/name``; its path."""
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path
