"""The monitor's settings: defaults, bounds and the band rules, checked in one place."""

from __future__ import annotations

import math
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cabins.monitor import Monitor, MonitorSettings
from runtime import load_spec
from runtime.errors import SettingError
from tests.support.paths import ROOT

SPEC = load_spec(ROOT / "specs" / "monitor.toml")

DEFAULTS = {
    "warn_deviation": 0.5,
    "alarm_deviation": 1.0,
    "hysteresis": 0.05,
    "history": 200,
    "stop_margin": 0.1,
    "obstacle_margin": 0.1,
    "closing_speed": 1e-3,
    "hold_fraction": 0.5,
    "hold_release": 1.0,
    "episode_gap": 1.0,
    "status_step": 0.05,
    "slow_speed": 0.5,
    "growth": 0.05,
    "growth_window": 0.5,
    "contact_margin": 0.05,
    "clear_after": 0.5,
}


def test_the_defaults_are_the_monitors_and_a_monitor_without_settings_uses_them() -> None:
    settings = MonitorSettings()
    assert settings.model_dump() == DEFAULTS
    assert Monitor(SPEC).settings == settings
    chosen = MonitorSettings(stop_margin=0.2)
    assert Monitor(SPEC, chosen).settings is chosen
    assert pickle.loads(pickle.dumps(chosen)) == chosen


def test_every_setting_documents_its_unit_bound_and_default() -> None:
    schema = MonitorSettings.model_json_schema()["properties"]
    assert set(schema) == set(DEFAULTS)
    for name, field in schema.items():
        text = " ".join(field["description"].split())
        assert any(u in text for u in ("metres", "seconds", "m/s", "samples", "fraction")), name
        assert any(b in text for b in ("> 0", ">= 0", ">= 1", "[0, 1]")), name
        assert f"default {DEFAULTS[name]:g}" in text, name


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"warn_deviation": 1.0, "alarm_deviation": 0.5}, "alarm_deviation (0.5) must be greater"),
        ({"warn_deviation": 1.0, "alarm_deviation": 1.0}, "alarm_deviation (1.0) must be greater"),
        ({"hysteresis": 0.5}, "hysteresis (0.5) must be smaller than warn_deviation (0.5)"),
        ({"alarm_deviation": 0.6, "hysteresis": 0.1}, "the gap between the bands"),
        ({"stop_margin": -0.1}, "stop_margin"),
        ({"history": 0}, "history"),
        ({"history": 2.0}, "history"),
        ({"hold_fraction": 1.01}, "hold_fraction"),
        ({"hold_release": 0.0}, "hold_release"),
        ({"episode_gap": math.inf}, "episode_gap"),
        ({"slow_speed": math.nan}, "slow_speed"),
        ({"growth": True}, "growth"),
        ({"growth_window": "0.5"}, "growth_window"),
        ({"margin": 0.1}, "margin: no such setting"),
    ],
)
def test_a_bad_value_is_one_setting_error_naming_it(values: dict[str, Any], named: str) -> None:
    with pytest.raises(SettingError, match=r"^MonitorSettings: ") as caught:
        MonitorSettings(**values)
    assert named in str(caught.value)


def test_the_bounds_the_monitor_accepted_before_are_accepted() -> None:
    edge = MonitorSettings(
        hysteresis=0.0,
        stop_margin=0.0,
        obstacle_margin=0.0,
        closing_speed=0.0,
        hold_fraction=0.0,
        episode_gap=0.0,
        contact_margin=0.0,
        clear_after=0.0,
        history=1,
    )
    assert edge.hold_fraction == 0.0 and MonitorSettings(hold_fraction=1.0).hold_fraction == 1.0
    assert isinstance(MonitorSettings(stop_margin=1).stop_margin, float)


@given(
    warn=st.floats(0.01, 5.0),
    alarm=st.floats(0.01, 5.0),
    hysteresis=st.floats(0.0, 5.0),
)
def test_the_bands_are_refused_exactly_when_they_overlap(
    warn: float, alarm: float, hysteresis: float
) -> None:
    fine = alarm > warn and hysteresis < min(warn, alarm - warn)
    try:
        settings = MonitorSettings(
            warn_deviation=warn, alarm_deviation=alarm, hysteresis=hysteresis
        )
    except SettingError:
        assert not fine
        return
    assert fine
    bands = Monitor(SPEC, settings)._deviation.bands
    assert (bands.warn, bands.alarm, bands.hysteresis) == (warn, alarm, hysteresis)


def test_the_settings_are_read_only_and_must_be_monitor_settings() -> None:
    monitor = Monitor(SPEC)
    with pytest.raises(AttributeError):
        monitor.settings = MonitorSettings(stop_margin=0.2)  # type: ignore[misc]
    with pytest.raises(TypeError, match="settings must be MonitorSettings, got dict"):
        Monitor(SPEC, {"stop_margin": 0.2})  # type: ignore[arg-type]
