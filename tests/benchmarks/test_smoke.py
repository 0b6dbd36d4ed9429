"""The benchmark code runs on a toy world, and its seed reference selects what the runtime does.

Nothing here times anything: the figures themselves come from ``python -m benchmarks``.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks import peer
from benchmarks.reference_model import differences
from benchmarks.report import markdown, targets
from benchmarks.seed_reference import (
    SeedBoard,
    SeedItem,
    SeedLog,
    SeedMap,
    SeedWorkingMemory,
    seed_tick,
)
from benchmarks.ticks import Plan, measure_world
from benchmarks.world import (
    MIN_BOARD,
    Driver,
    RuntimeWorld,
    SeedWorld,
    WorldSize,
    generate,
    load_shipped_specs,
)
from runtime import FifoEviction, ValueEviction, WorkingMemory, WorkItem, configure_logging

TOY = WorldSize(MIN_BOARD + 10, 150, 300)


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    configure_logging(level="warning", stream=io.StringIO())
    yield


def _worlds(capacity: int) -> tuple[RuntimeWorld, SeedWorld, Driver]:
    data = generate(TOY, np.random.default_rng(3))
    runtime = RuntimeWorld(data, load_shipped_specs(), capacity=capacity)
    seed = SeedWorld(data, runtime)
    return runtime, seed, Driver(data, runtime, np.random.default_rng(4), seed)


def test_seed_reference_and_runtime_select_the_same_items_without_eviction() -> None:
    runtime, seed, driver = _worlds(capacity=10_000)
    for _ in range(60):
        tick, now = driver.advance()
        ws, views = runtime.tick(tick, now)
        packs = seed_tick(seed.memory, seed.specs, now)
        assert all(e.reason != "capacity" for e in ws.evictions)
        for view in views:
            pack = packs[view.cabin]
            assert set(view.keys()) == pack.keys()
            assert view.nearby_map == pack.nearby_map
            assert view.corridor_map == pack.corridor_map
            assert view.recent_events == pack.recent_events
            assert {k: view[k] for k in pack.board} == pack.board
        # The runtime's memory holds exactly this tick's selections; the seed's never expires.
        selected = set().union(*(pack.keys() for pack in packs.values()))
        assert set(runtime.memory.keys()) == selected <= seed.memory.keys()


def _parity(memory: WorkingMemory, ticks: int, *, capacity: int = 24) -> tuple[int, str | None]:
    """Drive a toy world for ``ticks`` ticks with ``memory`` behind the runtime; how many
    ticks differ from the reference model, and the first difference."""
    data = generate(TOY, np.random.default_rng(3))
    runtime = RuntimeWorld(data, load_shipped_specs(), memory=memory)
    seed = SeedWorld(data, runtime)
    model = seed.model(data, runtime)
    driver = Driver(data, runtime, np.random.default_rng(4), model=model)
    mismatches, first = 0, None
    for _ in range(ticks):
        tick, now = driver.advance()
        ws, views = runtime.tick(tick, now)
        why = differences(ws, views, model.freeze(tick, now))
        if why is not None:
            mismatches += 1
            first = first or f"tick {tick}: {why}"
    return mismatches, first


@pytest.mark.slow
def test_the_runtime_meets_the_reference_model_field_for_field_through_goal_changes() -> None:
    """Eviction every tick, two goal changes (the driver replaces a goal every 400 ticks)."""
    mismatches, first = _parity(WorkingMemory(capacity=24), 820)
    assert (mismatches, first) == (0, None)


class _MostImportantFirst(ValueEviction):
    """A broken policy: evicts the most important item first."""

    def rank(self, item: WorkItem) -> tuple[Any, ...]:
        return (-item.importance, item.last_used, item.key)


class _NeverRefreshed(WorkingMemory):
    """A broken memory: an item it holds is never written again (its value, importance,
    last_used and provenance stay as they were first written)."""

    def upsert(self, item: WorkItem) -> WorkItem:
        held = self.get(item.key)
        return held if held is not None else super().upsert(item)

    def settle(self, victims: Any, writes: Any, *, tick: int, now: float) -> Any:
        fresh = [w for w in writes if self.get(w[0]) is None]
        return super().settle(victims, fresh, tick=tick, now=now)


@pytest.mark.parametrize(
    "memory",
    [
        WorkingMemory(capacity=24, policy=_MostImportantFirst()),
        WorkingMemory(capacity=24, policy=FifoEviction()),
        _NeverRefreshed(capacity=24),
    ],
    ids=["most-important-first", "fifo", "never-refreshed"],
)
def test_parity_fails_for_a_broken_runtime(memory: WorkingMemory) -> None:
    mismatches, first = _parity(memory, 60)
    assert mismatches > 0 and first is not None


def test_the_parity_check_notices_a_changed_field() -> None:
    data = generate(TOY, np.random.default_rng(3))
    runtime = RuntimeWorld(data, load_shipped_specs(), capacity=24)
    model = SeedWorld(data, runtime).model(data, runtime)
    driver = Driver(data, runtime, np.random.default_rng(4), model=model)
    tick, now = driver.advance()
    ws, views = runtime.tick(tick, now)
    frozen = model.freeze(tick, now)
    assert differences(ws, views, frozen) is None
    key, value, importance, *rest = frozen.views["executor"].items[0]
    frozen.views["executor"].items[0] = (key, value, importance + 0.01, *rest)
    assert "executor items[0]" in (differences(ws, views, frozen) or "")


_KEYS = (
    "goal:a",
    "safety:b",
    "pose",
    "route",
    "map:shelf:1",
    "map:dock:2",
    "event:x:1",
    "constraint:z",
    "battery",
    "cargo",
)


@given(
    st.lists(st.tuples(st.sampled_from(_KEYS), st.sampled_from((0.1, 0.5, 0.9, 1.0))), max_size=40),
    st.integers(min_value=1, max_value=5),
)
def test_seed_eviction_picks_the_runtime_victims(
    pushes: list[tuple[str, float]], capacity: int
) -> None:
    memory = WorkingMemory(capacity=capacity)
    reference = SeedWorkingMemory(SeedBoard(), SeedMap(), SeedLog(), capacity=capacity)
    for t, (key, importance) in enumerate(pushes):
        memory.push(WorkItem(key, t, importance, float(t)))
        reference.push(SeedItem(key, t, importance, float(t)))
        assert reference.keys() == set(memory.keys())


def test_measure_world_runs_on_a_toy_world_and_reports() -> None:
    plan = Plan(
        ticks=20,
        warmup=5,
        seed_ticks=5,
        seed_budget_s=60.0,
        stage_ticks=5,
        profile_ticks=3,
        slack_ticks=5,
        gc_freeze=False,
        parity_ticks=30,
        anchor_ticks=5,
    )
    result = measure_world(TOY, plan, seed=1)
    assert (result.parity["ticks_compared"], result.parity["mismatches"]) == (30, 0)
    assert result.runtime.n == 20 and result.seed.n == 5
    stages = result.stages_us
    assert set(stages["mean_us"]) == {"board", "log", "map", "eviction", "freeze", "views"}
    assert stages["sum_of_means_us"] == pytest.approx(stages["tick_mean_us"], rel=0.05)
    assert result.profile["top_runtime_cumulative"]
    world = result.as_dict()
    results: dict[str, Any] = {
        "command": "test",
        "mode": "quick",
        "duration_s": 1.0,
        "machine": {
            "cpu": "cpu",
            "cores": 1,
            "implementation": "CPython",
            "python": "3",
            "system": "Linux",
            "load_average_at_start": [0.0, 0.0, 0.0],
        },
        "settings": {"capacity": 64, "area_per_feature_m2": 150.0, "event_rate_hz": 20.0},
        "worlds": [world],
        "peer": None,
        "event_memory": {
            "events": 10,
            "runtime_log_bytes_per_event": 50.0,
            "seed_list_bytes_per_event": 130.0,
            "payload_bytes_per_event": 200.0,
        },
        "simulator": {
            "rate_hz": 20.0,
            "median_real_time_factor": 50.0,
            "median_ticks_per_s": 1000.0,
            "runs": [{"ticks": 10, "sim_time_s": 0.5, "tick_compute_p50_ms": 0.5}],
        },
    }
    results["targets"] = targets(results)
    by_name = {t["target"]: t for t in results["targets"]}
    assert by_name["bytes per logged event beyond its payload"]["met"] is True
    assert by_name["default scenario speed"]["met"] is False
    (anchor,) = (t for n, t in by_name.items() if n.startswith("freeze + 3 views / 10-leaf"))
    assert anchor["met"] is None if not peer.available() else isinstance(anchor["met"], bool)
    if peer.available():
        equal = by_name["freeze + 3 views / equal-work py_trees peer (alternating ticks)"]
        assert (
            isinstance(equal["met"], bool) and "the same items in 5 of 5 ticks" in equal["measured"]
        )
        assert world["anchor"]["equal_work_tick"]["n"] == 5
    assert by_name["parity with the reference model, every field"]["met"] is False  # 30 ticks
    assert TOY.label in markdown(results)


def test_the_shipped_specs_read_only_the_core_board_keys() -> None:
    # the filler keys stand for the rest of a robot's board: were a spec to select them
    # (as the planner's task:* did a filler namespace task), every figure would measure
    # thousands of candidates and capacity evictions instead of the tick's ~110 items
    data = generate(WorldSize(MIN_BOARD + 100, 150, 300), np.random.default_rng(0))
    runtime = RuntimeWorld(data, load_shipped_specs(), capacity=10_000)
    ws, views = runtime.tick(0, data.start)
    board = {key for key, _, _ in data.board}
    core = {key for key, _, _ in data.board[:MIN_BOARD]}
    read = {key for key in ws.items if key in board}
    assert read, "the specs read no board key at all"
    assert read <= core, sorted(read - core)[:5]
    assert {key for view in views for key in view if key in board} <= core


def test_world_sizes_refuse_too_small_a_board() -> None:
    with pytest.raises(ValueError, match="board keys"):
        WorldSize(MIN_BOARD - 1, 10, 10)


@pytest.mark.slow
def test_the_long_term_benchmark_runs_on_small_scopes_and_reports() -> None:
    from benchmarks import long_term

    results = long_term.measure_long_term(quick=True, scope_sizes=(50, 200))
    small, big = results["sizes"]
    assert (small["memories"], big["memories"]) == (50, 200)
    assert big["recall_matches_baseline"] is True
    assert big["recall"]["n"] == big["remember_text"]["n"] == 30
    assert big["remember_text_one_claim"]["n"] == 30
    assert big["writer_flush"]["writes"] == 30
    ticks = results["tick_cost"]
    assert ticks["in_apply_phase"]["tick_compute"]["n"] == 100
    assert ticks["writer_between_ticks"]["flush_between_ticks"]["n"] == 100
    [recall, remember] = long_term.targets(results)
    assert "200 memories" in recall["target"] and isinstance(remember["met"], bool)
    assert any("Long-term memory" in line for line in long_term.markdown(results))


def test_the_recall_benchmark_scores_a_held_out_set_of_three_users() -> None:
    from benchmarks import recall
    from benchmarks.recall_set import CHINESE, USERS

    assert len(USERS) == 3 and sum(len(p) for p in USERS.values()) >= 40 and len(CHINESE) >= 10
    for pairs in (*USERS.values(), CHINESE):  # a query is a paraphrase, never its fact
        assert all(query != fact for fact, query in pairs)
    results = recall.measure(repeat=3, model=False)
    hashing = results["embedders"]["hashing"]
    assert hashing["recall_set"]["queries"] == 48 and hashing["chinese_set"]["queries"] == 12
    scores = hashing["recall_set"]
    assert 0 <= scores["recall_at_1"] <= scores["recall_at_3"] <= 1 and 0 < scores["mrr"] <= 1
    assert set(hashing["latency"]) >= {"recall_p50_ms", "writer_remember_p50_ms"}
    assert results["skipped"] == {"all-MiniLM-L6-v2": "not asked for"}
