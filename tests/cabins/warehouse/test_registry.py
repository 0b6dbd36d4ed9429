"""The warehouse registry: it knows everything the simulator and the built-in cabins write
(checked against real runs, so it cannot drift), the shipped specs name nothing else, and a
misspelt key, kind or weight is caught with the name meant."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from cabins.warehouse.registry import CHARGE_REPLANS, WAREHOUSE
from runtime import configure_logging, load_spec
from runtime.patterns import matches
from runtime.spec import ContextSpec, load_specs
from runtime.writes import WriteGuard
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


BUILT_IN = ("planner", "executor", "monitor")


def _written(
    sim: Simulation, ticks: int, by_cabin: dict[str, set[tuple[str, str]]]
) -> tuple[set[str], dict[str, set[str]]]:
    """The keys and event kinds (with their fields) a run writes; what each built-in cabin
    wrote, deleted and emitted goes to ``by_cabin``."""
    keys = set(sim.board.keys("*"))
    kinds: dict[str, set[str]] = defaultdict(set)
    board = sim.board

    def on_board(reading: object, key: str) -> None:
        keys.add(key)
        source = getattr(reading, "source", None)
        if reading is None and board.last_delete is not None:
            by_cabin[board.last_delete.source].add(("delete", key))
        elif source is not None:
            by_cabin[source].add(("write", key))

    def on_event(e: Any) -> None:
        kinds[e.kind].update(getattr(e.data, "keys", tuple)())
        for tag in e.tags:
            if tag.startswith("cabin:") and e.kind not in ("reaction", "cabin_failed"):
                by_cabin[tag[len("cabin:") :]].add(("emit", e.kind))

    board.add_listener(on_board)
    sim.log.add_listener(on_event)
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
    by_cabin: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for sim, ticks in (
        (Simulation("warehouse", seed=0, faults=[parse_fault(f) for f in FAULTS]), 2000),
        (Simulation(generate_hard(0), seed=0), 3000),
    ):
        k, e = _written(sim, ticks, by_cabin)
        keys |= k
        for kind, fields in e.items():
            kinds[kind] |= fields
    board = [entry.key for entry in WAREHOUSE.board]
    assert [k for k in sorted(keys) if not any(matches(k, p) for p in board)] == []
    known = {e.kind: set(e.fields) for e in WAREHOUSE.events}
    assert sorted(set(kinds) - set(known)) == []
    assert {k: sorted(f - known[k]) for k, f in kinds.items() if f - known[k]} == {}
    # and each built-in cabin changed only what its shipped spec declares: nothing refused
    assert "write_refused" not in kinds
    specs = load_specs(SPECS_DIR)
    for name in BUILT_IN:
        guard = WriteGuard({name: specs[name].writes})
        assert [c for c in sorted(by_cabin[name]) if guard.refusal(name, *c)] == []  # type: ignore[arg-type]
        assert by_cabin[name], name


def _writers(entry_writer: str) -> set[str]:
    return {w.strip() for w in entry_writer.split(",")}


@pytest.mark.parametrize("name", BUILT_IN)
def test_the_shipped_specs_declare_exactly_what_the_registry_says_each_cabin_writes(
    name: str,
) -> None:
    writes = load_specs(SPECS_DIR)[name].writes
    assert writes is not None
    assert set(writes.board) == {e.key for e in WAREHOUSE.board if name in _writers(e.writer)}
    assert set(writes.events) == {e.kind for e in WAREHOUSE.events if name in _writers(e.writer)}
    assert writes.delete == ()


def test_declared_writes_are_checked_with_the_name_meant() -> None:
    spec = ContextSpec(
        name="mine",
        writes={  # type: ignore[arg-type]
            "board": ["dispatch:oder", "congestion:level"],
            "delete": ["safety:forbiden:*", "congestion:level"],
            "events": ["alram", "congested"],
        },
    )
    found = {(f.where, f.name): f.suggestions for f in WAREHOUSE.check(spec)}
    assert found == {
        ("writes.board", "dispatch:oder"): ("dispatch:order",),
        ("writes.delete", "safety:forbiden:*"): found[("writes.delete", "safety:forbiden:*")],
        ("writes.events", "alram"): ("alarm",),
    }  # a new key or kind of its own is no finding; deleting what it writes is none either


def test_what_a_spec_declares_it_writes_is_known_to_the_others() -> None:
    writer = ContextSpec(name="w", writes={"board": ["congestion:level"]})  # type: ignore[arg-type]
    reader = ContextSpec(name="r", board_keys=("congestion:level",))
    assert [f.name for f in WAREHOUSE.check(reader)] == ["congestion:level"]
    assert WAREHOUSE.with_declared([writer]).check(reader) == []


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


def test_the_example_dispatcher_changes_only_what_its_spec_declares() -> None:
    from cabins.dispatcher import ScriptedDispatcher
    from sim.run.harness import ExtraCabin

    spec = load_spec(ROOT / "specs" / "examples" / "dispatcher.toml")
    sim = Simulation("warehouse", seed=0, extra=[ExtraCabin(spec, ScriptedDispatcher)])
    try:
        summary = sim.run(400, until_done=False)
    finally:
        sim.close()
    row = summary["cabins"]["dispatcher"]
    assert row["writes"] > 0 and row["writes_refused"] == 0 and summary["writes_refused"] == 0


def test_each_re_plan_to_charge_first_is_a_reason_the_planner_gives() -> None:
    """The summary counts these reasons: a misspelt or renamed one would count nothing."""
    planner = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "cabins/planner").glob("*.py"))
    for reason in CHARGE_REPLANS:
        assert f'ReplanTrigger("{reason}"' in planner, reason
