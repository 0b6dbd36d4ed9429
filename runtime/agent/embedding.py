"""Embedders: text to vectors for long-term recall, and the identity a memory checks them by.

An embedder is any callable ``text -> 1-D vector``; one that also has
``embed_batch(texts) -> 2-D array`` is asked for many texts at once (a model embeds a
batch far faster than one text at a time). ``embed_many`` is the one place that calls
either, and checks what comes back.

Similarities between vectors of two different embedders mean nothing, and two
embedders can share a name and a dimension (two lambdas, two models of one size), so a
memory stores its embedder's ``EmbedderIdentity``: the name, the dimension and a
fingerprint of its output on fixed probe texts. A memory opened with an embedder whose
identity differs is refused with an ``EmbedderMismatch``.

``HashingEmbedder`` is the default: deterministic feature hashing, so nothing downloads
a model. ``BatchEmbedder`` is the typed protocol of an embedder that names itself, knows
its dimension and embeds a batch at once: the default and the optional sentence model
(``runtime.agent.sentence_model``, the ``[embeddings]`` extra) both are one.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, runtime_checkable

import numpy as np

from runtime.agent.duplicates import CJK_CHARS
from runtime.errors import SettingError

__all__ = [
    "PROBES",
    "BatchEmbedder",
    "Embedder",
    "EmbedderIdentity",
    "EmbedderMismatch",
    "HashingEmbedder",
    "embed_many",
    "embedder_name",
]

Embedder = Callable[[str], Any]
"""A text -> 1-D vector function (a list or numpy array of floats, fixed length); it may
also have ``embed_batch(texts)`` returning one row per text."""


@runtime_checkable
class BatchEmbedder(Protocol):
    """An embedder that names itself (the name a memory file keeps), knows its dimension
    and embeds many texts in one call (a model is far faster per text in a batch)."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def __call__(self, text: str) -> np.ndarray:
        """One text's vector (``dim`` floats)."""
        ...

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """One row of ``dim`` floats per text, in order."""
        ...


PROBES: Final = (
    "a forklift blocked the way near (13, 7)",
    "dock B unloads slowly in the afternoon",
    "the charger at the east wall is out of order",
    "Battery at 20%: go to the charger first.",
    "no longer blocked",
    "x",
)
"""The fixed texts an embedder's fingerprint is taken on."""

_CACHED_FEATURES = 1 << 16  # features whose hash a HashingEmbedder keeps
_SAME_PROBE = 0.999  # cosine above which two embedders agree on a probe (float noise aside)
_WORD = re.compile(r"\w+", re.UNICODE)
_CJK_RUN = re.compile(f"(?:{CJK_CHARS.pattern})+")


class EmbedderMismatch(SettingError):
    """A memory was opened with another embedder than the one its vectors came from."""


def embedder_name(embed: Embedder) -> str:
    """An embedder's ``name`` attribute, else its (qualified) function or class name."""
    return str(getattr(embed, "name", None) or getattr(embed, "__qualname__", type(embed).__name__))


def embed_many(embed: Embedder, texts: Sequence[str]) -> np.ndarray:
    """The unit vectors of ``texts`` (one float64 row each; a zero vector stays zero), from
    ``embed.embed_batch`` when the embedder has it, else one call per text."""
    if not texts:
        return np.zeros((0, 0))
    batch = getattr(embed, "embed_batch", None)
    if callable(batch):
        raw = np.asarray(batch(list(texts)), dtype=np.float64)
        if raw.ndim != 2 or raw.shape[0] != len(texts):
            raise SettingError(
                f"embed_batch must return one row per text ({len(texts)}), got shape {raw.shape}"
            )
    else:
        rows = [np.asarray(embed(t), dtype=np.float64) for t in texts]
        shapes = {r.shape for r in rows}
        if len(shapes) != 1 or rows[0].ndim != 1:
            raise SettingError(
                f"the embedder must return 1-D vectors of one length, got shapes {sorted(shapes)}"
            )
        raw = np.vstack(rows)
    if not raw.shape[1] or not np.all(np.isfinite(raw)):
        raise SettingError(
            "the embedder must return non-empty vectors of finite numbers, got shape "
            f"{raw.shape}{'' if np.all(np.isfinite(raw)) else ' with non-finite numbers'}"
        )
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(raw, norms, out=np.zeros_like(raw), where=norms > 0)
    return unit


@dataclass(frozen=True, slots=True)
class EmbedderIdentity:
    """An embedder's name, dimension and output on ``PROBES`` (unit float32 rows)."""

    name: str
    dim: int
    probes: np.ndarray

    @classmethod
    def of(cls, embed: Embedder) -> EmbedderIdentity:
        vectors = embed_many(embed, PROBES).astype(np.float32)
        return cls(embedder_name(embed), int(vectors.shape[1]), vectors)

    @property
    def fingerprint(self) -> str:
        """A short digest of the probe vectors (rounded, so float noise does not show)."""
        rounded = np.round(self.probes.astype(np.float64), 3) + 0.0  # -0.0 -> 0.0
        return hashlib.sha256(rounded.tobytes()).hexdigest()[:16]

    def encoded_probes(self) -> str:
        return base64.b64encode(self.probes.astype("<f4").tobytes()).decode("ascii")

    @staticmethod
    def decode_probes(text: str, dim: int) -> np.ndarray:
        data = np.frombuffer(base64.b64decode(text), dtype="<f4")
        return data.reshape(-1, dim).astype(np.float32)

    def check(self, stored: EmbedderIdentity, *, where: str) -> None:
        """Raise ``EmbedderMismatch`` unless ``stored`` is this embedder's identity."""
        if stored.name != self.name:
            raise EmbedderMismatch(
                f"{where}: memories were embedded with {stored.name!r}, not {self.name!r}; "
                "use the same embedder (similarities across embedders mean nothing)"
            )
        if stored.dim != self.dim:
            raise EmbedderMismatch(
                f"{where}: the embedder returned {self.dim} numbers; this memory holds "
                f"{stored.dim}-dimensional vectors (embedded with {stored.name!r})"
            )
        if stored.probes.shape != self.probes.shape:
            raise EmbedderMismatch(f"{where}: the stored embedder fingerprint is damaged")
        agree = np.sum(stored.probes.astype(np.float64) * self.probes, axis=1)
        zero = (np.linalg.norm(stored.probes, axis=1) == 0) & (
            np.linalg.norm(self.probes, axis=1) == 0
        )
        if not np.all((agree >= _SAME_PROBE) | zero):
            raise EmbedderMismatch(
                f"{where}: the embedder {self.name!r} ({self.dim} dimensions) gives other "
                f"vectors than the one these memories were embedded with (fingerprint "
                f"{self.fingerprint}, stored {stored.fingerprint}): a different model or "
                "function under the same name; use the one the memories came from"
            )


class HashingEmbedder:
    """Deterministic feature hashing of words, word pairs and character n-grams.

    Texts sharing words and word pieces get similar vectors; the same text always
    gets the same unit vector (blake2b, not Python's salted ``hash``); no model.
    Chinese, Japanese and Korean text has no spaces between words, so a run of CJK
    characters is split into its overlapping character pairs (the usual words of a
    hashing embedder for CJK text), each a word, with each character a feature of its
    own: "会议在三月" is 会议, 议在, 在三, 三月. Text without CJK characters gets the
    vectors it always had.
    """

    def __init__(self, dim: int = 256, *, ngram: int = 3) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 8:
            raise SettingError(f"dim must be an int >= 8, got {dim!r}")
        if isinstance(ngram, bool) or not isinstance(ngram, int) or ngram < 2:
            raise SettingError(f"ngram must be an int >= 2, got {ngram!r}")
        self.dim = dim
        self.ngram = ngram
        self.name = f"hashing-{dim}-{ngram}"
        self.revision = "cjk-pairs"
        self._slots: dict[str, tuple[int, float]] = {}  # feature -> (slot, sign), a cache

    def __call__(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise TypeError(f"HashingEmbedder embeds strings, got {type(text).__name__}")
        words, characters = _words(text)
        slots: list[int] = []
        weights: list[float] = []
        cache = self._slots
        for feature, weight in self._features(words, characters):
            slot = cache.get(feature)
            if slot is None:
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                h = int.from_bytes(digest, "little")
                slot = (h % self.dim, 1.0 if (h >> 63) & 1 else -1.0)
                if len(cache) >= _CACHED_FEATURES:
                    cache.clear()
                cache[feature] = slot
            slots.append(slot[0])
            weights.append(weight * slot[1])
        vector = np.bincount(
            np.asarray(slots, dtype=np.intp), weights=np.asarray(weights), minlength=self.dim
        ).astype(np.float64)
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    def __getstate__(self) -> dict[str, Any]:
        return {"dim": self.dim, "ngram": self.ngram, "name": self.name, "revision": self.revision}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._slots = {}

    @staticmethod
    def changed(text: str, since: str | None) -> bool:
        """Whether the revision ``since`` (None: before revisions) embedded ``text``
        otherwise than this one: only text with CJK characters changed."""
        return since != "cjk-pairs" and CJK_CHARS.search(text) is not None

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text (the same vectors as one call each)."""
        out = np.zeros((len(texts), self.dim))
        for i, text in enumerate(texts):
            out[i] = self(text)
        return out

    def _features(self, words: list[str], characters: list[str]) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = [(f"w:{w}", 1.0) for w in words]
        out += [(f"u:{c}", 0.5) for c in characters]
        out += [(f"b:{a} {b}", 0.5) for a, b in itertools.pairwise(words)]
        n = self.ngram
        for w in words:
            padded = f"#{w}#"
            out += [(f"c:{padded[i : i + n]}", 0.25) for i in range(max(1, len(padded) - n + 1))]
        return out


def _words(text: str) -> tuple[list[str], list[str]]:
    """The lower-case words of ``text``, each run of CJK characters as its overlapping
    character pairs (a lone character as itself), and the CJK characters themselves."""
    words: list[str] = []
    characters: list[str] = []
    for word in _WORD.findall(text):
        if CJK_CHARS.search(word) is None:
            words.append(word.lower())
            continue
        at = 0
        for run in _CJK_RUN.finditer(word):
            if run.start() > at:
                words.append(word[at : run.start()].lower())
            chars = run.group()
            characters.extend(chars)
            words.extend(chars[i : i + 2] for i in range(max(1, len(chars) - 1)))
            at = run.end()
        if at < len(word):
            words.append(word[at:].lower())
    return words, characters
