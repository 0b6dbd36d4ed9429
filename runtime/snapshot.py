"""State as data: what a component keeps, written as plain values and read back checked.

A checkpoint must never run code of its file's choosing, so the state of a run is not
pickled: each component says what it keeps as *plain data* and takes it back into an
object the program built itself. ``StateCodec`` turns such data into a JSON-able tree
(with a list of binary blobs for arrays, bytes and geometries) and back:

- JSON's own values (``None``, ``bool``, ``int``, ``str``, lists, finite floats);
  and, each as a one-key object, a float that is not finite ``{"$f": "nan"}``, a tuple
  ``{"$t": [...]}``, a dict ``{"$d": [[k, v], ...]}`` (any keys, insertion order), a
  ``FrozenDict`` ``{"$fd": ...}``, a set ``{"$s": ...}`` or frozenset ``{"$fs": ...}``, a
  deque ``{"$q": [items, maxlen]}``, a ``Counter`` ``{"$c": ...}``, bytes ``{"$b": n}``,
  a numpy array of numbers or booleans ``{"$a": [dtype, shape, n, writeable]}`` (never of
  objects: its blob is read with ``numpy.frombuffer``), a numpy scalar ``{"$n": [dtype,
  value]}``, an ``array.array`` of numbers ``{"$aa": [typecode, n]}``, a shapely geometry
  ``{"$g": n}`` (WKB) and an array of them ``{"$ga": [[n, ...], writeable]}``;
- a *record* ``{"$r": [kind, {field: value}]}``: an instance of one of the plain-data
  classes (dataclasses and named tuples holding values) the codec was given, by a kind
  name from that fixed table. Reading one calls no constructor and no method of the
  class: the object is allocated and its fields set, each checked against the field's
  annotation first (``check_value``);
- a *component* ``{"$o": {attribute: value}}``: the attributes of an object that holds
  state (a cabin, a planner's route keeper). It is never made from the file: ``restore``
  sets the attributes of the object the program built, only attributes that object has,
  and only to values of the kind it holds (``compatible``). A class may say what its
  objects keep with ``get_state()`` and take it back with ``set_state(data)``; it may
  list attributes ``capture`` leaves alone (handles and caches its constructor makes) in
  ``_derived``. Locks, loggers, callables, compiled patterns, spatial trees and
  pydantic models (settings, specs: the run's inputs) are never captured: the object
  the program built keeps its own.

Nothing in this data names a module, a class (but a kind from the table), a function or
a path, and reading it imports and opens nothing. Every problem is a ``StateError``
naming where in the data it is.
"""

from __future__ import annotations

import array
import collections
import dataclasses
import functools
import math
import re
import threading
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from pydantic import BaseModel

from runtime.errors import TickworkError
from runtime.freeze import FreezeError, FrozenDict, adopt, freeze

__all__ = [
    "MAX_DEPTH",
    "JsonValue",
    "StateCodec",
    "StateError",
    "capture",
    "check_value",
    "compatible",
    "finite_numbers",
    "restore",
]

MAX_DEPTH = 200
"""How deeply a state's values may nest (a real run's go a dozen levels deep)."""

_DTYPES = frozenset(
    {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
    | {"float16", "float32", "float64", "complex64", "complex128"}
)
"""The numpy dtypes an array in a state may have: numbers and booleans, never objects."""

_TYPECODES = frozenset("bBhHiIlLqQfd")
_MAX_ITEMS = 1 << 24  # elements of one array


class StateError(TickworkError, ValueError):
    """State data that cannot be written or taken back; the message says where and why."""


def _is_handle(value: Any) -> bool:
    """Whether ``value`` is something an object is built with, not state: a lock, a logger,
    a callable, a compiled pattern, a spatial tree, a module, a class, settings."""
    if isinstance(value, (types.FunctionType, types.MethodType, types.BuiltinFunctionType)):
        return True
    if isinstance(value, (type, types.ModuleType, re.Pattern)):
        return True
    if isinstance(value, _LOCKS):
        return True
    if type(value) in (tuple, list) and value and all(_is_handle(v) for v in value):
        return True
    kind = type(value)
    module = kind.__module__ or ""
    return module.startswith(("structlog", "shapely.strtree", "shapely.lib")) or isinstance(
        value, functools.partial
    )


_LOCKS = (type(threading.Lock()), type(threading.RLock()), threading.Event, threading.Condition)


def _own(value: Any) -> bool:
    return type(value).__module__.split(".")[0] in ("runtime", "cabins", "sim")


def _fields(obj: Any) -> dict[str, Any]:
    """An object's attributes: its ``__dict__`` and every slot set on it."""
    out: dict[str, Any] = dict(getattr(obj, "__dict__", None) or {})
    for klass in type(obj).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and hasattr(obj, name):
                out[name] = getattr(obj, name)
    return out


def _state_types(obj: Any) -> dict[str, Any] | None:
    """What a class says its plain attributes hold (``_state_types``: attribute name →
    annotation, or a function that checks), checked as a checkpoint gives them back;
    None when the class says nothing (a cabin: what it raises, the loop isolates)."""
    found: dict[str, Any] | None = None
    for klass in reversed(type(obj).__mro__):
        declared = klass.__dict__.get("_state_types")
        if declared is not None:
            found = {**(found or {}), **declared}
    return found


def _is_component(value: Any) -> bool:
    """Whether ``value`` is restored in place (a component, a generator, settings): its own
    class checks what it holds."""
    if isinstance(value, (np.random.Generator, BaseModel)):
        return True
    if type(value) in (tuple, list) and value:
        return all(_is_component(v) for v in value)
    if type(value) in (dict, FrozenDict):
        return bool(value) and all(_is_component(v) for v in value.values())
    if type(value) in (tuple, list):
        return False
    return (
        value is not None
        and not dataclasses.is_dataclass(value)
        and (_own(value) or callable(getattr(value, "get_state", None)))
    )


def _same_objects(value: Any, fresh: Any) -> bool:
    """Whether ``value`` is ``fresh``, or a container of the very objects ``fresh`` holds."""
    if value is fresh:
        return True
    if type(value) in (tuple, list) and type(fresh) is type(value) and len(value) == len(fresh):
        return all(_same_objects(v, f) for v, f in zip(value, fresh, strict=True))
    if isinstance(value, Mapping) and isinstance(fresh, Mapping) and value.keys() == fresh.keys():
        return all(_same_objects(value[k], fresh[k]) for k in fresh)
    return False


def _derived(obj: Any) -> frozenset[str]:
    names: set[str] = set()
    for klass in type(obj).__mro__:
        names.update(klass.__dict__.get("_derived", ()))
    return frozenset(names)


class StateCodec:
    """Writes plain state values as a JSON-able tree and binary blobs, and reads them back.

    ``records`` maps a kind name to a plain-data class (a dataclass or a named tuple) whose
    instances a state may hold. ``dump`` appends blobs to ``blobs``; ``load`` reads them
    from the ``blobs`` it is given.
    """

    def __init__(self, records: Mapping[str, type] | None = None) -> None:
        self.records: dict[str, type] = dict(records or {})
        self._kinds: dict[type, str] = {cls: kind for kind, cls in self.records.items()}
        self.blobs: list[bytes] = []
        self._numbers: dict[int, int] = {}  # id(component) -> its number, while writing
        self._keep: list[Any] = []  # the components numbered, so that no id is reused
        self._applied: dict[int, Any] = {}  # number -> the program's object, while reading
        self._restored: set[int] = set()

    # -- writing ---------------------------------------------------------------------------

    def dump(self, value: Any, where: str = "state") -> Any:
        """``value`` as a JSON-able tree (blobs to ``self.blobs``)."""
        return self._dump(value, where, 0)

    def _blob(self, data: bytes) -> int:
        self.blobs.append(bytes(data))
        return len(self.blobs) - 1

    def _dump(self, value: Any, where: str, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise StateError(f"{where}: nested more than {MAX_DEPTH} levels deep")
        kind = type(value)
        if value is None or kind is bool or kind is int or kind is str:
            return value
        if kind is float:
            return value if math.isfinite(value) else {"$f": repr(value)}
        deeper = depth + 1
        if kind is list:
            return [self._dump(v, f"{where}[{i}]", deeper) for i, v in enumerate(value)]
        if kind is tuple:
            return {"$t": [self._dump(v, f"{where}[{i}]", deeper) for i, v in enumerate(value)]}
        if kind is dict:
            return {"$d": self._pairs(value, where, deeper)}
        if kind is FrozenDict:
            return {"$fd": self._pairs(value, where, deeper)}
        if kind is set or kind is frozenset:
            items = [self._dump(v, f"{where}{{}}", deeper) for v in value]
            return {"$s" if kind is set else "$fs": items}
        if kind is collections.deque:
            items = [self._dump(v, f"{where}[{i}]", deeper) for i, v in enumerate(value)]
            return {"$q": [items, value.maxlen]}
        if kind is collections.Counter:
            return {"$c": self._pairs(value, where, deeper)}
        if kind is collections.defaultdict:
            return {"$dd": self._pairs(value, where, deeper)}
        if kind is bytes:
            return {"$b": self._blob(value)}
        if kind is np.ndarray:
            return self._array(value, where)
        if isinstance(value, np.generic):
            return {"$n": [value.dtype.name, self._dump(value.item(), where, deeper)]}
        if kind is array.array:
            if value.typecode not in _TYPECODES:
                raise StateError(f"{where}: an array of typecode {value.typecode!r}")
            return {"$aa": [value.typecode, self._blob(value.tobytes())]}
        if kind in self._kinds:
            return self._record(value, where, deeper)
        if hasattr(value, "geom_type") and hasattr(value, "wkb"):
            import shapely

            return {"$g": self._blob(shapely.to_wkb(value, include_srid=True))}
        if isinstance(value, np.random.Generator):
            return {"$rng": self._dump(value.bit_generator.state, where, deeper)}
        if isinstance(value, BaseModel):
            return {"$keep": None}  # settings and specs: the run's inputs, the program's own
        if _own(value) or callable(getattr(value, "get_state", None)):
            number = self._numbers.get(id(value))
            if number is not None:
                return {"$ref": number}
            number = self._numbers[id(value)] = len(self._numbers)
            self._keep.append(value)
            return {"$o": [number, capture(value, self, where, deeper)]}
        raise StateError(f"{where}: a {kind.__module__}.{kind.__qualname__} is not state data")

    def _pairs(self, value: Mapping[Any, Any], where: str, depth: int) -> list[list[Any]]:
        return [
            [self._dump(k, f"{where}{{key}}", depth), self._dump(v, f"{where}[{k!r}]", depth)]
            for k, v in value.items()
        ]

    def _array(self, value: np.ndarray, where: str) -> Any:
        writeable = bool(value.flags.writeable)
        if value.dtype == object:
            import shapely

            flat = value.ravel()
            if not shapely.is_geometry(flat).all():
                raise StateError(f"{where}: an array of objects that are not all geometries")
            blobs = [self._blob(b) for b in shapely.to_wkb(flat, include_srid=True)]
            return {"$ga": [blobs, list(value.shape), writeable]}
        if value.dtype.name not in _DTYPES:
            raise StateError(f"{where}: an array of dtype {value.dtype}")
        data = np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<"), copy=False)
        return {"$a": [value.dtype.name, list(value.shape), self._blob(data.tobytes()), writeable]}

    def _record(self, value: Any, where: str, depth: int) -> Any:
        kind = self._kinds[type(value)]
        fields = {}
        for name in _record_fields(type(value)):
            field = getattr(value, name)
            if isinstance(field, BaseModel):  # settings in a record: by the field's own type
                fields[name] = {"$m": field.model_dump(mode="json")}
            else:
                fields[name] = self._dump(field, f"{where}.{name}", depth)
        return {"$r": [kind, fields]}

    # -- reading ---------------------------------------------------------------------------

    def _same(self, number: Any, fresh: Any, where: str) -> None:
        """Object ``number`` of the data is ``fresh`` (one object in the data is one object
        in the program: a board shared by the assembler and the injector is one board)."""
        if type(number) is not int or not 0 <= number < 1 << 31:
            raise StateError(f"{where}: an object number of {_show(number)}")
        known = self._applied.setdefault(number, fresh)
        if known is not fresh:
            raise StateError(f"{where}: object {number} is two objects in this run")

    def load(self, tree: Any, blobs: list[bytes], where: str = "state") -> Any:
        """The value ``tree`` holds; ``StateError`` naming where it is malformed."""
        return self._load(tree, blobs, where, 0)

    def _load(self, tree: Any, blobs: list[bytes], where: str, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise StateError(f"{where}: nested more than {MAX_DEPTH} levels deep")
        kind = type(tree)
        if tree is None or kind is bool or kind is int or kind is str:
            return tree
        if kind is float:
            if not math.isfinite(tree):
                raise StateError(f"{where}: a float that is not finite outside a $f")
            return tree
        deeper = depth + 1
        if kind is list:
            return [self._load(v, blobs, f"{where}[{i}]", deeper) for i, v in enumerate(tree)]
        if kind is not dict or len(tree) != 1:
            raise StateError(f"{where}: not a state value ({_show(tree)})")
        ((tag, body),) = tree.items()
        if tag == "$f":
            if body not in ("nan", "inf", "-inf"):
                raise StateError(f"{where}: $f of {_show(body)}")
            return float(body)
        if tag == "$t":
            return tuple(self._items(body, blobs, where, deeper))
        if tag in ("$d", "$fd", "$c", "$dd"):
            pairs = self._load_pairs(body, blobs, where, deeper)
            if tag == "$fd":
                return _frozen(pairs, where)
            if tag == "$c":
                return collections.Counter(pairs)
            return pairs  # a defaultdict is rebuilt by ``restore``, which knows its factory
        if tag in ("$s", "$fs"):
            items = self._items(body, blobs, where, deeper)
            try:
                return set(items) if tag == "$s" else frozenset(items)
            except TypeError:
                raise StateError(f"{where}: a set of unhashable values") from None
        if tag == "$q":
            if not (isinstance(body, list) and len(body) == 2):
                raise StateError(f"{where}: $q must be [items, maxlen]")
            maxlen = body[1]
            if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
                raise StateError(f"{where}: a deque's maxlen of {_show(maxlen)}")
            return collections.deque(self._items(body[0], blobs, where, deeper), maxlen)
        if tag == "$b":
            return self._blob_at(body, blobs, where)
        if tag == "$a":
            return self._load_array(body, blobs, where)
        if tag == "$ga":
            return self._load_geometries(body, blobs, where)
        if tag == "$g":
            return self._load_geometry(self._blob_at(body, blobs, where), where)
        if tag == "$n":
            return self._load_scalar(body, blobs, where, deeper)
        if tag == "$aa":
            if not (isinstance(body, list) and len(body) == 2 and _member(body[0], _TYPECODES)):
                raise StateError(f"{where}: $aa must be [typecode, blob]")
            data = self._blob_at(body[1], blobs, where)
            out = array.array(body[0])
            if len(data) % out.itemsize:
                raise StateError(f"{where}: {len(data)} bytes are no whole number of items")
            out.frombytes(data)
            return out
        if tag == "$r":
            return self._load_record(body, blobs, where, deeper)
        if tag in ("$o", "$ref", "$rng", "$keep"):
            return _Pending(tag, body)  # applied to the program's own object by ``restore``
        raise StateError(f"{where}: unknown tag {tag!r}")

    def _items(self, body: Any, blobs: list[bytes], where: str, depth: int) -> list[Any]:
        if not isinstance(body, list):
            raise StateError(f"{where}: expected a list, got {_show(body)}")
        return [self._load(v, blobs, f"{where}[{i}]", depth) for i, v in enumerate(body)]

    def _load_pairs(self, body: Any, blobs: list[bytes], where: str, depth: int) -> dict[Any, Any]:
        if not isinstance(body, list):
            raise StateError(f"{where}: expected a list of pairs, got {_show(body)}")
        out: dict[Any, Any] = {}
        for pair in body:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise StateError(f"{where}: a mapping entry that is not a [key, value] pair")
            key = self._load(pair[0], blobs, f"{where}{{key}}", depth)
            try:
                hash(key)
            except TypeError:
                raise StateError(f"{where}: an unhashable key") from None
            if isinstance(key, _Pending):
                raise StateError(f"{where}: a key that is an object")
            out[key] = self._load(pair[1], blobs, f"{where}[{key!r}]", depth)
        return out

    @staticmethod
    def _blob_at(index: Any, blobs: list[bytes], where: str) -> bytes:
        if type(index) is not int or not 0 <= index < len(blobs):
            raise StateError(f"{where}: no blob {_show(index)} (the state has {len(blobs)})")
        return blobs[index]

    def _load_array(self, body: Any, blobs: list[bytes], where: str) -> np.ndarray:
        if not (isinstance(body, list) and len(body) == 4):
            raise StateError(f"{where}: $a must be [dtype, shape, blob, writeable]")
        dtype, shape, index, writeable = body
        if type(dtype) is not str or dtype not in _DTYPES:
            raise StateError(f"{where}: an array of dtype {_show(dtype)}")
        shape = _shape(shape, where)
        data = self._blob_at(index, blobs, where)
        kind = np.dtype(dtype).newbyteorder("<")
        if len(data) != math.prod(shape) * kind.itemsize:
            raise StateError(f"{where}: {len(data)} bytes for an array {dtype}{list(shape)}")
        out = np.frombuffer(data, dtype=kind).astype(np.dtype(dtype), copy=True).reshape(shape)
        out.flags.writeable = bool(writeable)
        return out

    def _load_geometries(self, body: Any, blobs: list[bytes], where: str) -> np.ndarray:
        if not (isinstance(body, list) and len(body) == 3 and isinstance(body[0], list)):
            raise StateError(f"{where}: $ga must be [[blob, ...], shape, writeable]")
        shape = _shape(body[1], where)
        if math.prod(shape) != len(body[0]):
            raise StateError(f"{where}: {len(body[0])} geometries for shape {list(shape)}")
        out = np.empty(len(body[0]), dtype=object)
        for i, index in enumerate(body[0]):
            out[i] = self._load_geometry(self._blob_at(index, blobs, where), where)
        out = out.reshape(shape)
        out.flags.writeable = bool(body[2])
        return out

    @staticmethod
    def _load_geometry(data: bytes, where: str) -> Any:
        import shapely

        try:
            return shapely.from_wkb(data)
        except Exception as exc:  # shapely raises its own GEOSException and others
            raise StateError(f"{where}: not a geometry ({exc})") from None

    def _load_scalar(self, body: Any, blobs: list[bytes], where: str, depth: int) -> Any:
        if not (isinstance(body, list) and len(body) == 2 and _member(body[0], _DTYPES)):
            raise StateError(f"{where}: $n must be [dtype, value]")
        value = self._load(body[1], blobs, where, depth)
        if type(value) not in (bool, int, float) and not isinstance(value, complex):
            raise StateError(f"{where}: a numpy scalar of {_show(value)}")
        try:
            return np.dtype(body[0]).type(value)
        except (OverflowError, ValueError, TypeError) as exc:
            raise StateError(f"{where}: {exc}") from None

    def _load_record(self, body: Any, blobs: list[bytes], where: str, depth: int) -> Any:
        if not (isinstance(body, list) and len(body) == 2 and isinstance(body[1], dict)):
            raise StateError(f"{where}: $r must be [kind, {{field: value}}]")
        kind, given = body
        cls = self.records.get(kind) if isinstance(kind, str) else None
        if cls is None:
            raise StateError(f"{where}: no record kind {_show(kind)}")
        names = _record_fields(cls)
        if set(given) != set(names):
            extra, lacking = set(given) - set(names), set(names) - set(given)
            raise StateError(
                f"{where}: a {kind} record with fields {sorted(given)}"
                + (f" (unknown: {sorted(extra)})" if extra else "")
                + (f" (missing: {sorted(lacking)})" if lacking else "")
            )
        hints = _hints(cls)
        values = {}
        for name in names:
            tree = given[name]
            if isinstance(tree, dict) and set(tree) == {"$m"}:
                values[name] = _model(tree["$m"], hints.get(name), f"{where}.{name}")
                continue
            value = self._load(tree, blobs, f"{where}.{name}", depth)
            if isinstance(value, _Pending):
                raise StateError(f"{where}.{name}: an object inside a record")
            if name in hints:
                check_value(value, hints[name], f"{where}.{name}")
            values[name] = value
        if issubclass(cls, tuple):
            return tuple.__new__(cls, [values[n] for n in names])
        obj = object.__new__(cls)
        for name in names:
            object.__setattr__(obj, name, values[name])
        return obj


def _model(data: Any, hint: Any, where: str) -> BaseModel:
    """A pydantic model field of a record, validated as the field's annotated model class
    (the file never names the class)."""
    import json

    options = (
        typing.get_args(hint)
        if typing.get_origin(hint) in (typing.Union, types.UnionType)
        else (hint,)
    )
    models = [o for o in options if isinstance(o, type) and issubclass(o, BaseModel)]
    if len(models) != 1:
        raise StateError(f"{where}: settings where the record holds none")
    try:
        return models[0].model_validate_json(json.dumps(data, allow_nan=False))
    except Exception as exc:  # pydantic's ValidationError, or JSON that is not
        raise StateError(f"{where}: not valid {models[0].__qualname__} ({exc})") from None


class _Pending:
    """A component's state read from the data, applied by ``restore`` to the program's own
    object (a component is never made from the data)."""

    __slots__ = ("body", "tag")

    def __init__(self, tag: str, body: Any) -> None:
        self.tag = tag
        self.body = body


def _frozen(pairs: dict[Any, Any], where: str) -> FrozenDict[Any, Any]:
    """A ``FrozenDict`` of ``pairs``, frozen as the board freezes values (an array of
    objects, a list, anything mutable in it is refused or frozen), unless it holds the
    program's objects (a run's scratchpads by cabin), which ``restore`` settles."""
    if any(isinstance(v, _Pending) for v in pairs.values()):
        return adopt(pairs)
    try:
        frozen: FrozenDict[Any, Any] = freeze(pairs)
    except FreezeError as exc:
        raise StateError(f"{where}: {exc}") from None
    return frozen


def _member(value: Any, names: frozenset[str]) -> bool:
    return type(value) is str and value in names


def _shape(shape: Any, where: str) -> tuple[int, ...]:
    if not (
        isinstance(shape, list)
        and len(shape) <= 8
        and all(type(n) is int and 0 <= n <= _MAX_ITEMS for n in shape)
        and math.prod(shape) <= _MAX_ITEMS
    ):
        raise StateError(f"{where}: an array shape of {_show(shape)}")
    return tuple(shape)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_FIELDS: dict[type, tuple[str, ...]] = {}


def _record_fields(cls: type) -> tuple[str, ...]:
    """A record class's fields: a dataclass's (every field, init or not), a named tuple's."""
    known = _FIELDS.get(cls)
    if known is None:
        if dataclasses.is_dataclass(cls):
            known = tuple(f.name for f in dataclasses.fields(cls))
        elif issubclass(cls, tuple) and hasattr(cls, "_fields"):
            known = tuple(cls._fields)
        else:
            raise StateError(f"{cls.__qualname__} is not a record class")
        _FIELDS[cls] = known
    return known


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    known = _HINTS.get(cls)
    if known is None:
        try:
            known = typing.get_type_hints(cls)
        except Exception:  # a forward reference only a type checker resolves
            known = {}
        _HINTS[cls] = known
    return known


def check_value(value: Any, hint: Any, where: str, *, finite: bool = False) -> None:
    """``StateError`` unless ``value`` fits the annotation ``hint`` (the checks a record's
    fields get: plain types, unions, tuples, lists, sets and mappings of them, literals,
    ``JsonValue``; what it cannot check, ``Any`` or a type variable, passes). With
    ``finite``, a float must be finite too. A function as ``hint`` is called to check."""
    if isinstance(hint, types.FunctionType):
        hint(value, where)
        return
    if hint is JsonValue:
        _check_json(value, where, 0)
        return
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any or isinstance(hint, (typing.TypeVar, str)) or hint is typing.ClassVar:
        return
    if origin is typing.Union or origin is types.UnionType:
        for option in args:
            try:
                check_value(value, option, where, finite=finite)
            except StateError:
                continue
            return
        raise StateError(f"{where}: {_show(value)} is not a {_name(hint)}")
    if origin is typing.Literal:
        if value not in args:
            raise StateError(f"{where}: {_show(value)} is not one of {list(args)}")
        return
    if hint is None or hint is type(None):
        if value is not None:
            raise StateError(f"{where}: {_show(value)} where None belongs")
        return
    if hint is float:
        if type(value) not in (float, int):
            raise StateError(f"{where}: {_show(value)} is not a number")
        if finite and not math.isfinite(value):
            raise StateError(f"{where}: {value!r} is not a finite number")
        return
    if hint is int:
        if type(value) is not int:
            raise StateError(f"{where}: {_show(value)} is not a whole number")
        return
    base = origin if origin is not None else hint
    if not isinstance(base, type):
        return  # an alias or a protocol the checker does not know: the types above hold
    if base in (collections.abc.Mapping, dict) or (
        isinstance(base, type) and issubclass(base, collections.abc.Mapping)
    ):
        if not isinstance(value, collections.abc.Mapping):
            raise StateError(f"{where}: {_show(value)} is not a mapping")
        if len(args) == 2:
            for k, v in value.items():
                check_value(k, args[0], f"{where}{{key}}", finite=finite)
                check_value(v, args[1], f"{where}[{k!r}]", finite=finite)
        return
    if not isinstance(value, base):
        raise StateError(f"{where}: {_show(value)} is not a {_name(hint)}")
    items: Any = value
    if base is tuple and args:
        if len(args) == 2 and args[1] is Ellipsis:
            for i, v in enumerate(items):
                check_value(v, args[0], f"{where}[{i}]", finite=finite)
        elif len(args) != len(items):
            raise StateError(f"{where}: {len(items)} entries where {len(args)} belong")
        else:
            for i, (v, h) in enumerate(zip(items, args, strict=True)):
                check_value(v, h, f"{where}[{i}]", finite=finite)
    elif base in (list, set, frozenset, collections.deque) and args:
        for i, v in enumerate(items):
            check_value(v, args[0], f"{where}[{i}]", finite=finite)
    if finite and (dataclasses.is_dataclass(value) or isinstance(value, tuple)):
        finite_numbers(value, where)


class JsonValue:
    """The annotation of a value that must be JSON's: None, booleans, whole numbers,
    finite floats, strings, and lists and string-keyed dicts of them (it is written out)."""


def _check_json(value: Any, where: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise StateError(f"{where}: nested more than {MAX_DEPTH} levels deep")
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return
    if kind is float:
        if not math.isfinite(value):
            raise StateError(f"{where}: {value!r} is not a finite number")
        return
    if kind is list:
        for i, v in enumerate(value):
            _check_json(v, f"{where}[{i}]", depth + 1)
        return
    if kind is dict:
        for k, v in value.items():
            if type(k) is not str:
                raise StateError(f"{where}: a key {_show(k)} that is not a string")
            _check_json(v, f"{where}[{k!r}]", depth + 1)
        return
    raise StateError(f"{where}: {_show(value)} is not JSON")


def finite_numbers(value: Any, where: str, depth: int = 0) -> None:
    """``StateError`` if a float anywhere in ``value`` (a record's fields, tuples, lists,
    dicts) is NaN or infinite."""
    if depth > MAX_DEPTH:
        raise StateError(f"{where}: nested more than {MAX_DEPTH} levels deep")
    kind = type(value)
    if kind is float:
        if not math.isfinite(value):
            raise StateError(f"{where}: {value!r} is not a finite number")
    elif kind in (tuple, list, set, frozenset, collections.deque):
        for i, v in enumerate(value):
            finite_numbers(v, f"{where}[{i}]", depth + 1)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            finite_numbers(v, f"{where}[{k!r}]", depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for name in _record_fields(type(value)):
            finite_numbers(getattr(value, name), f"{where}.{name}", depth + 1)
    elif isinstance(value, tuple):  # a named tuple
        for i, v in enumerate(value):
            finite_numbers(v, f"{where}[{i}]", depth + 1)


def _name(hint: Any) -> str:
    return getattr(hint, "__qualname__", None) or str(hint)


def compatible(fresh: Any, value: Any) -> bool:
    """Whether ``value`` may take the place of ``fresh`` (what the program built): either is
    None, one's type is the other's or a subclass of it, or both are numbers."""
    if fresh is None or value is None:
        return True
    if isinstance(value, type(fresh)) or isinstance(fresh, type(value)):
        return type(value) is not bool or type(fresh) is bool
    numbers = (int, float, np.integer, np.floating)
    return (
        isinstance(fresh, numbers)
        and isinstance(value, numbers)
        and type(fresh) is not bool
        and type(value) is not bool
    )


# -- components -------------------------------------------------------------------------------


def capture(obj: Any, codec: StateCodec, where: str = "state", depth: int = 0) -> Any:
    """The state of component ``obj`` as the codec writes it: ``obj.get_state()`` when its
    class has one, else its attributes but ``_derived`` ones and handles. Write a whole
    state with ``codec.dump(root)`` and read it back with ``restore``."""
    get_state = getattr(obj, "get_state", None)
    if callable(get_state):
        try:
            kept = get_state()
        except Exception as exc:
            if _own(obj):
                raise
            raise StateError(f"{where}: get_state raised {type(exc).__name__}: {exc}") from None
        return {"state": codec._dump(kept, where, depth + 1)}
    out: dict[str, Any] = {}
    skip = _derived(obj)
    if "*" in skip:
        return out
    for name, value in _fields(obj).items():
        if name in skip or _is_handle(value):
            continue
        out[name] = codec._dump(value, f"{where}.{name}", depth + 1)
    return out


def restore(
    obj: Any, tree: Any, codec: StateCodec, blobs: list[bytes], where: str = "state"
) -> None:
    """Take the state ``codec.dump(obj)`` wrote back into the program's own object
    ``obj`` (and every component reachable from it)."""
    codec._applied, codec._restored = {}, set()
    value = codec._load(tree, blobs, where, 0)
    if not (isinstance(value, _Pending) and value.tag == "$o"):
        raise StateError(f"{where}: not an object's state")
    _settle(obj, value, codec, blobs, where, 0)
    missing = set(codec._applied) - codec._restored
    if missing:
        raise StateError(f"{where}: references to object(s) {sorted(missing)[:5]} the data lacks")


def _restore(
    obj: Any, data: Any, codec: StateCodec, blobs: list[bytes], where: str, depth: int
) -> None:
    if depth > MAX_DEPTH:
        raise StateError(f"{where}: nested more than {MAX_DEPTH} levels deep")
    if not isinstance(data, dict):
        raise StateError(f"{where}: an object's state must be a JSON object, got {_show(data)}")
    set_state = getattr(obj, "set_state", None)
    if callable(set_state) and callable(getattr(obj, "get_state", None)):
        if set(data) != {"state"}:
            raise StateError(f'{where}: expected {{"state": ...}}, got keys {sorted(data)}')
        value = codec._load(data["state"], blobs, where, depth + 1)
        if isinstance(value, _Pending):
            raise StateError(f"{where}: a component's get_state holds an object")
        try:
            set_state(value)
        except StateError:
            raise
        except TickworkError as exc:
            raise StateError(f"{where}: {exc}") from None
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
            raise StateError(f"{where}: {type(exc).__name__}: {exc}") from None
        except Exception as exc:  # a user's class may raise anything: one error, not a crash
            if _own(obj):
                raise
            raise StateError(f"{where}: set_state raised {type(exc).__name__}: {exc}") from None
        return
    fresh = _fields(obj)
    skip = _derived(obj)
    if "*" in skip:
        fresh = {}
    expected = {n for n, v in fresh.items() if n not in skip and not _is_handle(v)}
    if set(data) != expected:
        extra, lacking = set(data) - expected, expected - set(data)
        raise StateError(
            f"{where}: a {type(obj).__qualname__}'s state"
            + (f" with unknown attributes {sorted(extra)}" if extra else "")
            + (f" without {sorted(lacking)}" if lacking else "")
        )
    types_of = _state_types(obj)
    for name in sorted(expected):
        value = _apply(fresh[name], data[name], codec, blobs, f"{where}.{name}", depth)
        if types_of is not None:
            if name in types_of:
                check_value(value, types_of[name], f"{where}.{name}", finite=True)
            elif not (_is_component(value) or _same_objects(value, fresh[name])):
                raise StateError(
                    f"{where}.{name}: an attribute {type(obj).__qualname__} does not check"
                )
        if value is not fresh[name]:
            object.__setattr__(obj, name, value)
    check_state = getattr(obj, "check_state", None)
    if callable(check_state):
        try:
            check_state()
        except StateError:
            raise
        except (TickworkError, TypeError, ValueError, KeyError, AttributeError) as exc:
            raise StateError(f"{where}: {type(exc).__name__}: {exc}") from None


def _apply(
    fresh: Any, tree: Any, codec: StateCodec, blobs: list[bytes], where: str, depth: int
) -> Any:
    """The value ``tree`` holds for an attribute the program set to ``fresh`` (components
    in it given their state), checked to be of the kind ``fresh`` is."""
    value = codec._load(tree, blobs, where, depth + 1)
    value = _settle(fresh, value, codec, blobs, where, depth + 1)
    if _is_component(fresh) and not _same_objects(value, fresh):
        raise StateError(f"{where}: the run holds an object here, given {_show(value)}")
    if not compatible(fresh, value):
        raise StateError(
            f"{where}: a {type(value).__qualname__} where the run holds a "
            f"{type(fresh).__qualname__}"
        )
    return value


def _settle(
    fresh: Any, value: Any, codec: StateCodec, blobs: list[bytes], where: str, depth: int
) -> Any:
    """``value`` with every component in it applied to the program's object at the same
    place in ``fresh`` (and a defaultdict given ``fresh``'s factory)."""
    if isinstance(value, _Pending):
        if value.tag == "$keep":
            if not isinstance(fresh, BaseModel):
                raise StateError(f"{where}: settings where the run holds none")
            return fresh
        if value.tag == "$rng":
            if not isinstance(fresh, np.random.Generator):
                raise StateError(f"{where}: generator state where the run holds no generator")
            state = codec._load(value.body, blobs, where, depth)
            try:
                fresh.bit_generator.state = state
            except (TypeError, ValueError, KeyError, OverflowError) as exc:
                raise StateError(f"{where}: not a generator's state ({exc})") from None
            return fresh
        if (
            fresh is None
            or dataclasses.is_dataclass(fresh)
            or not (_own(fresh) or callable(getattr(fresh, "get_state", None)))
        ):
            raise StateError(f"{where}: an object's state where the run holds none")
        if value.tag == "$ref":
            codec._same(value.body, fresh, where)
            return fresh
        if not (type(value.body) is list and len(value.body) == 2):
            raise StateError(f"{where}: $o must be [number, state]")
        number, body = value.body
        codec._same(number, fresh, where)
        if number in codec._restored:
            raise StateError(f"{where}: object {number} is given its state twice")
        codec._restored.add(number)
        _restore(fresh, body, codec, blobs, where, depth)
        return fresh
    if type(value) is list and type(fresh) is list and any(isinstance(v, _Pending) for v in value):
        if len(value) != len(fresh):
            raise StateError(f"{where}: {len(value)} objects where the run holds {len(fresh)}")
        return [
            _settle(f, v, codec, blobs, f"{where}[{i}]", depth)
            for i, (f, v) in enumerate(zip(fresh, value, strict=True))
        ]
    if (
        type(value) is tuple
        and type(fresh) is tuple
        and any(isinstance(v, _Pending) for v in value)
    ):
        if len(value) != len(fresh):
            raise StateError(f"{where}: {len(value)} objects where the run holds {len(fresh)}")
        return tuple(
            _settle(f, v, codec, blobs, f"{where}[{i}]", depth)
            for i, (f, v) in enumerate(zip(fresh, value, strict=True))
        )
    if type(value) is FrozenDict and any(isinstance(v, _Pending) for v in value.values()):
        value = dict(value.items())  # settled below, then frozen again
    if isinstance(value, dict) and isinstance(fresh, Mapping):
        pending = [k for k, v in value.items() if isinstance(v, _Pending)]
        for key in pending:
            if key not in fresh:
                raise StateError(f"{where}[{key!r}]: an object's state where the run holds none")
            value[key] = _settle(fresh[key], value[key], codec, blobs, f"{where}[{key!r}]", depth)
        if type(fresh) is collections.defaultdict and type(value) is dict:
            return collections.defaultdict(fresh.default_factory, value)
        if type(fresh) is FrozenDict and type(value) is dict:
            return adopt(value)
        return value
    _check_no_pending(value, where)
    return value


def _check_no_pending(value: Any, where: str) -> None:
    if isinstance(value, _Pending):
        raise StateError(f"{where}: an object's state where the run holds none")
    if type(value) in (list, tuple, set, frozenset, collections.deque):
        for v in value:
            _check_no_pending(v, where)
    elif isinstance(value, Mapping):
        for v in value.values():
            _check_no_pending(v, where)


def state_classes(found: Iterable[type]) -> dict[str, type]:
    """A record table for ``StateCodec``: each class by its qualified name within its
    package (``board.Reading``), checked to be a record class."""
    out: dict[str, type] = {}
    for cls in found:
        _record_fields(cls)
        kind = f"{cls.__module__.rsplit('.', 1)[-1]}.{cls.__qualname__}"
        if kind in out and out[kind] is not cls:
            raise StateError(f"two record classes are both {kind}")
        out[kind] = cls
    return out


# -- checks for set_state ---------------------------------------------------------------------


def keys_of(data: Any, names: Iterable[str], what: str) -> dict[str, Any]:
    """``data`` as a dict with exactly the keys ``names``; ``StateError`` otherwise."""
    wanted = set(names)
    if not isinstance(data, dict) or set(data) != wanted:
        got = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise StateError(f"{what}: expected the fields {sorted(wanted)}, got {got}")
    return data


def whole(value: Any, what: str, *, low: int = 0, high: int = 1 << 62) -> int:
    """``value`` if it is an int (not a bool) in ``[low, high]``."""
    if type(value) is not int or not low <= value <= high:
        raise StateError(f"{what}: expected a whole number in [{low}, {high}], got {_show(value)}")
    return value


def number(
    value: Any, what: str, *, low: float = -math.inf, high: float = math.inf, finite: bool = True
) -> float:
    """``value`` as a float if it is a number (not a bool) in ``[low, high]``, finite unless
    ``finite`` is False (NaN is never one)."""
    if type(value) not in (int, float) or math.isnan(value) or (finite and math.isinf(value)):
        raise StateError(
            f"{what}: expected a {'finite ' if finite else ''}number, got {_show(value)}"
        )
    if not low <= value <= high:
        raise StateError(f"{what}: {value!r} is outside [{low}, {high}]")
    return float(value)


def text(value: Any, what: str) -> str:
    if type(value) is not str:
        raise StateError(f"{what}: expected a string, got {_show(value)}")
    return value


def list_of(value: Any, what: str) -> list[Any]:
    if type(value) is not list:
        raise StateError(f"{what}: expected a list, got {_show(value)}")
    return value


def record_of(value: Any, cls: type, what: str) -> Any:
    if type(value) is not cls:
        raise StateError(f"{what}: expected a {cls.__qualname__} record, got {_show(value)}")
    return value
