"""The monitor's names: the patterns it stops for, the reactions it reports, the key it
writes and the tags of its events.

Other cabins, the simulator and tests read these names; the monitor's parts share them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from cabins.warehouse.values import SCANNER

__all__ = [
    "ALARM_TAGS",
    "CONDITIONS",
    "FAIL_SAFE",
    "FAIL_SAFE_ON",
    "PROTECTIVE",
    "READING_REACTION",
    "SAFETY",
    "STATUS_KEY",
    "STOP_TAGS",
]

SAFETY: Final = "safety:*"
FAIL_SAFE_ON: Final = (SAFETY, SCANNER)
"""The required patterns whose absence (for a reason other than "absent") stops the robot."""
FAIL_SAFE: Final = "stop:fail_safe"
READING_REACTION: Final = "alarm:missing_reading"
STATUS_KEY: Final = "monitor:status"
PROTECTIVE: Final = "stop:protective"
CONDITIONS: Final[Mapping[str, tuple[str, ...]]] = {
    "deviation_growing": ("slow:deviation", PROTECTIVE),
    "contact_predicted": (PROTECTIVE, "slow:contact"),
}
"""Condition -> what the monitor can do while it holds: the first unless the spec's
``[on_condition]`` picks another."""
ALARM_TAGS: Final = ("alarm",)
STOP_TAGS: Final = ("safety",)
