"""The executor's settings: the defaults it always had, each bound checked, documented."""

from __future__ import annotations

import math
from typing import Any

import pytest

from cabins.executor import Executor, ExecutorSettings
from runtime import load_spec
from runtime.errors import SettingError
from tests.support.paths import SPECS

DEFAULTS = {
    "lookahead": 0.8,
    "arrive_fraction": 0.5,
    "approach_distance": 2.0,
    "approach_speed": 0.3,
    "max_approach_gap": 1.5,
    "obstacle_margin": 0.25,
    "accept_margin": 0.05,
    "blind_max_speed": 0.5,
    "charge_until": 0.9,
    "outcome_timeout_ticks": 40,
}


def test_the_defaults_are_the_executors_own() -> None:
    settings = ExecutorSettings()
    assert {name: getattr(settings, name) for name in DEFAULTS} == DEFAULTS
    assert set(ExecutorSettings.model_fields) == set(DEFAULTS)


def test_every_setting_says_its_default_and_bound() -> None:
    schema = ExecutorSettings.model_json_schema()["properties"]
    for name, default in DEFAULTS.items():
        description = " ".join(schema[name]["description"].split())
        assert f"default {default}" in description, name
        assert any(bound in description for bound in ("> 0", ">= 0", ">= 1", "(0, 1]")), name


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("lookahead", 0.0),
        ("approach_speed", -1.0),
        ("max_approach_gap", math.inf),
        ("obstacle_margin", -0.01),
        ("accept_margin", math.nan),
        ("arrive_fraction", 1.01),
        ("charge_until", 0.0),
        ("blind_max_speed", True),
        ("outcome_timeout_ticks", 0),
        ("outcome_timeout_ticks", 4.0),
    ],
)
def test_a_bad_value_is_refused_naming_the_setting(name: str, bad: Any) -> None:
    with pytest.raises(SettingError, match=rf"^ExecutorSettings: {name}: "):
        ExecutorSettings(**{name: bad})


def test_the_bounds_themselves_are_allowed() -> None:
    edge = ExecutorSettings(obstacle_margin=0, accept_margin=0.0, arrive_fraction=1, charge_until=1)
    assert (edge.obstacle_margin, edge.arrive_fraction, edge.charge_until) == (0, 1, 1)
    assert ExecutorSettings.from_table({"outcome_timeout_ticks": 1}).outcome_timeout_ticks == 1


def test_the_executor_takes_its_settings_object_and_shows_it_read_only() -> None:
    spec = load_spec(SPECS / "executor.toml")
    chosen = ExecutorSettings(lookahead=1.0)
    executor = Executor(spec, chosen)
    assert executor.settings is chosen and Executor(spec).settings == ExecutorSettings()
    with pytest.raises(AttributeError):
        executor.settings = ExecutorSettings()  # type: ignore[misc]
    with pytest.raises(TypeError, match="settings must be ExecutorSettings, got dict"):
        Executor(spec, {"lookahead": 1.0})  # type: ignore[arg-type]
