"""The write filter of text memories: what counts as saying the same thing again.

A text memory (one without a subject) is refused when its embedding is at least
``threshold`` similar to a memory its scope holds, or ``echo_threshold`` similar to one
the latest recalls returned (storing what was just recalled would echo it back
forever). Embedding similarity alone confuses facts that differ only where it matters:
with word-based embeddings "blocked near (13, 7)" and "blocked near (7, 13)" look alike,
as do "aisle 3 is blocked" and "aisle 3 is not blocked"; a sentence model scores "the
meeting is on Tuesday" and "... on Thursday" 0.96, and "the backup succeeded" and "...
failed" 0.90. So two texts are the same claim only when, besides being similar, they
carry the same numbers in the same order (``numbers``), both or neither negate
(``negation``) and they use the same content words, in any order (``words``).

Refusing an update loses it; storing a restatement costs a row. So the guards lean one
way: a text that changes any content word (Tuesday to Thursday, home to office,
prefers to dislikes) is a new claim and is stored, whatever the embedder says; a
restatement (case, punctuation, spacing, word order, articles and forms of "to be"
aside) is refused. A paraphrase in other words is stored too: telling a synonym from an
update needs more than a similarity. Facts that can be contradicted or updated are
better given a subject (``runtime.longterm.MemoryTerms``): those are compared by
subject, never by text, and a newer one supersedes the current one.

The guards know CJK text: the negation words include 不, 没(有), 无, 未, 非, 别 and the
failure words 失败 / 失敗 (as English has "failed"), Chinese numerals are numbers
(三月 is 3, 四月 is 4, 十二 is 12; full-width digits are digits), and a CJK character is
a content word of its own (text without spaces has no words to split on).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final

from runtime.errors import SettingError

__all__ = [
    "CJK_CHARS",
    "CJK_NEGATIONS",
    "CLAIM_RULES",
    "NEGATIONS",
    "STOP_WORDS",
    "Claim",
    "NearDuplicate",
    "claim_of",
    "content_words",
    "negates",
    "numbers_in",
]

NEGATIONS: Final = frozenset(
    {"no", "not", "never", "none", "nothing", "nobody", "nowhere", "neither", "nor", "without"}
    | {"fail", "fails", "failed", "failing", "failure", "unsuccessful"}
)
"""Words that negate what a sentence says (with any word ending in ``n't``); a failure
says that something did not succeed."""

CJK_NEGATIONS: Final = frozenset(
    {"不", "没", "沒", "无", "無", "未", "非", "别", "別", "勿", "莫", "否", "失败", "失敗"}
    | {"ない", "ません", "なかった", "않", "안 ", "못", "실패"}
)
"""Negations and failure words of Chinese, Japanese and Korean text, found anywhere in
it (CJK text has no spaces to find words by: 不 negates in 不是 and 不能 alike)."""

CLAIM_RULES: Final = "2"
"""The version of what ``claim_of`` computes (2: CJK negations and numerals, failure
words); a memory file whose stored claims were computed by other rules has them
computed again when it is opened."""

STOP_WORDS: Final = frozenset(
    {"a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "am", "by"}
    | {"的", "了", "是", "被", "着", "過", "过", "吗", "嗎", "呢", "吧", "啊", "呀"}
)
"""Words whose presence changes no claim (articles, forms of "to be", the passive's "by"
and their Chinese particles): left out when ``words`` compares two texts."""

_CJK_NUMERALS: Final = "〇零一二两兩三四五六七八九十百千万萬亿億"
_NUMBER = re.compile(rf"\d+(?:\.\d+)?|[{_CJK_NUMERALS}]+")
_APOSTROPHE = "\u2019"  # the typographic one, as in "isn\u2019t"
_CJK_DIGITS: Final = dict(
    zip("〇零一二两兩三四五六七八九", (0, 0, 1, 2, 2, 2, 3, 4, 5, 6, 7, 8, 9), strict=True)
)
_CJK_UNITS: Final = {"十": 10, "百": 100, "千": 1000}
_CJK_GROUPS: Final = {"万": 10**4, "萬": 10**4, "亿": 10**8, "億": 10**8}
_CJK = (
    "\u2e80-\u2fdf\u3005\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff"
)
CJK_CHARS: Final = re.compile(f"[{_CJK}]")
"""One character of Chinese, Japanese (kana) or Korean (Hangul) text."""
_TOKEN = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")  # a CJK character, or a run of other word chars


def _cjk_number(run: str) -> int:
    """The value of a run of Chinese numerals (三 3, 十二 12, 二十 20, 三百零五 305,
    一九八四 1984 read digit by digit)."""
    if not any(c in _CJK_UNITS or c in _CJK_GROUPS for c in run):
        return int("".join(str(_CJK_DIGITS[c]) for c in run))
    total = section = digit = 0
    for c in run:
        if c in _CJK_DIGITS:
            digit = _CJK_DIGITS[c]
        elif c in _CJK_UNITS:
            section += (digit or 1) * _CJK_UNITS[c]
            digit = 0
        else:
            total += (section + digit) * _CJK_GROUPS[c]
            section = digit = 0
    return total + section + digit


def numbers_in(text: str) -> tuple[str, ...]:
    """The numbers of ``text`` in order, without leading zeros (``"07"`` is ``"7"``);
    full-width digits are digits, and a run of Chinese numerals is its value (三月 is 3,
    二十 is 20)."""
    out = []
    for n in _NUMBER.findall(unicodedata.normalize("NFKC", text)):
        out.append(str(_cjk_number(n)) if n[0] in _CJK_NUMERALS else n.lstrip("0") or "0")
    return tuple(out)


# a word (a run of [\w']) that is a negation, "cannot", or one that ends in "n't"
_NEGATION = re.compile(
    r"(?<![\w'])(?:"
    + "|".join(sorted(NEGATIONS | {"cannot"}, key=len, reverse=True))
    + r")(?![\w'])|n't(?![\w'])|"
    + "|".join(sorted(CJK_NEGATIONS, key=len, reverse=True))
)


def negates(text: str) -> bool:
    """Whether ``text`` carries a negation word, English or CJK (one search: it runs for
    every memory an index loads)."""
    return _NEGATION.search(text.lower().replace(_APOSTROPHE, "'")) is not None


def content_words(text: str) -> frozenset[str]:
    """The words a claim is made of: lower-case runs of letters and digits (each CJK
    character a word of its own), less ``STOP_WORDS``; apostrophes split ("isn't" is
    "isn" and "t", so a negation stays a word)."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return frozenset(_TOKEN.findall(folded)) - STOP_WORDS


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
    words: bool = True

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
        """Whether two similar texts say the same thing: their numbers, negation and
        content words agree (each only when this filter compares it)."""
        if self.numbers and numbers_in(a) != numbers_in(b):
            return False
        if self.negation and negates(a) != negates(b):
            return False
        return not (self.words and content_words(a) != content_words(b))
