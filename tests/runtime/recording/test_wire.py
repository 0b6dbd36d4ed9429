"""The wire form of records (runtime.recording.wire): generated records of every channel
go to their wire message and back unchanged, and the wire message uses only the shapes
its schema allows."""

from __future__ import annotations

import json
import types
from typing import Annotated, Any, Literal, NotRequired, Union, get_args, get_origin

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typing_extensions import get_type_hints, is_typeddict

from runtime.recording.format import ALL_CHANNELS, Channel, Json
from runtime.recording.wire import OneOf

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
NUMBERS = st.floats(allow_nan=False, allow_infinity=False, width=64)


def _optional(tp: Any) -> Any | None:
    """X of ``X | None``, else None."""
    if get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp):
        return next(a for a in get_args(tp) if a is not type(None))
    return None


def records(tp: Any) -> st.SearchStrategy[Any]:
    if tp is Json or tp is Any:
        return JSON_VALUES
    if tp is int:
        return st.integers(-(2**53), 2**53)
    if tp is float:
        return NUMBERS
    if tp is bool:
        return st.booleans()
    if tp is str:
        return st.text(max_size=6)
    origin = get_origin(tp)
    if origin is Annotated:
        base, *extras = get_args(tp)
        enums = [e for e in extras if isinstance(e, OneOf)]
        return st.sampled_from(list(enums[0].values.values())) if enums else records(base)
    if origin is Literal:
        return st.sampled_from(get_args(tp))
    inner = _optional(tp)
    if inner is not None:
        return st.none() | records(inner)
    if origin is list:
        return st.lists(records(get_args(tp)[0]), max_size=2)
    if origin is dict:
        return st.dictionaries(st.text(max_size=5), records(get_args(tp)[1]), max_size=3)
    assert is_typeddict(tp), tp
    hints = get_type_hints(tp, include_extras=True)
    required, optional = {}, {}
    for name, hint in hints.items():
        if get_origin(hint) is NotRequired:
            hint = get_args(hint)[0]
            # left out rather than None: the wire form cannot tell the two apart
            value = _optional(hint)
            optional[name] = records(value if value is not None else hint)
        else:
            required[name] = records(hint)
    return st.fixed_dictionaries(required, optional=optional)


@pytest.mark.slow
@pytest.mark.parametrize("topic", list(ALL_CHANNELS))
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_every_record_goes_to_the_wire_and_back_unchanged(topic: str, data: st.DataObject) -> None:
    channel: Channel[Any] = ALL_CHANNELS[topic]
    record = data.draw(records(channel.record))
    wire = json.loads(json.dumps(channel.encode(record)))
    assert _fits(wire, channel.schema()), wire
    assert channel.decode(wire) == channel.parse(record)


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    """``value`` has the shape ``schema`` (in the forms the wire uses) says."""
    if "oneOf" in schema:
        return value in [a["const"] for a in schema["oneOf"]]
    kind = schema["type"]
    if kind == "object":
        props = schema["properties"]
        return (
            isinstance(value, dict)
            and set(value) <= set(props)
            and set(schema.get("required", [])) <= set(value)
            and all(_fits(v, props[k]) for k, v in value.items())
        )
    if kind == "array":
        return isinstance(value, list) and all(_fits(v, schema["items"]) for v in value)
    if kind == "string":
        return isinstance(value, str) and value in schema.get("enum", [value])
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, (int, float)) and not isinstance(value, bool)
