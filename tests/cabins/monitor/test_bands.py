"""The deviation bands: checked by the rule the monitor's settings use, so that bands
built by hand classify as the monitor's own do."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cabins.monitor import DeviationBands, MonitorSettings
from runtime.errors import SettingError


@pytest.mark.parametrize(
    ("numbers", "named"),
    [
        ({"warn": 2.0, "alarm": 1.0}, "alarm (1.0) must be greater than warn (2.0)"),
        ({"hysteresis": 0.5}, "hysteresis (0.5) must be smaller than warn (0.5)"),
        ({"alarm": 0.6, "hysteresis": 0.2}, "the gap between the bands"),
        ({"warn": 0.0}, "warn must be > 0"),
        ({"hysteresis": -0.01}, "hysteresis must be >= 0"),
        ({"alarm": math.inf}, "alarm must be a finite number"),
        ({"warn": True}, "warn must be a finite number"),
        ({"hysteresis": "0.05"}, "hysteresis must be a finite number"),
    ],
)
def test_bands_that_overlap_or_are_no_numbers_are_refused(
    numbers: dict[str, Any], named: str
) -> None:
    with pytest.raises(SettingError, match=r"^DeviationBands: ") as caught:
        DeviationBands(**numbers)
    assert named in str(caught.value)


@given(
    warn=st.floats(0.01, 5.0),
    alarm=st.floats(0.01, 5.0),
    hysteresis=st.floats(0.0, 5.0),
)
def test_bands_are_accepted_exactly_when_the_settings_accept_them(
    warn: float, alarm: float, hysteresis: float
) -> None:
    try:
        MonitorSettings(warn_deviation=warn, alarm_deviation=alarm, hysteresis=hysteresis)
    except SettingError:
        with pytest.raises(SettingError):
            DeviationBands(warn, alarm, hysteresis)
    else:
        assert DeviationBands(warn, alarm, hysteresis).warn == warn
