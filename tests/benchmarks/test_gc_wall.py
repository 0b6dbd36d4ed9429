"""The wall-clock collection benchmark runs both policies and counts what it says."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.gc_wall import POLICIES, _Hook, markdown, measure
from benchmarks.timing import GcWatch
from benchmarks.world import (
    MIN_BOARD,
    Driver,
    RuntimeWorld,
    WorldSize,
    generate,
    load_shipped_specs,
)


@pytest.mark.slow
def test_both_policies_are_measured_and_in_slack_keeps_collections_out_of_ticks() -> None:
    results = measure(1.0, 0.5, size=WorldSize(100, 1_000, 1_000))
    assert set(results) == set(POLICIES)
    for name in POLICIES:
        assert results[name]["ticks"] == 10
        assert results[name]["tick_cpu"]["n"] == 10
        assert results[name]["view_items_mean"] > 0
    # the policy switches the collector off for every tick: nothing can start inside one
    assert results["in_slack"]["collections_in_ticks"] == 0
    text = markdown(
        {"machine": "m", "when": "w", "seconds": 1.0, "segment": 0.5, "policies": results}
    )
    assert "`in_slack`" in text and "`anywhere`" in text


def test_the_hook_moves_the_world_to_the_loop_s_wall_time() -> None:
    # a full collection at a segment's start, or any pause between ticks, moves the wall
    # clock on: the world's readings must be stamped at the loop's time, or pose and
    # velocity (time-to-live 0.25 s) go stale and the tick measured is another one
    data = generate(WorldSize(MIN_BOARD + 10, 150, 300), np.random.default_rng(0))
    world = RuntimeWorld(data, load_shipped_specs())
    hook = _Hook(Driver(data, world, np.random.default_rng(1)), GcWatch())
    for tick, now in enumerate((data.start, data.start + 0.05, data.start + 1.5)):
        hook.before_freeze(tick, now)
        assert world.clock.now() == now
        reading = world.board.read("pose")
        assert reading is not None and reading.stamp == now
    _, views = world.tick(2, data.start + 1.5)
    assert all("pose" in view for view in views)
