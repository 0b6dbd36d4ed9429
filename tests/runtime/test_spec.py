"""Context specs: loading, validation errors, weight lookup and the JSON Schema."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from runtime.patterns import matches, specificity
from runtime.spec import ContextSpec, SpecError, json_schema, load_spec, load_specs, main
from tests.support.paths import ROOT

SCHEMA_FILE = ROOT / "specs" / "context-spec.schema.json"

GOOD = """\
name = "planner"
description = "Replans the route when goals change."
board_keys = ["pose", "route", "goal:*", "safety:*", "constraint:*"]
default_weight = 0.3
required = ["goal:*", "safety:*", "constraint:*", "event:action_failed*"]
map_center = "pose"
map_radius = 8
map_kinds = ["shelf", "dock", "charger"]
corridor_width = 1.5
event_window = 30.0
event_kinds = ["action_failed", "goal_set"]
event_limit = 8

[weights]
"goal:*" = 1.0
pose = 0.9
"event:*" = 0.4

[relevance]
delivery = ["shelf", "dock"]
charge = ["charger"]

[on_missing]
"event:action_failed*" = "retry:conservative"
"constraint:*" = "alarm:constraint_check"
"safety:*" = "stop:fail_safe"
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def spec_error(folder: Path, name: str, text: str) -> SpecError:
    path = write(folder, name, text)
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    return caught.value


# --- loading -------------------------------------------------------------------------


def test_good_spec_loads_and_round_trips(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, "planner.toml", GOOD))
    assert spec.name == "planner"
    assert spec.map_radius == 8.0
    assert spec.relevance["delivery"] == ("shelf", "dock")
    assert spec.reaction_for("safety:*") == "stop:fail_safe"
    assert ContextSpec.model_validate(spec.model_dump()) == spec
    assert ContextSpec.model_validate_json(spec.model_dump_json()) == spec
    dumped = spec.model_dump()
    assert type(dumped["weights"]) is dict and type(dumped["on_missing"]) is dict


def test_name_defaults_to_the_file_stem(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, "executor.toml", 'board_keys = ["pose"]\n'))
    assert spec.name == "executor"


def test_message_uses_the_path_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "specs/planner.toml", '[weights]\n"goal:*" = 1.5\n')
    with pytest.raises(SpecError) as caught:
        load_spec("specs/planner.toml")
    assert str(caught.value) == (
        'specs/planner.toml: weights."goal:*": Input should be less than or equal to 1 (got 1.5)'
    )
    assert caught.value.path == "specs/planner.toml"
    assert caught.value.problems == (
        'weights."goal:*": Input should be less than or equal to 1 (got 1.5)',
    )


def test_unknown_key_suggests_the_close_one(tmp_path: Path) -> None:
    err = spec_error(tmp_path, "x.toml", "map_raduis = 3\n")
    expected = "map_raduis: unknown key (did you mean 'map_radius'?)"
    assert str(err) == f"{tmp_path / 'x.toml'}: {expected}"


def test_bad_glob_in_required_names_the_index(tmp_path: Path) -> None:
    err = spec_error(tmp_path, "x.toml", 'required = ["goal:*", "goal:[abc"]\n')
    assert err.problems == ("required[1]: pattern 'goal:[abc' has an unclosed '[' at position 5",)
    assert str(err).startswith(f"{tmp_path / 'x.toml'}: required[1]: ")


def test_bad_glob_in_board_keys_and_weight_keys(tmp_path: Path) -> None:
    text = 'board_keys = ["goal:[abc"]\n[weights]\n"map:]x" = 0.5\n'
    err = spec_error(tmp_path, "x.toml", text)
    assert err.problems[0].startswith("board_keys[0]: pattern 'goal:[abc' has an unclosed '['")
    assert err.problems[1].startswith("weights.\"map:]x\": pattern 'map:]x' has an unmatched ']'")
    assert len(str(err).splitlines()) == 2


def test_toml_syntax_error_keeps_line_and_column(tmp_path: Path) -> None:
    err = spec_error(tmp_path, "x.toml", 'name = "x"\nevent_limit = 4\nweights = { a = }\n')
    assert str(err) == f"{tmp_path / 'x.toml'}: line 3, column 17: invalid TOML: Invalid value"


def test_toml_error_at_end_of_document(tmp_path: Path) -> None:
    err = spec_error(tmp_path, "x.toml", 'name = "x')
    assert err.problems == ("end of document: invalid TOML: Unterminated string",)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('default_weight = "0.5"\n', "default_weight: Input should be a valid number (got '0.5')"),
        ("event_limit = 0\n", "event_limit: Input should be greater than or equal to 1 (got 0)"),
        ("map_radius = -1\n", "map_radius: Input should be greater than or equal to 0 (got -1)"),
        ("event_window = inf\n", "event_window: Input should be a finite number (got inf)"),
        (
            'name = "Big Cabin"\n',
            "name: String should match pattern '^[a-z][a-z0-9_-]*$' (got 'Big Cabin')",
        ),
        (
            'map_center = "pose*"\n',
            "map_center: 'pose*' is a glob; this must be one exact board key",
        ),
        (
            'required = ["a"]\n[on_missing]\na = "Stop Now"\n',
            "on_missing.a: String should match pattern '^[a-z_]+:[a-z0-9_.-]+$' (got 'Stop Now')",
        ),
        ('board_keys = ["a", "b", "a"]\n', "board_keys[2]: 'a' is already at board_keys[0]"),
    ],
)
def test_invalid_values_are_named(tmp_path: Path, text: str, problem: str) -> None:
    assert spec_error(tmp_path, "x.toml", text).problems == (problem,)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"nope\.toml: file not found"):
        load_spec(tmp_path / "nope.toml")


def test_load_specs_sorted_by_file_name_and_skips_other_files(tmp_path: Path) -> None:
    write(tmp_path, "b.toml", 'name = "alpha"\n')
    write(tmp_path, "a.toml", 'name = "beta"\n')
    write(tmp_path, "context-spec.schema.json", "{}")
    write(tmp_path, ".#a.toml", "not toml at all [")
    specs = load_specs(tmp_path)
    assert list(specs) == ["beta", "alpha"]
    assert specs["alpha"].name == "alpha"


def test_load_specs_refuses_a_duplicate_cabin_naming_both_files(tmp_path: Path) -> None:
    write(tmp_path, "a.toml", 'name = "planner"\n')
    write(tmp_path, "b.toml", 'name = "planner"\n')
    with pytest.raises(SpecError) as caught:
        load_specs(tmp_path)
    message = str(caught.value)
    assert str(tmp_path / "a.toml") in message and str(tmp_path / "b.toml") in message
    assert "'planner'" in message


def test_load_specs_refuses_empty_and_missing_folders(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no spec files"):
        load_specs(tmp_path)
    with pytest.raises(SpecError, match="missing: folder not found"):
        load_specs(tmp_path / "missing")


def test_load_specs_reports_the_broken_file(tmp_path: Path) -> None:
    write(tmp_path, "a.toml", 'name = "a"\n')
    write(tmp_path, "b.toml", "event_limit = 0\n")
    with pytest.raises(SpecError) as caught:
        load_specs(tmp_path)
    assert caught.value.path == str(tmp_path / "b.toml")


# --- the model -----------------------------------------------------------------------


def test_weight_for_picks_the_most_specific_pattern() -> None:
    spec = ContextSpec(
        name="t",
        weights={"*": 0.1, "goal:*": 0.6, "goal:deliver*": 0.9, "pose": 0.8, "pose*": 0.2},
        default_weight=0.3,
    )
    assert spec.weight_for("goal:deliver-7") == 0.9
    assert spec.weight_for("goal:charge") == 0.6
    assert spec.weight_for("anything") == 0.1
    assert spec.weight_for("pose") == 0.8  # an exact key beats any glob
    assert spec.weight_for("pose2") == 0.2
    assert ContextSpec(name="t", default_weight=0.3).weight_for("pose") == 0.3


def test_weight_for_breaks_ties_by_declared_order() -> None:
    first = ContextSpec(name="t", weights={"goal:a*": 0.7, "goal:*b": 0.2})
    second = ContextSpec(name="t", weights={"goal:*b": 0.2, "goal:a*": 0.7})
    assert first.weight_for("goal:ab") == 0.7
    assert second.weight_for("goal:ab") == 0.2


def test_the_model_is_frozen_and_hashable() -> None:
    spec = ContextSpec(name="t", weights={"a": 0.5}, relevance={"delivery": ["shelf"]})
    with pytest.raises(ValidationError, match="frozen"):
        spec.map_radius = 3.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.weights["a"] = 1.0  # type: ignore[index]
    spec.weight_for("a")  # fills the lookup cache, which must not affect equality
    twin = ContextSpec(name="t", weights={"a": 0.5}, relevance={"delivery": ["shelf"]})
    assert spec == twin and hash(spec) == hash(twin)


def test_pickle_round_trip_keeps_lookups() -> None:
    spec = ContextSpec(name="t", weights={"goal:*": 0.9})
    copy = pickle.loads(pickle.dumps(spec))
    assert copy == spec and copy.weight_for("goal:x") == 0.9
    err = pickle.loads(pickle.dumps(SpecError("a.toml", ["x: bad"])))
    assert (err.path, err.problems, str(err)) == ("a.toml", ("x: bad",), "a.toml: x: bad")


def test_on_missing_key_must_be_required() -> None:
    with pytest.raises(ValidationError) as caught:
        ContextSpec(name="t", required=["goal:*"], on_missing={"safety:*": "stop:fail_safe"})
    (error,) = caught.value.errors()
    assert error["loc"] == ("on_missing", "safety:*")
    assert "not one of required" in error["msg"]


def test_map_radius_needs_map_center() -> None:
    with pytest.raises(ValidationError) as caught:
        ContextSpec(name="t", map_radius=5.0)
    assert caught.value.errors()[0]["loc"] == ("map_radius",)
    assert ContextSpec(name="t", map_radius=5.0, map_center="pose").map_center == "pose"


def test_reaction_for_exact_pattern_then_matching_key() -> None:
    spec = ContextSpec(
        name="t",
        required=["event:*", "event:action_failed*"],
        on_missing={"event:*": "alarm:events", "event:action_failed*": "retry:conservative"},
    )
    assert spec.reaction_for("event:*") == "alarm:events"
    assert spec.reaction_for("event:action_failed:lift") == "retry:conservative"
    assert spec.reaction_for("event:goal_set") == "alarm:events"
    assert spec.reaction_for("pose") is None


# --- the JSON Schema -----------------------------------------------------------------


def test_committed_schema_is_up_to_date() -> None:
    expected = json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
    committed = SCHEMA_FILE.read_text(encoding="utf-8") if SCHEMA_FILE.exists() else ""
    assert committed == expected, (
        f"{SCHEMA_FILE} is out of date with runtime/spec.py; regenerate it with\n"
        "    python -m runtime.spec --schema > specs/context-spec.schema.json"
    )


def test_schema_describes_files(capsys: pytest.CaptureFixture[str]) -> None:
    schema = json_schema()
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert "$id" not in schema and schema["title"]
    assert "name" not in schema.get("required", [])  # the loader falls back to the file stem
    assert schema["properties"]["weights"]["additionalProperties"]["maximum"] == 1
    assert all(prop.get("description") for prop in schema["properties"].values())
    assert main(["--schema"]) == 0
    assert json.loads(capsys.readouterr().out) == schema


def test_cli_checks_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write(tmp_path, "good/planner.toml", GOOD)
    bad = write(tmp_path, "bad.toml", "map_raduis = 1\n")
    assert main([str(good.parent)]) == 0
    assert main([str(good), str(bad)]) == 1
    captured = capsys.readouterr()
    assert "ok (planner)" in captured.out
    assert "map_raduis: unknown key" in captured.err


# --- properties ----------------------------------------------------------------------

segment = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=5)
exact_key = st.builds(lambda a, b: f"{a}:{b}", segment, segment) | segment
pattern = st.builds(
    lambda key, suffix: key + suffix, exact_key, st.sampled_from(["", "*", ":*", "?", "[0-9]*"])
)
unit = st.floats(min_value=0, max_value=1)
distance = st.floats(min_value=0, max_value=1e6)
labels = st.lists(segment, max_size=3).map(tuple)
reaction = st.from_regex(r"[a-z_]{1,6}:[a-z0-9_.-]{1,6}", fullmatch=True)


@st.composite
def spec_fields(draw: st.DrawFn) -> dict[str, Any]:
    required = draw(st.lists(pattern, unique=True, max_size=4))
    handled = draw(st.lists(st.sampled_from(required), unique=True)) if required else []
    radius = draw(distance)
    center = draw(exact_key) if radius > 0 else draw(st.none() | exact_key)
    return {
        "name": draw(st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True)),
        "description": draw(st.text(st.characters(codec="utf-8"), max_size=20)),
        "board_keys": draw(st.lists(pattern, unique=True, max_size=4)),
        "weights": draw(st.dictionaries(pattern, unit, max_size=4)),
        "default_weight": draw(unit),
        "required": required,
        "map_center": center,
        "map_radius": radius,
        "map_kinds": draw(labels),
        "map_tags": draw(labels),
        "route_key": draw(exact_key),
        "corridor_width": draw(distance),
        "event_window": draw(distance),
        "event_kinds": draw(labels),
        "event_tags": draw(labels),
        "event_limit": draw(st.integers(min_value=1, max_value=1000)),
        "relevance": draw(st.dictionaries(segment, labels, max_size=3)),
        "on_missing": {p: draw(reaction) for p in handled},
    }


@given(spec_fields())
def test_any_valid_spec_survives_dump_and_validate(fields: dict[str, Any]) -> None:
    spec = ContextSpec(**fields)
    again = ContextSpec.model_validate(spec.model_dump())
    assert again == spec and hash(again) == hash(spec)
    assert ContextSpec.model_validate_json(spec.model_dump_json()) == spec


@given(spec_fields(), exact_key)
def test_weight_for_agrees_with_the_rule(fields: dict[str, Any], key: str) -> None:
    spec = ContextSpec(**fields)
    weights: dict[str, float] = fields["weights"]
    if key in weights:
        expected = weights[key]
    else:
        hits = [(p, w) for p, w in weights.items() if matches(key, p)]
        expected = fields["default_weight"]
        if hits:  # max() keeps the first of equals: ties go to the first declared
            expected = max(hits, key=lambda pw: specificity(pw[0]))[1]
    assert spec.weight_for(key) == expected
    assert spec.weight_for(key) == expected  # and again, from the cache


def test_check_spec_warns_about_settings_that_do_nothing() -> None:
    from sim.analysis.speccheck import lint

    quiet = ContextSpec(
        name="q", map_center="pose", map_kinds=("shelf",), event_kinds=("action_failed",)
    )
    warnings = lint(quiet)
    assert "map_center is 'pose' but map_radius is 0: no map window" in warnings
    assert any(w.startswith("map_kinds/map_tags are set") for w in warnings)
    assert "event_kinds/event_tags are set but event_window is 0: no events" in warnings
    working = ContextSpec(
        name="w",
        map_center="pose",
        map_radius=5.0,
        map_kinds=("shelf",),
        event_window=2.0,
        event_kinds=("action_failed",),
    )
    assert lint(working) == []
    sync = ContextSpec(name="s", timing={"deadline": 2.0, "latency": 1.0})
    assert lint(sync) == [
        'timing.deadline, timing.latency set but timing.mode is "sync": only asynchronous '
        "cabins use it"
    ]
    assert lint(ContextSpec(name="a", timing={"mode": "async", "deadline": 2.0})) == []
