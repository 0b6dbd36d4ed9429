"""Settings objects: frozen, keyword-only, checked in one place, errors naming the setting."""

from __future__ import annotations

import math
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import model_validator

from runtime.errors import SettingError
from runtime.settings import Count, Fraction, NonNegative, Positive, Settings


class Demo(Settings):
    """A demonstration."""

    reach: Positive = 1.0
    """How far to look, in metres (> 0)."""
    margin: NonNegative = 0.0
    """Metres kept free (>= 0)."""
    share: Fraction = 0.5
    """A share in (0, 1]."""
    ticks: Count = 3
    """Ticks (>= 1)."""

    @model_validator(mode="after")
    def _margin_inside_reach(self) -> Demo:
        if self.margin >= self.reach:
            raise ValueError(f"margin ({self.margin!r}) must be below reach ({self.reach!r})")
        return self


def test_defaults_keywords_and_replace() -> None:
    demo = Demo(reach=2)
    assert (demo.reach, demo.margin, demo.share, demo.ticks) == (2.0, 0.0, 0.5, 3)
    assert demo.replace(ticks=7).ticks == 7
    assert pickle.loads(pickle.dumps(demo)) == demo
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen error
        demo.reach = 3.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        Demo(2.0)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"reach": 0}, "reach: Input should be greater than 0, got 0"),
        ({"reach": math.nan}, "reach: Input should be a finite number"),
        ({"reach": True}, "reach: Input should be a valid number, got True"),
        ({"ticks": 2.0}, "ticks: Input should be a valid integer, got 2.0"),
        ({"share": 1.5}, "share: Input should be less than or equal to 1"),
        ({"reech": 1.0}, "reech: no such setting"),
        ({"margin": 2.0}, "margin (2.0) must be below reach (1.0)"),
    ],
)
def test_a_bad_value_is_one_setting_error_naming_it(values: dict[str, object], named: str) -> None:
    with pytest.raises(SettingError, match=r"^Demo: ") as caught:
        Demo(**values)
    assert named in str(caught.value)
    with pytest.raises(SettingError, match=r"^planner\.toml \[params\]: ") as caught:
        Demo.from_table(values, where="planner.toml [params]")
    assert named in str(caught.value)


def test_a_table_that_is_not_a_table_is_refused() -> None:
    for bad in ([1], {1: 2}, "reach"):
        with pytest.raises(SettingError, match="expected a table of settings"):
            Demo.from_table(bad, where="x")  # type: ignore[arg-type]


def test_the_docstrings_are_the_schema_descriptions() -> None:
    schema = Demo.model_json_schema()["properties"]
    assert schema["reach"]["description"] == "How far to look, in metres (> 0)."
    assert schema["reach"]["exclusiveMinimum"] == 0


@given(
    st.dictionaries(
        st.sampled_from(["reach", "margin", "share", "ticks", "x"]),
        st.from_type(object) | st.floats() | st.integers(),
    )
)
def test_anything_is_either_settings_or_a_setting_error(values: dict[str, object]) -> None:
    try:
        demo = Demo.from_table(values)
    except SettingError:
        return
    assert 0 <= demo.margin < demo.reach and 0 < demo.share <= 1 and demo.ticks >= 1
