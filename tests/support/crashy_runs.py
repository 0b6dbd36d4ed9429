"""A campaign run function whose worker dies on one seed (for the crash-isolation test)."""

from __future__ import annotations

import os
from typing import Any

from sim.run.campaign import RunRequest


def run_or_die(request: RunRequest) -> dict[str, Any]:
    if request.seed == 13:
        os._exit(3)
    return {
        "scenario": request.scenario,
        "seed": request.seed,
        "fault": request.label,
        "fault_kind": None,
        "expected": [],
        "reactions_ok": True,
        "safe": True,
        "passed": True,
        "deliveries_done": 1,
        "tasks_total": 1,
        "safety_violations": 0,
        "collisions": 0,
        "ticks": 1,
        "board_digest": str(request.seed),
        "error": None,
    }
