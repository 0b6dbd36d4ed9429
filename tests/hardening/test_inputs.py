"""Bad input files: every loader says what is wrong with the file, never a traceback.

Specs, scenarios and fault files are read through one reader (``runtime.tomlfile.
read_toml``), so each of its refusals holds for all three: a missing file, a folder, bytes
that are not UTF-8, invalid TOML, TOML nested too deep to parse, values nested deeper than
``MAX_DEPTH``, and a file over ``MAX_BYTES``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.errors import TickworkError
from runtime.spec import load_spec
from runtime.tomlfile import MAX_BYTES, MAX_DEPTH
from sim import cli
from sim.faults.model import load_faults
from sim.world.scenario import load_scenario

LOADERS: dict[str, Callable[[Path], Any]] = {
    "spec": load_spec,
    "scenario": load_scenario,
    "faults": load_faults,
}

BAD_FILES: dict[str, tuple[Callable[[Path], None], str]] = {
    "a folder": (lambda p: p.mkdir(), "is a folder"),
    "not UTF-8": (lambda p: p.write_bytes(b"name = \xff\xfe\n"), "not UTF-8"),
    "invalid TOML": (lambda p: p.write_text("name = [\n"), "invalid TOML"),
    "nested past the parser": (
        lambda p: p.write_text("x = " + "[" * 2000 + "]" * 2000),
        "nested deeper",
    ),
    "nested past MAX_DEPTH": (
        lambda p: p.write_text("x = " + "[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2)),
        "nested deeper",
    ),
    "too big": (lambda p: p.write_bytes(b"# " + b"x" * MAX_BYTES + b"\n"), "at most"),
}


@pytest.mark.parametrize("loader", sorted(LOADERS))
@pytest.mark.parametrize("bad", sorted(BAD_FILES))
def test_every_loader_refuses_a_bad_file_with_its_name_and_why(
    tmp_path: Path, loader: str, bad: str
) -> None:
    make, words = BAD_FILES[bad]
    path = tmp_path / "input.toml"
    make(path)
    with pytest.raises(TickworkError) as caught:
        LOADERS[loader](path)
    assert str(path) in str(caught.value) and words in str(caught.value)


@pytest.mark.parametrize(
    ("flag", "name"), [("--specs", "specs"), ("--scenario", "s.toml"), ("--faults", "f.toml")]
)
def test_the_cli_turns_a_bad_input_file_into_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, name: str
) -> None:
    target = tmp_path / name
    if flag == "--specs":
        target.mkdir()
        (target / "planner.toml").write_bytes(b"\xff")
    else:
        target.mkdir()  # a folder where a file is expected
    assert cli.main(["run", flag, str(target), "--ticks", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err and str(target) in err


TOML_ATOMS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.text(max_size=8),
)
TOML_TEXT = st.recursive(TOML_ATOMS, lambda inner: st.lists(inner, max_size=4), max_leaves=20).map(
    lambda v: repr(v).replace("True", "true").replace("False", "false")
)


@settings(max_examples=60, deadline=None)
@given(
    key=st.sampled_from(
        ["name", "board_keys", "weights", "map_radius", "event_limit", "floor", "robot", "fault"]
    ),
    value=TOML_TEXT,
    loader=st.sampled_from(sorted(LOADERS)),
)
def test_any_value_under_any_key_loads_or_is_a_clear_error(
    tmp_path_factory: pytest.TempPathFactory, key: str, value: str, loader: str
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "input.toml"
    path.write_text(f"{key} = {value}\n")
    try:
        LOADERS[loader](path)
    except TickworkError as exc:
        assert str(path) in str(exc)
