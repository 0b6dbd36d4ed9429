"""Deep freezing: how a value becomes safe to share between ticks and cabins.

Everything that enters the state board, the event log or a working set is frozen
once, at the door: lists become tuples, dicts become read-only ``FrozenDict``
mappings, sets become frozensets, numpy arrays become read-only copies and
pydantic models become frozen copies. A value that cannot be frozen is refused
with a ``FreezeError`` (a ``TypeError``) that names where it was found.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, TypeVar, overload

import numpy as np
from pydantic import BaseModel, ConfigDict

from runtime.errors import TickworkError

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

_ATOMS = (type(None), bool, int, float, complex, str, bytes, enum.Enum, np.generic)
_PLAIN = frozenset({type(None), bool, int, float, str})
"""Exact atom types, frozen as they are without a call (nor the path an error would name)."""


class FreezeError(TickworkError, TypeError):
    """A value (or something inside it) has no immutable form."""


class FrozenDict(Mapping[K, V]):
    """A read-only, hashable mapping. Equal to any mapping with the same items."""

    __slots__ = ("_data", "_hash")

    def __init__(self, data: Mapping[K, V] | None = None) -> None:
        self._data: dict[K, V] = dict(data) if data else {}
        self._hash: int | None = None

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    @overload
    def get(self, key: K, /) -> V | None: ...
    @overload
    def get(self, key: K, /, default: V | T) -> V | T: ...
    def get(self, key: K, /, default: Any = None) -> Any:  # one lookup, not Mapping's calls
        return self._data.get(key, default)

    # the dict's own views (read-only here, as nothing writes the dict): iterating them
    # runs in C, where Mapping's views call __iter__ and __getitem__ per item
    def keys(self) -> KeysView[K]:
        return self._data.keys()

    def values(self) -> ValuesView[V]:
        return self._data.values()

    def items(self) -> ItemsView[K, V]:
        return self._data.items()

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._data.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"FrozenDict({self._data!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (rebuild_frozen, (self._data,))


def rebuild_frozen(data: dict[Any, Any]) -> FrozenDict[Any, Any]:
    """A pickled ``FrozenDict`` again: frozen again (unpickled arrays come back writable),
    unless it maps to live objects that have no frozen form (the assembler's scratchpads)."""
    try:
        frozen: FrozenDict[Any, Any] = freeze(data)
    except FreezeError:
        return FrozenDict(data)
    return frozen


def adopt(data: dict[K, V]) -> FrozenDict[K, V]:
    """A ``FrozenDict`` over ``data`` itself, without a copy: for a dict its maker built
    for it and never touches again."""
    frozen: FrozenDict[K, V] = _new_frozen(FrozenDict)
    _set_data(frozen, data)
    _set_hash(frozen, None)
    return frozen


_new_frozen = object.__new__
_set_data = FrozenDict.__dict__["_data"].__set__
_set_hash = FrozenDict.__dict__["_hash"].__set__


def freeze(value: Any, *, key: str = "") -> Any:
    """Return an immutable deep copy of ``value`` (or ``value`` itself if already immutable).

    ``key`` only serves the error message: it names the board key, event or field
    the value was meant for.
    """
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is dict:  # keyword arguments, most event data: the mapping case at once
        return FrozenDict(
            {k: v if type(v) in _PLAIN else _freeze(v, key, f"[{k!r}]") for k, v in value.items()}
        )
    return _freeze(value, key, "")


def _where(key: str, path: str) -> str:
    name = f"key {key!r}" if key else "value"
    return f"{name} at {path}" if path else name


def _freeze(value: Any, key: str, path: str) -> Any:
    if isinstance(value, _ATOMS):
        return value
    if isinstance(value, FrozenDict):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise FreezeError(f"cannot freeze {_where(key, path)}: numpy array of dtype object")
        if not value.flags.writeable and value.base is None:
            return value
        arr = np.array(value, copy=True)
        arr.flags.writeable = False
        return arr
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        items = tuple(
            v if type(v) in _PLAIN else _freeze(v, key, f"{path}[{i}]") for i, v in enumerate(value)
        )
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, (list, tuple)):
        frozen = [_freeze(v, key, f"{path}[{i}]") for i, v in enumerate(value)]
        return type(value)(*frozen) if hasattr(value, "_fields") else tuple(frozen)
    if isinstance(value, Mapping):
        return FrozenDict(
            {
                k: v if type(v) in _PLAIN else _freeze(v, key, f"{path}[{k!r}]")
                for k, v in value.items()
            }
        )
    if isinstance(value, (set, frozenset)):
        return frozenset(_freeze(v, key, f"{path}{{}}") for v in value)
    if isinstance(value, BaseModel):
        return _freeze_model(value, key, path)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        params = getattr(type(value), "__dataclass_params__", None)
        if params is None or not params.frozen:
            raise FreezeError(
                f"cannot freeze {_where(key, path)}: dataclass {type(value).__name__} "
                "is not frozen (declare it with @dataclass(frozen=True))"
            )
        changes = {
            f.name: _freeze(getattr(value, f.name), key, f"{path}.{f.name}")
            for f in dataclasses.fields(value)
            if f.init
        }
        return dataclasses.replace(value, **changes)
    if _is_shapely_geometry(value):
        return value  # shapely 2 geometries are immutable
    raise FreezeError(
        f"cannot freeze {_where(key, path)}: type {type(value).__module__}."
        f"{type(value).__qualname__} has no immutable form "
        "(use a tuple, dict, set, numpy array, frozen dataclass or pydantic model)"
    )


def _is_shapely_geometry(value: Any) -> bool:
    cls = type(value)
    return cls.__module__.startswith("shapely.") and hasattr(value, "geom_type")


def _freeze_model(model: BaseModel, key: str, path: str) -> BaseModel:
    cls = _frozen_model_class(type(model))
    fields = {
        name: _freeze(getattr(model, name), key, f"{path}.{name}")
        for name in type(model).model_fields
    }
    return cls.model_construct(_fields_set=model.model_fields_set, **fields)


@functools.cache
def _frozen_model_class(cls: type[BaseModel]) -> type[BaseModel]:
    if cls.model_config.get("frozen"):
        return cls
    config = ConfigDict(**{**cls.model_config, "frozen": True})
    frozen: type[BaseModel] = type(
        cls.__name__,
        (cls,),
        {"model_config": config, "__module__": cls.__module__, "__qualname__": cls.__qualname__},
    )
    return frozen
