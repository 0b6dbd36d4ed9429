"""The names of generated worlds: ``FAMILY:N`` (one seed) and ``FAMILY:A-B`` (seeds A to B).

This is the grammar alone, shared by every family (``sim.world.families`` knows which
families there are and draws their worlds). A bare name with a colon (no path separator,
not ending in ``.toml``) is always read as such a name, so a typo is one clear
``SettingError`` (exit status 2 on the command line), never a search for a shipped
scenario of that name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from runtime.errors import SettingError
from runtime.tomlfile import did_you_mean

__all__ = ["MAX_WORLDS", "parse_name"]

MAX_WORLDS = 10_000
"""The most worlds one name may stand for."""

_NAMED = re.compile(r"([A-Za-z][A-Za-z0-9_]*):(.*)", re.DOTALL)
_SEEDS = re.compile(r"([0-9]+)(?:-([0-9]+))?", re.ASCII)


def parse_name(text: str, families: Mapping[str, str]) -> tuple[str, list[int]] | None:
    """The family and seeds ``text`` names (``hard:7``, ``gen:0-49``), among ``families``
    (name: what it draws); None when ``text`` is not such a name (a shipped scenario's
    name, or a path). A name that is one but is malformed, or of no family, raises
    ``SettingError`` saying what a good one looks like."""
    if os.sep in text or "/" in text or text.endswith(".toml"):
        return None
    named = _NAMED.fullmatch(text)
    if named is None:
        return None
    family, rest = named.group(1), named.group(2)
    if family not in families:
        known = "; ".join(f"{name}:N, {about}" for name, about in families.items())
        raise SettingError(
            f"{text!r}: no family of generated worlds named {family!r}"
            f"{did_you_mean(family, list(families))}; the families: {known}"
        )
    seeds = _SEEDS.fullmatch(rest)
    example = f"{family}:N or {family}:A-B (seeds, e.g. {family}:0-29)"
    if seeds is None:
        raise SettingError(f"{text!r}: a generated world is {example}")
    try:
        first = int(seeds.group(1))
        last = int(seeds.group(2)) if seeds.group(2) is not None else first
    except ValueError:  # more digits than Python reads
        raise SettingError(f"{text!r}: a generated world is {example}") from None
    if last < first:
        raise SettingError(f"{text!r}: the first seed must not be above the last")
    if last - first >= MAX_WORLDS:
        raise SettingError(f"{text!r}: at most {MAX_WORLDS} generated worlds at once")
    return family, list(range(first, last + 1))
