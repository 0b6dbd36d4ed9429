"""Safety and liveness on the ``hard:N`` family: hypothesis draws seeds of the family (so
every layout: dead-end bays, single-lane corridors, fishbone and turned rows, the large
floor) and each world runs on two run seeds.

The draws are the family's at a size a run of which the suite can afford
(``HardSettings(max_floor=(50, 36), tasks=1)``): the same layouts, movers, batteries and
traits, on floors up to 50 x 36 m (the large layout then draws the issue's 48 x 32 m
starvation floor, 45 shelves and more) with one delivery each. A full-size draw (four to
eight deliveries on up to 120 x 80 m) costs one to five minutes of CPU when it stalls,
today, to the end of its duration (``benchmarks/results/hard_family_baseline.md``).

- Safety: 0 collisions and 0 safety violations over each run's first ``SAFETY_TICKS``
  ticks (or until its delivery is done): 50 worlds x 2 run seeds under ``slow`` (so in
  CI), in five chunks that ``pytest -n`` spreads over the cores, ``TICKWORK_HARD_WORLDS=N``
  for more; a quick look at 1 world (``slow`` too: about 20 s here, over the edit loop's
  budget).
- Liveness: every reachable delivery done within the duration and no ``stalled`` alarm, on
  the first ``LIVE_WORLDS`` seeds of the family (every layout, each on two run seeds),
  one test per seed under ``slow`` (``pytest -n`` spreads them over the cores),
  ``TICKWORK_HARD_LIVE=N`` for more; a draw known to stall would be a strict ``xfail``
  with the reason (``KNOWN_STALLS``: none today). The seeds are fixed, not drawn (the
  first 50, so every layout ten times): a run of a bay with a picker in it takes minutes
  of simulated time and up to 20 s of CPU, the 100 runs about 220 s of CPU; the campaign
  over ``hard:0-99`` at full size (``benchmarks/results/hard_campaign.md``) is the wider measure.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from sim.run.harness import Simulation
from sim.world.generate import to_toml
from sim.world.hard import HardSettings, generate_hard

pytestmark = pytest.mark.e2e

CHEAP = HardSettings(max_floor=(50.0, 36.0), tasks=1)
"""The family's layouts and traits at a size the suite can afford (see the docstring)."""

SAFETY_TICKS = 2400
"""Ticks (120 s at 20 Hz) of each run the safety property covers, when the delivery is
not done before: the approach to the first dock past the movers, the dead ends and the
single lanes, at a cost the suite can pay for a hundred runs."""

WORLDS = max(50, int(os.environ.get("TICKWORK_HARD_WORLDS", "50")))
SAFE_CHUNKS = 5
LIVE_WORLDS = max(50, int(os.environ.get("TICKWORK_HARD_LIVE", "50")))
KNOWN_STALLS: dict[int, str] = {}
"""Cheap draws known to stall, and why: strict, so that a fix shows. None today: the last
(draw 10, run seed 1) passes since a lane's wait out of patience lets a mover coming at
the robot's way in pass first (``LaneGuard._passing``)."""
SEEDS = 10**6

_NO_SHRINK: dict[str, Any] = {
    "deadline": None,
    "phases": (Phase.explicit, Phase.generate),  # a failing world is reported as drawn
    "suppress_health_check": [HealthCheck.too_slow],
    "database": None,
}


def _run(seed: int, run_seed: int, ticks: int | None) -> tuple[dict[str, Any], str]:
    """The summary of a run of the cheap draw of ``hard:seed`` (``ticks`` at most, or its
    whole duration), and where to find the world again."""
    scenario = generate_hard(seed, CHEAP)
    sim = Simulation(scenario, seed=run_seed)
    try:
        summary = sim.run(None if ticks is None else min(ticks, sim.max_ticks))
    finally:
        sim.close()
    where = f"generate_hard({seed}, {CHEAP}) run seed {run_seed}:\n{to_toml(scenario)}"
    return summary, where


def check_safe(seed: int) -> None:
    for run_seed in (0, 1):
        summary, where = _run(seed, run_seed, SAFETY_TICKS)
        assert summary["collisions"] == 0, (summary["collision_details"], where)
        assert summary["safety_violations"] == 0, where


def check_live(seed: int) -> None:
    for run_seed in (0, 1):
        summary, where = _run(seed, run_seed, None)
        reachable = summary["tasks_total"] - len(summary["tasks_undeliverable"])
        assert summary["deliveries_done"] == reachable, (summary["deliveries_done"], where)
        assert "stalled" not in summary["alarms"], (summary["alarms"], where)
        assert summary["collisions"] == 0, (summary["collision_details"], where)
        assert summary["safety_violations"] == 0, where


def _drawn(check: Any, examples: int, low: int, high: int) -> None:
    @settings(max_examples=examples, **_NO_SHRINK)
    @given(seed=st.integers(low, high - 1))
    def drawn(seed: int) -> None:
        check(seed)

    drawn()


def _chunk(chunk: int, chunks: int) -> tuple[int, int, int]:
    """The examples and the seed range of one of ``chunks`` chunks of ``WORLDS`` worlds."""
    width = SEEDS // chunks
    return -(-WORLDS // chunks), chunk * width, (chunk + 1) * width


@pytest.mark.slow
def test_a_hard_world_is_safe() -> None:
    _drawn(check_safe, 1, 0, SEEDS)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(SAFE_CHUNKS))
def test_fifty_hard_worlds_are_safe(chunk: int) -> None:
    _drawn(check_safe, *_chunk(chunk, SAFE_CHUNKS))


@pytest.mark.slow
@pytest.mark.parametrize(
    "seed",
    [
        pytest.param(s, marks=pytest.mark.xfail(strict=True, reason=KNOWN_STALLS[s]))
        if s in KNOWN_STALLS
        else s
        for s in range(LIVE_WORLDS)
    ],
)
def test_hard_worlds_deliver_everything_and_never_stall(seed: int) -> None:
    check_live(seed)


@pytest.mark.slow
def test_a_way_round_a_row_of_shelves_seen_one_by_one_is_no_stall() -> None:
    # hard:136 seed 0 at full size (a world of the campaign's next hundred, no draw here
    # was tuned on): gone round a lane a forklift was in, the robot followed an aisle
    # along a row it had seen four shelves of, behind another forklift; each shelf seen
    # took its way round one gap further (22 m to 86 m), and at 144.75 s a stalled alarm
    # fired on a way it drove all along. The watchdog measures a way that grew with the
    # floor learned afresh (``Watchdog.remeasure``).
    sim = Simulation(generate_hard(136), seed=0)
    try:
        summary = sim.run(3200)  # 160 s
    finally:
        sim.close()
    assert "stalled" not in summary["alarms"], summary["alarms"]
    assert summary["collisions"] == 0 and summary["safety_violations"] == 0
