"""The write filter of text memories: what counts as saying the same thing again.

A text memory (one without a subject) is refused when its embedding is at least
``threshold`` similar to a memory its scope holds, or ``echo_threshold`` similar to one
the latest recalls returned (storing what was just recalled would echo it back
forever). Embedding similarity alone confuses facts that differ only where it matters:
with word-based embeddings "blocked near (13, 7)" and "blocked near (7, 13)" look alike,
as do "aisle 3 is blocked" and "aisle 3 is not blocked". So two texts are the same
claim only when, besides being similar, they carry the same numbers in the same order
(``numbers``) and both or neither negate (``negation``). Facts that can be contradicted
or updated are better given a subject (``runtime.longterm.MemoryTerms``): those are
compared by subject, never by text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from runtime.errors import SettingError

__all__ = ["NEGATIONS", "Claim", "NearDuplicate", "claim_of", "negates", "numbers_in"]

NEGATIONS: Final = frozenset(
    {"no", "not", "never", "none", "nothing", "nobody", "nowhere", "neither", "nor", "without"}
)
"""Words that negate what a sentence says (with any word ending in ``n't``)."""

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_APOSTROPHE = "\u2019"  # the typographic one, as in "isn\u2019t"


def numbers_in(text: str) -> tuple[str, ...]:
    """The numbers of ``text`` in order, without leading zeros (``"07"`` is ``"7"``)."""
    return tuple(n.lstrip("0") or "0" for n in _NUMBER.findall(text))


# a word (a run of [\w']) that is a negation, "cannot", or one that ends in "n't"
_NEGATION = re.compile(
    r"(?<![\w'])(?:"
    + "|".join(sorted(NEGATIONS | {"cannot"}, key=len, reverse=True))
    + r")(?![\w'])|n't(?![\w'])"
)


def negates(text: str) -> bool:
    """Whether ``text`` carries a negation word (one search: it runs for every memory
    an index loads)."""
    return _NEGATION.search(text.lower().replace(_APOSTROPHE, "'")) is not None


Claim = tuple[str | None, bool | None]
"""What a text must share with another to say the same thing (``NearDuplicate.claim``)."""


def claim_of(text: str) -> tuple[str, bool]:
    """Everything a claim can compare: the numbers of ``text`` (space-separated) and
    whether it negates. The store keeps these with each memory, so that loading a
    scope reads no text."""
    return " ".join(numbers_in(text)), negates(text)


@dataclass(frozen=True, slots=True)
class NearDuplicate:
    """The write filter of text memories (see the module docstring)."""

    threshold: float = 0.95
    echo_threshold: float = 0.85
    recall_window: int = 1
    numbers: bool = True
    negation: bool = True

    def __post_init__(self) -> None:
        for name in ("threshold", "echo_threshold"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
                raise SettingError(f"{name} must be in (0, 1], got {value!r}")
        if (
            isinstance(self.recall_window, bool)
            or not isinstance(self.recall_window, int)
            or self.recall_window < 0
        ):
            raise SettingError(f"recall_window must be an int >= 0, got {self.recall_window!r}")

    def claim(self, text: str) -> Claim:
        """What a text must share with another to be the same claim: its numbers and
        whether it negates (each only when this filter compares it). The index keeps
        its vectors grouped by it, so a duplicate check scans only its own group."""
        return self.claim_from(*claim_of(text))

    def claim_from(self, numbers: str, negation: bool) -> Claim:
        """``claim`` of a text whose ``claim_of`` is ``(numbers, negation)``."""
        return (numbers if self.numbers else None, negation if self.negation else None)

    def same_claim(self, a: str, b: str) -> bool:
        """Whether two similar texts say the same thing (numbers and negation agree)."""
        if self.numbers and numbers_in(a) != numbers_in(b):
            return False
        return not (self.negation and negates(a) != negates(b))
