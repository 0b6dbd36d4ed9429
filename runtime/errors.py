"""The one base of every error tickwork raises on purpose.

A user catches ``TickworkError`` to catch them all; the command line turns one into
exit status 2 in one place. Each project error also keeps the built-in base that
describes it best (``SpecError`` is a ``ValueError``, ``FreezeError`` a ``TypeError``),
so code written against those keeps working.
"""

from __future__ import annotations


class TickworkError(Exception):
    """An error tickwork raises on purpose; its message says what is wrong and where."""


class SettingError(TickworkError, ValueError):
    """A setting or an argument given to a tickwork object is out of its range."""
