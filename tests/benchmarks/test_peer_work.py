"""The equal-work peer (``benchmarks/peer_work.py``) delivers the runtime's items on a small
world, through goal changes, and its parity check can fail. Nothing here is timed."""

from __future__ import annotations

import io

import numpy as np
import pytest

from benchmarks import peer
from benchmarks.world import (
    MIN_BOARD,
    Driver,
    RuntimeWorld,
    WorldSize,
    generate,
    load_shipped_specs,
)
from runtime import configure_logging

pytestmark = pytest.mark.skipif(not peer.available(), reason="needs the [bench] extra (py_trees)")

SMALL = WorldSize(MIN_BOARD + 40, 600, 2000)


def _world(size: WorldSize, seed: int, capacity: int = 64) -> tuple[RuntimeWorld, Driver, object]:
    from benchmarks import peer_work

    configure_logging(level="warning", stream=io.StringIO())
    data = generate(size, np.random.default_rng(seed))
    runtime = RuntimeWorld(data, load_shipped_specs(), capacity=capacity)
    work = peer_work.peer_of(data.features, runtime)
    return runtime, Driver(data, runtime, np.random.default_rng(seed + 1), peer=work), work


@pytest.mark.slow
@pytest.mark.parametrize("capacity", [64, 24])
def test_the_peer_holds_the_runtimes_items_tick_for_tick_through_goal_changes(
    capacity: int,
) -> None:
    from benchmarks.peer_work import parity

    runtime, driver, work = _world(SMALL, seed=3, capacity=capacity)
    evicted = 0
    try:
        for _ in range(820):  # goals change at ticks 400 and 800
            tick, now = driver.advance()
            _, views = runtime.tick(tick, now)
            mine = work.tick(now)  # type: ignore[attr-defined]
            assert parity(views, mine) is None, f"tick {tick}"
            evicted += sum(len(v["evicted"]) for v in mine.values())
            assert sum(len(v) for v in views) == sum(len(v["items"]) for v in mine.values())
    finally:
        work.close()  # type: ignore[attr-defined]
    if capacity < 64:  # the shipped specs' items fit 64; fewer makes the eviction choose
        assert evicted > 0


def test_the_parity_check_notices_a_lost_item_and_a_wrong_window() -> None:
    import copy

    from benchmarks.peer_work import parity

    runtime, driver, work = _world(SMALL, seed=4)
    try:
        tick, now = driver.advance()
        _, views = runtime.tick(tick, now)
        mine = work.tick(now)  # type: ignore[attr-defined]
        assert parity(views, mine) is None
        lost = copy.deepcopy(mine)
        items = lost["executor"]["items"]
        del items[next(iter(items))]
        assert (parity(views, lost) or "").startswith("executor items[0]")
        moved = copy.deepcopy(mine)
        moved["monitor"]["nearby"] = ["not-a-feature"]
        assert (parity(views, moved) or "").startswith("monitor nearby")
    finally:
        work.close()  # type: ignore[attr-defined]
