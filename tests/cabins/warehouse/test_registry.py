"""The warehouse registry: it knows everything the simulator and the built-in cabins write
(checked against real runs, so it cannot drift), the shipped specs name nothing else, and a
misspelt key, kind or weight is caught with the name meant."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from cabins.warehouse.registry import WAREHOUSE
from runtime import configure_logging, load_spec
from runtime.patterns import matches
from runtime.spec import ContextSpec, load_specs
from sim.faults.model import parse_fault
from sim.run.harness import SPECS_DIR, Simulation
from sim.world.hard import generate_hard
from tests.support.paths import ROOT

FAULTS = (
    "missing:planner:pose@200-600",
    "crash:planner@120",
    "stale:pose@300-500",
    "missing:executor:event:action_failed*@50-150",
    "missing:monitor:safety:*@700-900",
    "dropout:pose@1000-1100",
)


def _written(sim: Simulation, ticks: int) -> tuple[set[str], dict[str, set[str]]]:
    keys = set(sim.board.keys("*"))
    kinds: dict[str, set[str]] = defaultdict(set)
    sim.board.add_listener(lambda reading, key: keys.add(key))
    sim.log.add_listener(lambda e: kinds[e.kind].update(getattr(e.data, "keys", tuple)()))
    try:
        sim.run(ticks, until_done=False)
    finally:
        sim.close()
    return keys, kinds


@pytest.mark.slow
def test_everything_a_run_writes_is_registered() -> None:
    configure_logging(level="critical")
    keys: set[str] = set()
    kinds: dict[str, set[str]] = defaultdict(set)
    for sim, ticks in (
        (Simulation("warehouse", seed=0, faults=[parse_fault(f) for f in FAULTS]), 2000),
        (Simulation(generate_hard(0), seed=0), 3000),
    ):
        k, e = _written(sim, ticks)
        keys |= k
        for kind, fields in e.items():
            kinds[kind] |= fields
    board = [entry.key for entry in WAREHOUSE.board]
    assert [k for k in sorted(keys) if not any(matches(k, p) for p in board)] == []
    known = {e.kind: set(e.fields) for e in WAREHOUSE.events}
    assert sorted(set(kinds) - set(known)) == []
    assert {k: sorted(f - known[k]) for k, f in kinds.items() if f - known[k]} == {}


def test_the_shipped_specs_name_only_what_is_written() -> None:
    specs = [
        *load_specs(SPECS_DIR).values(),
        load_spec(ROOT / "specs" / "examples" / "dispatcher.toml"),
        load_spec(ROOT / "examples" / "people_watch" / "people_watch.toml"),
        load_spec(ROOT / "examples" / "warehouse_agent" / "warehouse_agent.toml"),
    ]
    assert {s.name: [f.text() for f in WAREHOUSE.check(s)] for s in specs} == {
        s.name: [] for s in specs
    }


@pytest.mark.parametrize(
    ("field", "name", "meant"),
    [
        ("board_keys", "robot:limit", "robot:limits"),
        ("board_keys", "safety:scaner", "safety:scanner"),
        ("event_kinds", "wait_for_obstacle", "wait_for_obstacles"),
        ("event_kinds", "giveway", "give_way"),
        ("map_kinds", "shelve", "shelf"),
    ],
)
def test_a_misspelling_is_caught_with_the_name_meant(field: str, name: str, meant: str) -> None:
    settings: dict[str, object] = {field: (name,)}
    if field == "event_kinds":
        settings["event_window"] = 2.0
    if field == "map_kinds":
        settings |= {"map_center": "pose", "map_radius": 3.0}
    spec = ContextSpec(name="mine", **settings)  # type: ignore[arg-type]
    (finding,) = [f for f in WAREHOUSE.check(spec) if f.where == field]
    assert finding.name == name and meant in finding.suggestions
    assert f"did you mean {meant!r}" in finding.text()


def test_a_weight_or_required_pattern_that_selects_nothing_is_caught() -> None:
    spec = ContextSpec(
        name="mine",
        board_keys=("pose", "battery"),
        weights={"batery": 0.9, "map:shelf:*": 0.5, "pose": 0.9},
        required=("pose",),
    )
    found = {(f.where, f.name) for f in WAREHOUSE.check(spec)}
    assert found == {("weights", "batery"), ("weights", "map:shelf:*")}


def test_a_tmp_spec_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\nboard_keys = ["robot:limit"]\n', encoding="utf-8")
    (finding,) = WAREHOUSE.check(load_spec(path))
    assert finding.suggestions[0] == "robot:limits"
