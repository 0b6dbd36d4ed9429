"""A view no one may read: for the tests that a cabin reads its view only in its reader.

Such a test puts a ``RealViewReader`` in place of the cabin's reader, so that the cabin's
own ``ViewReader`` reads the real view, and hands the cabin's ``step`` a ``SealedView``:
any read of it (an attribute, a key, ``in``, iteration, ``len``) fails the test, naming
what was read.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["RealViewReader", "SealedView"]


class SealedView:
    """A view that fails on any read (see the module docstring)."""

    def __getattribute__(self, name: str) -> NoReturn:
        raise AssertionError(f"the view was read after its Seen: .{name}")

    def __getitem__(self, key: str) -> NoReturn:
        raise AssertionError(f"the view was read after its Seen: [{key!r}]")

    def __contains__(self, key: object) -> NoReturn:
        raise AssertionError(f"the view was read after its Seen: {key!r} in")

    def __iter__(self) -> NoReturn:
        raise AssertionError("the view was read after its Seen: iter")

    def __len__(self) -> NoReturn:
        raise AssertionError("the view was read after its Seen: len")


class RealViewReader:
    """Stands in for a cabin's reader: whatever view the step hands it, it reads ``view``
    (set before each step) with the cabin's own reader."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.view: Any = None

    def read(self, _sealed: object, *more: Any) -> Any:
        return self.reader.read(self.view, *more)
