"""The crowd watch's settings: read from the spec, checked, and one clear error when bad."""

from pathlib import Path

import pytest
from crowd_watch import CrowdSettings, CrowdWatch
from shapely.geometry import Point

from runtime import Feature, SettingError, load_spec
from runtime.settings import settings_from_spec
from runtime.testing import make_view, run_step

SPEC = load_spec(Path(__file__).with_name("crowd_watch.toml"))


def person(i: int) -> Feature:
    return Feature(f"obstacle:p{i}", Point(i, 1.0), "obstacle", tags=frozenset({"person"}))


def test_the_spec_params_tune_the_cabin() -> None:
    settings = settings_from_spec(CrowdWatch, SPEC)  # what `sim run --cabin` does
    assert settings == CrowdSettings(crowd=2)
    cabin = CrowdWatch(SPEC, settings)
    view = make_view(SPEC, board={"pose": (0.0, 0.0, 0.0)}, features=[person(1), person(2)])
    assert [e.data["kind"] for e in run_step(cabin, view).events] == ["crowd"]


def test_a_bad_value_is_one_error_naming_it() -> None:
    with pytest.raises(SettingError, match="crowd: Input should be greater than or equal to 1"):
        CrowdSettings(crowd=0)
    with pytest.raises(SettingError, match="no such setting"):
        CrowdSettings(crowds=2)
