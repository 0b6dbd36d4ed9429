"""The wire form of a record: the JSON a recording holds, in shapes Foxglove can parse.

A record (``runtime.recording.format``) is the typed dict a reader works with. Foxglove's
JSON Schema parser (``parseJsonSchema`` in ``@foxglove/mcap-support``) accepts only a few
forms: objects with ``properties``, one ``type`` string per field, arrays with typed
``items`` (scalars or objects, not arrays), and numeric-``const`` ``oneOf`` enums. A
record's type is compiled here, once, into that form: its JSON Schema, and the two
functions that turn a record into its wire message and back.

=========================== =================================================================
record type                 wire form
=========================== =================================================================
``int`` ``float`` ``bool``  ``integer`` ``number`` ``boolean``
``str``, a ``Literal``      ``string`` (a ``Literal`` lists its values in ``enum``)
``Json`` (``Any``)          ``string``: the value's JSON text, beside the typed fields
``X | None``                ``X``, left out of the message when None
``list[X]``                 ``array`` of ``X`` (``X`` a scalar or a record)
``dict[str, X]``            ``array`` of entries: ``{"key": ..., **X}`` for a record ``X``,
                            ``{"key": ..., "value": ...}`` otherwise
a ``TypedDict``             ``object`` with ``properties`` (``required``: its required keys)
=========================== =================================================================
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired, Required, Union, get_args, get_origin

from typing_extensions import get_type_hints, is_typeddict

Encode = Callable[[Any], Any]
Decode = Callable[[Any, str], Any]

KEY = "key"
"""The field holding a mapping entry's key."""
VALUE = "value"
"""The field holding a mapping entry's value, when that value is not a record."""


@dataclass(frozen=True)
class OneOf:
    """Marks an ``int`` field as an enum, ``Annotated[int, OneOf({"INFO": 2, ...})]``: its
    schema is the numeric-``const`` ``oneOf`` Foxglove shows by name."""

    values: dict[str, int]


class WireError(ValueError):
    """A wire message that cannot be turned back into its record; says which field."""


@dataclass(frozen=True)
class Wire:
    """A record type compiled to its wire form. ``identity``: record and wire are alike."""

    schema: dict[str, Any]
    encode: Encode
    decode: Decode
    identity: bool = False
    optional: bool = False  # ``X | None``: left out when None


class JsonText(str):
    """A JSON value already encoded as its JSON text: a writer that sends the same value
    every tick encodes it once (a plain ``str`` is a JSON string value, encoded again)."""

    __slots__ = ()


def json_text(value: Any) -> JsonText:
    """``value`` (in the JSON form of ``runtime.jsonable``) as its wire JSON text."""
    return JsonText(json.dumps(value, separators=(",", ":"), allow_nan=False))


def _same(value: Any) -> Any:
    return value


def _same2(value: Any, where: str) -> Any:
    return value


def _dumps(value: Any) -> str:
    if type(value) is JsonText:
        return value
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def _loads(value: Any, where: str) -> Any:
    if not isinstance(value, str):
        raise WireError(f"field {where!r}: expected JSON text (got {_shown(value)})")
    try:
        return json.loads(value)
    except ValueError as exc:
        raise WireError(f"field {where!r}: not JSON text ({exc})") from None


def _shown(value: Any) -> str:
    return json.dumps(value, default=repr)[:60]


_SCALARS: dict[Any, str] = {int: "integer", float: "number", bool: "boolean", str: "string"}


def compile_type(tp: Any, *, json_any: Any) -> Wire:
    """The wire form of ``tp``; ``json_any`` is the alias that marks a JSON value."""
    origin = get_origin(tp)
    if origin in (NotRequired, Required):
        return compile_type(get_args(tp)[0], json_any=json_any)
    if origin is Annotated:
        base, *extras = get_args(tp)
        enums = [e for e in extras if isinstance(e, OneOf)]
        if base is int and enums:
            names = enums[0].values
            oneof = [{"title": n, "const": v} for n, v in names.items()]
            return Wire({"oneOf": oneof}, _same, _same2, identity=True)
        return compile_type(base, json_any=json_any)
    if tp is json_any or tp is Any:
        return Wire({"type": "string", "description": "JSON text"}, _dumps, _loads)
    if tp in _SCALARS:
        return Wire({"type": _SCALARS[tp]}, _same, _same2, identity=True)
    if origin is Literal:
        values = list(get_args(tp))
        if not all(isinstance(v, str) for v in values):
            raise TypeError(f"only string literals have a wire form, not {tp!r}")
        return Wire({"type": "string", "enum": values}, _same, _same2, identity=True)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) != 1 or len(get_args(tp)) != 2:
            raise TypeError(f"only X | None unions have a wire form, not {tp!r}")
        inner = compile_type(args[0], json_any=json_any)
        return Wire(inner.schema, inner.encode, inner.decode, inner.identity, optional=True)
    if origin is list:
        return _list(compile_type(get_args(tp)[0], json_any=json_any))
    if origin is dict:
        key, value = get_args(tp)
        if key is not str:
            raise TypeError(f"only str-keyed mappings have a wire form, not {tp!r}")
        return _mapping(compile_type(value, json_any=json_any))
    if is_typeddict(tp):
        return _record(tp, json_any=json_any)
    raise TypeError(f"no wire form for {tp!r}")


def _list(item: Wire) -> Wire:
    if item.schema.get("type") == "array" or item.optional:
        raise TypeError("a list's items must be scalars or records, never lists or None")
    schema = {"type": "array", "items": item.schema}
    if item.identity:
        return Wire(schema, _same, _same2, identity=True)
    encode_item, decode_item = item.encode, item.decode

    def encode(value: Any) -> Any:
        return [encode_item(v) for v in value]

    def decode(value: Any, where: str) -> Any:
        if not isinstance(value, list):
            return value  # the record's validation says what is wrong
        return [decode_item(v, f"{where}[{i}]") for i, v in enumerate(value)]

    return Wire(schema, encode, decode)


def _mapping(value: Wire) -> Wire:
    if value.schema.get("type") == "array":
        raise TypeError("a mapping's values must be scalars or records, never lists")
    if value.schema.get("type") == "object" and "properties" in value.schema:
        entry = {
            **value.schema,
            "properties": {KEY: {"type": "string"}, **value.schema["properties"]},
            "required": [KEY, *value.schema.get("required", [])],
        }
        if KEY in value.schema["properties"]:
            raise TypeError(f"a mapped record must not have a field named {KEY!r}")
        encode_value, decode_value = value.encode, value.decode

        def encode(mapping: Any) -> Any:
            return [{KEY: k, **encode_value(v)} for k, v in mapping.items()]

        def decode(entries: Any, where: str) -> Any:
            if not isinstance(entries, list):
                raise WireError(
                    f"field {where!r}: expected an array of entries (got {_shown(entries)})"
                )
            out: dict[str, Any] = {}
            for i, e in enumerate(entries):
                if not isinstance(e, dict) or not isinstance(e.get(KEY), str):
                    raise WireError(f"field '{where}[{i}]': an entry without a string {KEY!r}")
                rest = dict(e)
                k = rest.pop(KEY)
                out[k] = decode_value(rest, f"{where}.{k}")
            return out

        return Wire({"type": "array", "items": entry}, encode, decode)
    required = [KEY] if value.optional else [KEY, VALUE]
    entry = {
        "type": "object",
        "properties": {KEY: {"type": "string"}, VALUE: value.schema},
        "required": required,
    }
    encode_scalar, decode_scalar = value.encode, value.decode

    def encode_pairs(mapping: Any) -> Any:
        return [{KEY: k, VALUE: encode_scalar(v)} for k, v in mapping.items()]

    def decode_pairs(entries: Any, where: str) -> Any:
        if not isinstance(entries, list):
            raise WireError(
                f"field {where!r}: expected an array of entries (got {_shown(entries)})"
            )
        out: dict[str, Any] = {}
        for i, e in enumerate(entries):
            if not isinstance(e, dict) or not isinstance(e.get(KEY), str):
                raise WireError(f"field '{where}[{i}]': an entry without a string {KEY!r}")
            out[e[KEY]] = decode_scalar(e.get(VALUE), f"{where}.{e[KEY]}")
        return out

    return Wire({"type": "array", "items": entry}, encode_pairs, decode_pairs)


def _is_not_required(hint: Any) -> bool:
    origin: Any = get_origin(hint)
    return bool(origin is NotRequired)


def _record(tp: Any, *, json_any: Any) -> Wire:
    hints = get_type_hints(tp, include_extras=True)
    # NotRequired is read from the hints: a module with postponed annotations can leave
    # ``__required_keys__`` holding every key
    required_keys = {
        n for n, h in hints.items() if n in tp.__required_keys__ and not _is_not_required(h)
    }
    fields = {name: compile_type(hint, json_any=json_any) for name, hint in hints.items()}
    schema: dict[str, Any] = {"type": "object", "title": tp.__name__}
    if tp.__doc__:
        schema["description"] = " ".join(tp.__doc__.split())
    schema["properties"] = {name: w.schema for name, w in fields.items()}
    schema["required"] = [n for n, w in fields.items() if n in required_keys and not w.optional]
    if all(w.identity and not w.optional for w in fields.values()):
        return Wire(schema, _same, _same2, identity=True)
    changed = [(n, w.encode, w.decode) for n, w in fields.items() if not w.identity]
    dropped = tuple(n for n, w in fields.items() if w.optional)
    restored = tuple(n for n, w in fields.items() if w.optional and n in required_keys)

    def encode(value: Any) -> Any:
        out = dict(value)
        for name in dropped:
            if name in out and out[name] is None:
                del out[name]
        for name, enc, _ in changed:
            if name in out:
                out[name] = enc(out[name])
        return out

    def decode(value: Any, where: str) -> Any:
        if not isinstance(value, dict):
            return value
        out = dict(value)
        for name, _, dec in changed:
            if name in out:
                out[name] = dec(out[name], f"{where}.{name}".lstrip("."))
        for name in restored:
            out.setdefault(name, None)
        return out

    return Wire(schema, encode, decode)
