"""Names of generated worlds (``sim.world.names``, ``sim.world.families``): ``gen:N`` and
``hard:N``, one world or a range, read the same everywhere a scenario is named; a bad name
is one clear ``SettingError``, which the command line turns into exit status 2."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.errors import SettingError
from sim.world.families import FAMILIES, family_worlds, load_world, parse_family
from sim.world.generate import generate, parse_generated
from sim.world.hard import generate_hard
from sim.world.names import MAX_WORLDS, parse_name


@pytest.mark.parametrize(
    ("text", "family", "seeds"),
    [
        ("hard:7", "hard", [7]),
        ("hard:0-4", "hard", [0, 1, 2, 3, 4]),
        ("gen:12-12", "gen", [12]),
        ("gen:007", "gen", [7]),
        (f"hard:0-{MAX_WORLDS - 1}", "hard", list(range(MAX_WORLDS))),
    ],
)
def test_good_names_name_their_family_and_seeds(text: str, family: str, seeds: list[int]) -> None:
    found = parse_family(text)
    assert found is not None
    assert found[0] is FAMILIES[family]
    assert found[1] == seeds


@pytest.mark.parametrize(
    "text", ["warehouse", "narrow_aisles", "my.toml", "dir/hard:3", "./gen:1", "hard:3.toml"]
)
def test_scenario_names_and_paths_are_not_family_names(text: str) -> None:
    assert parse_family(text) is None


BAD = {
    "hard:": "a generated world is hard:N or hard:A-B",
    "hard:x": "a generated world is hard:N or hard:A-B",
    "hard:-1": "a generated world is hard:N",
    "hard: 3": "a generated world is hard:N",
    "hard:+3": "a generated world is hard:N",
    "hard:3-": "a generated world is hard:N",
    "hard:3-4-5": "a generated world is hard:N",
    "hard:\u0663": "a generated world is hard:N",  # an Arabic-Indic three
    "hard:3\n": "a generated world is hard:N",
    "gen:1e3": "a generated world is gen:N",
    "hard:5-2": "the first seed must not be above the last",
    f"hard:0-{MAX_WORLDS}": f"at most {MAX_WORLDS} generated worlds at once",
    "hrad:3": "no family of generated worlds named 'hrad' (did you mean 'hard'?)",
    "HARD:3": "no family of generated worlds named 'HARD'",
    "gne:0-9": "no family of generated worlds named 'gne' (did you mean 'gen'?)",
    "hard:" + "9" * 5000: "a generated world is hard:N",
}


@pytest.mark.parametrize("text", sorted(BAD))
def test_a_bad_name_is_one_clear_error(text: str) -> None:
    with pytest.raises(SettingError) as info:
        parse_family(text)
    message = str(info.value)
    assert BAD[text] in message
    assert message.startswith(repr(text)[:40])


def test_an_unknown_family_lists_the_families() -> None:
    with pytest.raises(SettingError, match=r"the families: gen:N, small .*; hard:N, dead-end"):
        parse_family("mine:3")


@settings(max_examples=200, deadline=None)
@given(
    text=st.one_of(
        st.text(max_size=30),
        st.builds(
            lambda head, tail: head + tail,
            st.sampled_from(["gen:", "hard:", "hard:1", "gen:0-", "hard:9-", "x:"]),
            st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
        ),
    )
)
def test_any_text_is_a_family_name_or_none_or_one_setting_error(text: str) -> None:
    try:
        found = parse_family(text)
    except SettingError as exc:
        assert str(exc).startswith(repr(text)) and "\n" not in str(exc)
        return
    if found is not None:
        family, seeds = found
        assert family.name in FAMILIES
        assert seeds == list(range(seeds[0], seeds[-1] + 1)) and seeds[0] >= 0
        assert len(seeds) <= MAX_WORLDS


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.sampled_from(sorted(BAD)) | st.builds("hard:{}".format, st.text(min_size=1, max_size=6))
)
def test_the_command_line_turns_a_bad_name_into_exit_2(text: str, capsys: Any) -> None:
    from sim.cli.app import main

    try:
        if parse_family(text) is not None:
            return  # a good name: runs, not this test's business
    except SettingError:
        pass
    else:
        return
    capsys.readouterr()
    for argv in (["run", "--scenario", text, "--ticks", "1"], ["campaign", "--scenario", text]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and "\n" not in err, err
        assert "Traceback" not in err


def test_parse_generated_reads_gen_names_through_the_same_grammar() -> None:
    assert parse_generated("gen:3-5") == [3, 4, 5]
    assert parse_generated("hard:3") is None
    assert parse_generated("warehouse") is None
    with pytest.raises(SettingError, match="a generated world is gen:N"):
        parse_generated("gen:x")


@pytest.mark.slow
def test_a_family_name_draws_its_worlds_in_seed_order() -> None:
    worlds = family_worlds("hard:1-2")
    assert worlds is not None
    assert list(worlds) == ["hard:1", "hard:2"]
    assert worlds["hard:2"] == generate_hard(2)
    assert family_worlds("warehouse") is None
    assert load_world("gen:4") == generate(4)
    assert load_world("hard:1") == worlds["hard:1"]
    assert load_world("warehouse").name == "warehouse"
    with pytest.raises(SettingError, match="'hard:1-2' names 2 worlds; give one, hard:1 say"):
        load_world("hard:1-2")


def test_the_grammar_takes_any_table_of_families() -> None:
    assert parse_name("mine:3", {"mine": "my worlds"}) == ("mine", [3])
    with pytest.raises(SettingError, match="the families: mine:N, my worlds"):
        parse_name("gen:3", {"mine": "my worlds"})
