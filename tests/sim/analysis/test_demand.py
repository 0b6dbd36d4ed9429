"""check-spec --scenario: each spec's worst-case demand on a world, and theirs together,
against the capacity of the working memory they share, before anything runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runtime import ContextSpec
from sim.analysis.demand import demand
from sim.analysis.speccheck import check_specs
from sim.cli import main
from sim.world.scenario import load_scenario

_SHELVES = "\n".join(
    f'[[shelves]]\nid = "S{i}"\n'
    f"polygon = [[{x - 0.25}, 4.75], [{x + 0.25}, 4.75], [{x + 0.25}, 5.25], [{x - 0.25}, 5.25]]\n"
    for i, x in enumerate(range(1, 20, 2))
)
LINE = f"""name = "line"
description = "ten small shelves in a row, 2 m apart, two docks below them"
duration = 60.0
rate_hz = 20.0

[floor]
min_x = 0.0
min_y = 0.0
max_x = 20.0
max_y = 10.0

{_SHELVES}
[[docks]]
id = "a"
x = 1.0
y = 1.0

[[docks]]
id = "b"
x = 19.0
y = 1.0

[[chargers]]
id = "c"
x = 10.0
y = 3.0

[robot]
radius = 0.35
max_speed = 1.5
max_turn_rate = 2.0
max_accel = 1.0
start = {{ x = 2.0, y = 2.0, theta = 0.0 }}
battery_wh = 100.0
start_battery = 1.0
drain_wh_per_m = 0.1
drain_wh_per_s = 0.01
charge_wh_per_s = 0.5
low_battery = 0.25

[[tasks]]
id = "t1"
pickup = "a"
drop = "b"
release = 0.0
"""
"""Ten shelves on the line y = 5; the docks and the charger on the floor below it."""

WIDE = ContextSpec(
    name="wide",
    board_keys=("pose", "battery", "goal:*"),
    map_center="pose",
    map_radius=100.0,
    map_kinds=("shelf",),
    event_window=5.0,
    event_kinds=("action_done",),
    event_limit=4,
)
"""Sees every shelf: 3 board keys (one goal), 10 shelves, 4 events: 17 items."""
NEAR = ContextSpec(
    name="near",
    board_keys=("pose", "battery"),
    map_center="pose",
    map_radius=2.1,
    map_kinds=("shelf",),
    event_window=5.0,
    event_kinds=("action_done",),
    event_limit=6,
)
"""Sees at most three shelves at once (its neighbours 2 m either side); the same events."""
ALONG = ContextSpec(name="along", board_keys=("pose",), corridor_width=0.6, map_kinds=("dock",))
"""A corridor that meets the docks at the ends of the routes between them."""


def _with(spec: ContextSpec, **changes: Any) -> ContextSpec:
    return ContextSpec(**{**spec.model_dump(), **changes})


@pytest.fixture(scope="module")
def line(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("line") / "line.toml"
    path.write_text(LINE)
    return path


def test_each_part_of_a_specs_demand_is_bounded_on_the_world(line: Path) -> None:
    world = load_scenario(line)
    (wide,) = demand([WIDE], world, 16).specs
    assert (wide.board, wide.window, wide.corridor, wide.events) == (3, 10, 0, 4)
    (near,) = demand([NEAR], world, 16).specs
    assert (near.board, near.window, near.events) == (2, 3, 6)
    (along,) = demand([ALONG], world, 16).specs
    assert (along.window, along.corridor) == (0, 2)


def test_the_specs_together_count_shared_items_once(line: Path) -> None:
    """pose and battery once, the near window inside the wide one, one event filter at its
    largest limit: 3 + 10 + 6."""
    shared = demand([WIDE, NEAR], load_scenario(line), 16)
    assert (shared.board, shared.map, shared.events, shared.total) == (3, 10, 6, 19)
    assert shared.over
    (warning,) = shared.warnings("wide")[1:]
    assert "the specs checked together (wide, near)" in warning
    assert "map_limit = 7" in warning and "grow the capacity last" in warning
    assert shared.warnings("near") == []


def test_caps_bring_the_demand_under_the_capacity(line: Path) -> None:
    world = load_scenario(line)
    over = demand([WIDE], world, 16)
    assert over.over and "map_limit = 9" in over.warnings("wide")[0]
    for capped in (_with(WIDE, map_limit=5), _with(WIDE, map_share=0.25)):
        fits = demand([capped], world, 16)
        assert not fits.over and fits.warnings("wide") == []
    assert demand([_with(WIDE, map_share=0.25)], world, 16).specs[0].window == 4


def test_check_spec_warns_before_anything_runs(
    line: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "specs"
    folder.mkdir()
    for spec in (WIDE, NEAR):
        data = spec.model_dump(mode="json", exclude_defaults=True)
        lines = [f"{k} = {json.dumps(v)}" for k, v in data.items() if not isinstance(v, dict)]
        (folder / f"{spec.name}.toml").write_text("\n".join(lines) + "\n")
    reports = {r["spec"]["name"]: r for r in check_specs([folder], scenario=str(line), capacity=16)}
    assert reports["wide"]["demand"]["total"] == 17
    assert reports["wide"]["memory"]["total"] == 19 and reports["wide"]["memory"]["over"]
    assert any("share working memory" in w for w in reports["wide"]["warnings"])
    roomy = check_specs([folder], scenario=str(line), capacity=64)
    assert not any("capacity" in w for r in roomy for w in r["warnings"])
    code = main(["check-spec", str(folder), "--scenario", str(line), "--capacity", "16"])
    out = capsys.readouterr().out
    assert code == 0 and "worst-case demand" in out and "more than" in out


def test_caps_without_a_window_or_corridor_to_cap_are_linted() -> None:
    from sim.analysis.speccheck import lint

    idle = ContextSpec(name="idle", map_limit=3, corridor_limit=2)
    warnings = lint(idle)
    assert any("no map window to cap" in w for w in warnings)
    assert any("no corridor to cap" in w for w in warnings)
    assert not any("cap" in w for w in lint(_with(WIDE, map_limit=3)))
