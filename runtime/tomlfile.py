"""TOML input files: how a file's problems are told, so people can fix them.

Specs, scenarios and fault files are TOML that people write by hand. A problem
is told as ``file: key.path: what is wrong`` — the key path in TOML's own
spelling (``weights."goal:*"``, ``shelves[2].polygon``) — and a syntax error
keeps its line and column. ``FileError`` carries the file and its problems.
``read_toml`` is how every loader reads one (through ``runtime.files.read_input``): a
missing file, a folder, a device or a FIFO, an unreadable or oversized one, bytes that are
not UTF-8, invalid TOML and values nested deeper than
``MAX_DEPTH`` are each one problem, never a traceback.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from runtime.errors import TickworkError
from runtime.files import InputFileError, read_input

MAX_BYTES = 16 << 20
"""The largest TOML input read (16 MiB): a spec, a scenario or a fault file is far smaller."""
MAX_DEPTH = 32
"""Arrays and tables nested deeper than this are refused (none of our files nests past 4)."""

_TOML_REASONS = {"no such file": "file not found"}

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_TOML_POSITION = re.compile(r"^(?P<msg>.*) \(at (?P<where>line \d+, column \d+|end of document)\)$")


class FileError(TickworkError, ValueError):
    """A file that cannot be loaded; one ``file: key.path: problem`` per line.

    ``problems`` hold ``key.path: what is wrong`` (without the file); ``str()``
    prefixes each with ``path``.
    """

    def __init__(self, path: str, problems: Sequence[str]) -> None:
        if not problems:
            raise ValueError(f"a {type(self).__name__} needs at least one problem")
        self.path = path
        self.problems = tuple(problems)
        super().__init__("\n".join(f"{path}: {problem}" for problem in self.problems))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.problems))


def key_path(loc: Sequence[str | int]) -> str:
    """A pydantic error location as a TOML key path: ``weights."goal:*"``, ``tasks[4].pickup``."""
    out = ""
    for part in loc:
        if part == "[key]":
            continue  # pydantic's marker for an error in a mapping key, not in its value
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = part if _BARE_KEY.fullmatch(part) else json.dumps(part, ensure_ascii=False)
        out += f".{text}" if out else text
    return out


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest choice, or nothing."""
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def syntax_problem(exc: tomllib.TOMLDecodeError) -> str:
    """``line L, column C: invalid TOML: what`` for a TOML syntax error."""
    line, column = getattr(exc, "lineno", None), getattr(exc, "colno", None)
    text = str(getattr(exc, "msg", None) or exc)
    if line is not None and column is not None:
        return f"line {line}, column {column}: invalid TOML: {text}"
    found = _TOML_POSITION.match(text)
    if found is None:
        return f"invalid TOML: {text}"
    return f"{found['where']}: invalid TOML: {found['msg']}"


E = TypeVar("E", bound="FileError")


def read_toml(
    path: str | os.PathLike[str], *, error: type[E], shown: str | None = None
) -> dict[str, Any]:
    """The TOML document at ``path``, or ``error(shown, [problem])`` saying why not."""
    where = os.fspath(path) if shown is None else shown
    try:
        raw = read_input(path, limit=MAX_BYTES, what="a TOML file")
    except InputFileError as exc:
        raise error(where, (_TOML_REASONS.get(exc.reason, exc.reason),)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(where, (f"not UTF-8 text (bad byte at offset {exc.start})",)) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(where, (syntax_problem(exc),)) from None
    except RecursionError:
        raise error(where, (f"invalid TOML: nested deeper than {MAX_DEPTH} levels",)) from None
    if _depth(data) > MAX_DEPTH:
        raise error(where, (f"values nested deeper than {MAX_DEPTH} levels",))
    return data


def _depth(value: Any) -> int:
    """How deep arrays and tables nest in ``value`` (without recursion)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            return deepest
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest
