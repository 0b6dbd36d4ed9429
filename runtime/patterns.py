"""Key patterns: the globs that specs, pinning and faults use to name items.

A pattern is an exact key (``pose``) or a shell-style glob (``goal:*``,
``event:action_failed*``, ``map:shelf-[0-9]*``), matched case-sensitively
against the whole key. ``validate_pattern`` says why a pattern is malformed;
``PatternSet`` matches a key against many patterns with one compiled regex.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable

from runtime.errors import SettingError

_GLOB_CHARS = frozenset("*?[")


def is_glob(pattern: str) -> bool:
    """True when ``pattern`` has a wildcard, false for an exact key."""
    return not _GLOB_CHARS.isdisjoint(pattern)


def literal_prefix(pattern: str) -> str:
    """The part of ``pattern`` before its first wildcard."""
    for i, c in enumerate(pattern):
        if c in _GLOB_CHARS:
            return pattern[:i]
    return pattern


def validate_pattern(pattern: str) -> str:
    """Return ``pattern`` if it is a well-formed key or glob, else raise ValueError."""
    if not isinstance(pattern, str):
        raise SettingError(f"a pattern must be a string, got {type(pattern).__name__}")
    if not pattern:
        raise SettingError("a pattern must not be empty")
    if any(c.isspace() for c in pattern):
        raise SettingError(f"pattern {pattern!r} contains white space")
    i = 0
    while i < len(pattern):
        if pattern[i] == "[":
            j = i + 1
            if pattern[j : j + 1] == "!":
                j += 1
            if pattern[j : j + 1] == "]":
                j += 1  # a ']' first in a class is literal
            close = pattern.find("]", j)
            if close == -1:
                raise SettingError(f"pattern {pattern!r} has an unclosed '[' at position {i}")
            i = close
        elif pattern[i] == "]":
            raise SettingError(f"pattern {pattern!r} has an unmatched ']' at position {i}")
        i += 1
    return pattern


def matches(key: str, pattern: str) -> bool:
    """True when ``key`` matches ``pattern`` (an exact key or a glob)."""
    if not is_glob(pattern):
        return key == pattern
    return fnmatch.fnmatchcase(key, pattern)


def overlaps(a: str, b: str) -> bool:
    """A conservative test of whether two patterns can name a common key.

    True when they are equal, or when either, read as a key, matches the other.
    """
    return a == b or matches(a, b) or matches(b, a)


def specificity(pattern: str) -> tuple[int, int]:
    """How specific a pattern is: more literal characters first, then length."""
    literal = sum(1 for c in pattern if c not in _GLOB_CHARS)
    return (literal, len(pattern))


class PatternSet:
    """Many patterns, matched at once. Empty means: matches nothing."""

    _derived = ("*",)  # made from its patterns, a setting: a checkpoint holds none of it

    __slots__ = ("_exact", "_patterns", "_regex")

    def __init__(self, patterns: Iterable[str]) -> None:
        self._patterns = tuple(dict.fromkeys(patterns))
        self._exact = frozenset(p for p in self._patterns if not is_glob(p))
        globs = [p for p in self._patterns if is_glob(p)]
        self._regex = (
            re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in globs)) if globs else None
        )

    @property
    def patterns(self) -> tuple[str, ...]:
        return self._patterns

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def match(self, key: str) -> bool:
        if key in self._exact:
            return True
        return self._regex is not None and self._regex.match(key) is not None
