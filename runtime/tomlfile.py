"""TOML input files: how a file's problems are told, so people can fix them.

Specs, scenarios and fault files are TOML that people write by hand. A problem
is told as ``file: key.path: what is wrong`` — the key path in TOML's own
spelling (``weights."goal:*"``, ``shelves[2].polygon``) — and a syntax error
keeps its line and column. ``FileError`` carries the file and its problems.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from collections.abc import Iterable, Sequence
from typing import Any

from runtime.errors import TickworkError

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
