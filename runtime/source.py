"""A source of the working set (the board, the log): what it keeps out of a pickle.

A source guards its state with a lock that a runtime may share among its sources, and
calls listeners (a simulation's digest, a recorder) on every change. Neither travels in
a pickle (a checkpoint): an unpickled source has a lock of its own and no listeners, and
whoever shares the lock or listens wires itself up again. Derived indexes are rebuilt
rather than pickled.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar


class PicklableSource:
    """Pickles without ``lock``, ``_listeners`` and the attributes named in ``_derived``."""

    _derived: ClassVar[tuple[str, ...]] = ()
    lock: threading.RLock

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in ("lock", "_listeners", *self._derived):
            del state[name]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.RLock()
        self._rebuild()

    def _rebuild(self) -> None:
        """Set up no listeners and the derived attributes again, after unpickling."""
        raise NotImplementedError
