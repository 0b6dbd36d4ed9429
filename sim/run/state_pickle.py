"""Pickling a simulation's state for a checkpoint, and unpickling it without running code
from the file.

``StatePickler`` pickles locks as references (each distinct lock comes back as one new
lock) and arrays of shapely geometries as one vectorised WKB conversion (an ``STRtree``
pickles its geometries; one at a time they cost 4 µs each).

``StateUnpickler`` is the other half, and it refuses everything a checkpoint does not
need. A pickle names the callables that rebuild its objects, so an unrestricted
unpickler runs whatever a crafted file names. This one resolves a name only if it is:

- a class defined in tickwork's own packages (``runtime``, ``cabins``, ``sim``), or one of
  the functions a checkpoint uses to rebuild values (``runtime.freeze.freeze``,
  ``runtime.freeze.rebuild_frozen`` and ``rebuild_geometries``);
- one of the few numpy, shapely and standard-library names a simulation's state is made
  of (``ALLOWED``): array and random-generator reconstruction, the STRtree, counters and
  deques, compiled patterns;
- ``getattr`` for a bound method, and then only a public method of a tickwork object or
  a compiled pattern's ``match`` (``SAFE_METHODS``).

and it calls a tickwork class (pickle's REDUCE) only if the class asks to be rebuilt that
way (it defines ``__reduce__``, as ``Feature`` does): other tickwork objects are made with
``__new__`` and their state, never their constructor, so a crafted file cannot make, say,
a ``Recorder`` open a file. Anything else is an ``UnpicklingError`` naming what the file
asked for, before any of it is called. It is the pure-Python unpickler (so that REDUCE can
be checked): loading the default scenario's checkpoint takes about 25 ms.
"""

from __future__ import annotations

import importlib
import io
import pickle
import re
import threading
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

PROTOCOL = 5  # protocol 5 keeps read-only (frozen) numpy arrays read-only
_LOCK_TYPES: dict[type, str] = {type(threading.Lock()): "lock", type(threading.RLock()): "rlock"}
_OWN = ("runtime", "cabins", "sim")

ALLOWED: frozenset[tuple[str, str]] = frozenset(
    {
        ("array", "_array_reconstructor"),
        ("array", "array"),
        ("collections", "Counter"),
        ("collections", "OrderedDict"),
        ("collections", "defaultdict"),
        ("collections", "deque"),
        ("copyreg", "_reconstructor"),
        ("builtins", "bytearray"),
        ("builtins", "complex"),
        ("builtins", "frozenset"),
        ("builtins", "object"),
        ("builtins", "set"),
        ("builtins", "slice"),
        ("functools", "partial"),
        ("numpy", "dtype"),
        ("numpy", "ndarray"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy._core.numeric", "_frombuffer"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy.core.numeric", "_frombuffer"),
        ("numpy.random._pcg64", "PCG64"),
        ("numpy.random._pickle", "__bit_generator_ctor"),
        ("numpy.random._pickle", "__generator_ctor"),
        ("numpy.random.bit_generator", "SeedSequence"),
        ("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"),
        ("re", "_compile"),
        ("shapely.io", "from_wkb"),
        ("shapely.strtree", "STRtree"),
        ("structlog._config", "BoundLoggerLazyProxy"),
        ("time", "perf_counter"),
        ("runtime.freeze", "freeze"),
        ("runtime.freeze", "rebuild_frozen"),  # a FrozenDict, frozen again or of live objects
        ("sim.run.state_pickle", "rebuild_geometries"),
    }
)
"""(module, name) of every callable a checkpoint may name besides tickwork's classes."""

SAFE_METHODS = {re.Pattern: frozenset({"match", "fullmatch", "search"})}
"""The methods of non-tickwork objects a checkpoint may hold bound (compiled globs)."""


def rebuild_geometries(wkb: Any, writeable: bool) -> Any:
    """An array of shapely geometries from their WKB (as ``StatePickler`` wrote them)."""
    import shapely

    array = shapely.from_wkb(wkb)
    array.flags.writeable = writeable
    return array


class StatePickler(pickle.Pickler):
    """Pickles a simulation's state: locks as references, geometry arrays as WKB."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=PROTOCOL)
        self._locks: dict[int, int] = {}
        self._held: list[object] = []  # keeps ids unique while pickling

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is np.ndarray and obj.dtype == object and obj.size:
            import shapely

            if shapely.is_geometry(obj).all():
                return (
                    rebuild_geometries,
                    (shapely.to_wkb(obj, include_srid=True), bool(obj.flags.writeable)),
                )
        return NotImplemented

    def persistent_id(self, obj: Any) -> Any:
        kind = _LOCK_TYPES.get(type(obj))
        if kind is None:
            return None
        number = self._locks.get(id(obj))
        if number is None:
            number = self._locks[id(obj)] = len(self._locks)
            self._held.append(obj)
        return (kind, number)


class StateUnpickler(pickle._Unpickler):
    """Unpickles what ``StatePickler`` wrote, and refuses to name or call anything else."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file)
        self._locks: dict[int, object] = {}

    def load_reduce(self) -> None:
        stack: list[Any] = self.stack  # type: ignore[attr-defined]
        args = stack.pop()
        func = stack[-1]
        if (
            isinstance(func, type)
            and func.__module__.split(".")[0] in _OWN
            and "__reduce__" not in vars(func)
            and "__reduce_ex__" not in vars(func)
        ):
            raise pickle.UnpicklingError(
                f"the checkpoint calls {func.__module__}.{func.__qualname__}(...), which "
                "a tickwork checkpoint never does (refused, not run)"
            )
        stack[-1] = func(*args)

    dispatch: ClassVar[dict[int, Callable[[Any], None]]] = {
        **pickle._Unpickler.dispatch,
        pickle.REDUCE[0]: load_reduce,
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("builtins", "getattr"):
            return _bound_method
        if (module, name) in ALLOWED:
            return super().find_class(module, name)
        if module.split(".")[0] in _OWN and "." not in name:
            found = getattr(_module(module, name), name, None)
            if isinstance(found, type) and found.__module__ == module:
                return found
        raise pickle.UnpicklingError(
            f"the checkpoint names {module}.{name}, which a tickwork checkpoint never holds "
            "(refused, not run)"
        )

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 2 and pid[0] in ("lock", "rlock")):
            raise pickle.UnpicklingError(f"unknown reference {pid!r} in the checkpoint")
        kind, number = pid
        lock = self._locks.get(number)
        if lock is None:
            lock = self._locks[number] = threading.RLock() if kind == "rlock" else threading.Lock()
        return lock


def _module(module: str, name: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise pickle.UnpicklingError(
            f"the checkpoint names {module}.{name}, which this tickwork does not have"
        ) from None


def _bound_method(obj: Any, name: str) -> Any:
    """``getattr`` as a checkpoint may use it: a public method of a tickwork object, or a
    method ``SAFE_METHODS`` lists."""
    if not isinstance(name, str) or name.startswith("_"):
        raise pickle.UnpicklingError(f"the checkpoint asks for attribute {name!r} (refused)")
    kind = type(obj)
    if name in SAFE_METHODS.get(kind, ()) or (
        kind.__module__.split(".")[0] in _OWN and callable(getattr(kind, name, None))
    ):
        return getattr(obj, name)
    raise pickle.UnpicklingError(
        f"the checkpoint asks for {kind.__module__}.{kind.__qualname__}.{name} (refused)"
    )


__all__ = [
    "ALLOWED",
    "PROTOCOL",
    "SAFE_METHODS",
    "StatePickler",
    "StateUnpickler",
    "rebuild_geometries",
]
