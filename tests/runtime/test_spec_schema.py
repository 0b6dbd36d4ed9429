"""The shipped JSON Schema of a spec file is as strict as the loader.

An editor that validates a spec against ``specs/context-spec.schema.json`` must refuse
what ``load_spec`` refuses, and accept what it accepts: mutants of the shipped specs (one
or more keys replaced by values drawn from good and bad ones) are judged by both, with
the ``jsonschema`` library reading the committed schema file. The one rule a JSON Schema
cannot say (every ``on_missing`` key is one of ``required``) is checked apart.
"""

from __future__ import annotations

import json
import math
import tomllib
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from runtime.patterns import validate_pattern
from runtime.spec import EXACT_KEY_REGEX, PATTERN_REGEX, ContextSpec, json_schema
from tests.support.paths import ROOT

SPECS = ROOT / "specs"
SCHEMA = json.loads((SPECS / "context-spec.schema.json").read_text(encoding="utf-8"))
VALIDATOR = Draft202012Validator(SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)
SHIPPED = {p.stem: tomllib.loads(p.read_text(encoding="utf-8")) for p in SPECS.glob("*.toml")}


def loader_accepts(data: dict[str, Any]) -> bool:
    try:
        ContextSpec.model_validate({"name": "mutant", **data})
    except ValidationError:
        return False
    return True


def holds_nan(value: Any) -> bool:
    """JSON has no NaN, so a JSON Schema cannot refuse one; TOML has, and the loader does."""
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, dict):
        return any(holds_nan(v) for v in value.values())
    if isinstance(value, list):
        return any(holds_nan(v) for v in value)
    return False


def only_cross_field_rule(data: dict[str, Any]) -> bool:
    """Whether the loader refuses ``data`` only for an ``on_missing`` key not in required."""
    on_missing = data.get("on_missing")
    required = data.get("required", [])
    if not isinstance(on_missing, dict) or not isinstance(required, list):
        return False
    fixed = {**data, "on_missing": {k: v for k, v in on_missing.items() if k in required}}
    return fixed != data and loader_accepts(fixed)


texts = st.sampled_from(
    [
        "pose",
        "goal:*",
        "event:action_failed*",
        "map:dock:[ab]*",
        "x[!]]y",
        "goal:[abc",
        "a]b",
        "a b",
        "",
        "x" * 300,
        "retry:conservative",
        "stop:fail_safe",
        "Stop:now",
        "planner",
        "pose?",
        "dock",
    ]
)
numbers = st.sampled_from(
    [0, 1, -1, 16, 2**63, 0.0, 0.5, -0.5, 1.5, 16.0, 1e7, 1e308, math.inf, -math.inf, math.nan]
)
scalars = texts | numbers | st.booleans()
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(texts, inner, max_size=3)
        | st.dictionaries(texts, st.sampled_from([0.5, 1.0, 2.0, "x", ["shelf"]]), max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def mutants(draw: st.DrawFn) -> dict[str, Any]:
    base = dict(SHIPPED[draw(st.sampled_from(sorted(SHIPPED)))])
    fields = [*sorted(SCHEMA["properties"]), "map_raduis"]
    for _ in range(draw(st.integers(1, 3))):
        field = draw(st.sampled_from(fields))
        if draw(st.booleans()) and field in base:
            del base[field]
        else:
            base[field] = draw(values)
    base.pop("name", None)
    return base


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutants())
@example({"event_limit": 16.0})
@example({"event_limit": 2**63})
@example({"event_limit": True})
@example({"map_radius": 5.0})
@example({"map_center": "pose*", "map_radius": 1.0})
@example({"weights": {"goal:[abc": 0.5}})
@example({"board_keys": ["pose", "pose"]})
@example({"required": ["a b"]})
@example({"on_missing": {"goal:*": "Stop:now"}, "required": ["goal:*"]})
@example({"corridor_width": 1e308})
@example({"weights": {"pose": math.nan}})
@example({"relevance": {"delivery": []}, "name": "x"})
@example({"map_limit": 16.0})
@example({"map_limit": 0})
@example({"corridor_limit": True})
@example({"map_share": 1.5})
@example({"map_share": 0})
@example({"map_share": 1})
def test_the_schema_judges_a_mutant_as_the_loader_does(data: dict[str, Any]) -> None:
    by_loader = loader_accepts(data)
    by_schema = VALIDATOR.is_valid(data)
    if by_schema and not by_loader:
        assert only_cross_field_rule(data) or holds_nan(data), (
            f"the schema accepts what the loader refuses: {data}"
        )
    else:
        assert by_schema == by_loader, f"loader {by_loader}, schema {by_schema}: {data}"


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_the_shipped_specs_pass_the_schema(name: str) -> None:
    assert VALIDATOR.is_valid(SHIPPED[name])


def test_the_committed_schema_is_the_generated_one() -> None:
    assert json.loads(json.dumps(json_schema())) == SCHEMA


def test_every_number_in_the_schema_has_bounds() -> None:
    """Bounds on every numeric setting, said in the schema (a fuzzer found ``event_limit =
    2**63`` loading, then crashing the log query)."""

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("number", "integer"):
                assert "maximum" in node or "exclusiveMaximum" in node, where
                assert "minimum" in node or "exclusiveMinimum" in node, where
            for key, value in node.items():
                walk(value, f"{where}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}[{i}]")

    walk(SCHEMA, "schema")


def test_a_map_window_without_its_centre_is_refused_by_both() -> None:
    data = {"map_radius": 5.0}
    assert not loader_accepts(data)
    assert not VALIDATOR.is_valid(data)


pattern_text = st.text(alphabet="ab[]!*? \t:", max_size=8)


@given(pattern_text)
def test_the_pattern_regex_is_the_pattern_check(text: str) -> None:
    import re

    try:
        validate_pattern(text)
        valid = True
    except ValueError:
        valid = False
    assert (re.fullmatch(PATTERN_REGEX, text) is not None) == valid
    if valid and not any(c in text for c in "*?["):
        assert re.fullmatch(EXACT_KEY_REGEX, text) is not None
