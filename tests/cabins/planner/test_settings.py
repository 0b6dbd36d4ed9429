"""The planner's settings: defaults as documented, each bound checked, one rule across."""

from __future__ import annotations

import pickle
import re
from typing import Any

import pytest

from cabins.planner import Planner, PlannerSettings
from runtime.errors import SettingError
from runtime.spec import load_spec
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "planner.toml")


def test_every_setting_documents_its_default_and_its_bound() -> None:
    defaults = PlannerSettings()
    schema = PlannerSettings.model_json_schema()["properties"]
    assert set(schema) == set(PlannerSettings.model_fields)
    for name, field in schema.items():
        text = " ".join(field["description"].split())
        default = getattr(defaults, name)
        if default is not None:
            assert re.search(rf"default {re.escape(repr(default))}\b", text), name
        assert re.search(r">= 1|> 0|>= 0|\(0, 1\]|\[0, 1\)", text), name


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"replan_after_ticks": 0}, "replan_after_ticks"),
        ({"charge_timeout_ticks": 1.5}, "charge_timeout_ticks"),
        ({"goal_clear_ticks": True}, "goal_clear_ticks"),
        ({"stall_ticks": -3}, "stall_ticks"),
        ({"low_battery": 1.0}, "low_battery"),
        ({"low_battery": -0.1}, "low_battery"),
        ({"charge_until": 0.0}, "charge_until"),
        ({"charge_until": 1.1}, "charge_until"),
        ({"resolution": 0.0}, "resolution"),
        ({"clearance": -0.1}, "clearance"),
        ({"clearance": float("nan")}, "clearance"),
        ({"obstacle_replan_interval": float("inf")}, "obstacle_replan_interval"),
        ({"obstacle_moved": 0}, "obstacle_moved"),
        ({"route_retry_interval": -1.0}, "route_retry_interval"),
        ({"progress_step": 0.0}, "progress_step"),
        ({"memory_cell": 0}, "memory_cell"),
        ({"memory_radius": -1.0}, "memory_radius"),
        ({"memory_detour": 0.99}, "memory_detour"),
        ({"pass_detour": 0.5}, "pass_detour"),
        ({"pass_slack": -0.5}, "pass_slack"),
        ({"give_way_s": 0.0}, "give_way_s"),
        ({"low_battery": 0.5, "charge_until": 0.5}, "charge_until (0.5) must be above"),
        ({"stall_tick": 3}, "stall_tick: no such setting"),
    ],
)
def test_a_bad_value_is_a_setting_error_naming_it(values: dict[str, Any], named: str) -> None:
    with pytest.raises(SettingError, match=r"^PlannerSettings: ") as caught:
        PlannerSettings(**values)
    assert named in str(caught.value)


def test_the_limits_themselves_are_allowed() -> None:
    edge = PlannerSettings(
        low_battery=0.0,
        charge_until=1.0,
        clearance=0.0,
        memory_detour=1.0,
        pass_detour=1.0,
        pass_slack=0.0,
        stall_ticks=1,
    )
    assert (edge.low_battery, edge.charge_until, edge.stall_ticks) == (0.0, 1.0, 1)
    assert PlannerSettings(low_battery=0.3).charge_until == 0.9


def test_the_planner_takes_its_settings_whole_and_pickles_with_them() -> None:
    settings = PlannerSettings(stall_ticks=3, give_way_s=4.0)
    planner = Planner(SPEC, settings)
    assert planner.settings is settings
    assert Planner(SPEC).settings == PlannerSettings()
    copy = pickle.loads(pickle.dumps(planner))
    assert copy.settings == settings
    with pytest.raises(AttributeError):
        planner.settings = PlannerSettings()  # type: ignore[misc]
    with pytest.raises(TypeError, match="settings must be PlannerSettings, got dict"):
        Planner(SPEC, {"stall_ticks": 3})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Planner(SPEC, stall_ticks=3)  # type: ignore[call-arg]
