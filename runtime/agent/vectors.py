"""The vector index of one scope's memories: held in memory, exact, and cheap to scan.

Each vector is kept as int8 codes with its own scale (a quarter of float32's bytes, so
a scan of 100,000 memories reads 25 MB, not 100 MB), scanned with NumKong's SIMD int8
dot products. Quantising loses precision, but by a bounded amount: with ``x̂`` the
decoded codes of ``x`` and ``e = x - x̂`` the quantisation error,

    |x·q - x̂·q̂| <= |x̂| |e_q| + |e_x| |q̂| + |e_x| |e_q|

so every stored vector's true score lies within a known interval of its scanned
score. A threshold query (is anything at least ``t`` similar?) keeps the vectors whose
interval reaches ``t``; a top-``k`` query keeps those whose interval reaches the
``k``-th best lower end. The caller scores those few candidates exactly (float32
vectors, from the store), so answers are exact, not approximate.

The index changes only through ``add`` and ``remove`` (swap with the last row: O(1)),
so the store keeps it in step with its writes instead of reloading it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from types import ModuleType

import numpy as np

_nk: ModuleType | None
try:  # the SIMD kernels; numpy does the same exactly, only slower
    import numkong as _nk
except ImportError:  # pragma: no cover - numkong ships wheels for the supported platforms
    _nk = None

__all__ = ["ScopeIndex", "quantize"]

_SLACK = 1e-6  # float rounding in the scale products, far above its real size


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows of float vectors as (int8 codes, 1/scale, |x̂|, |x - x̂|), all per row."""
    rows = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
    peak = np.max(np.abs(rows), axis=1) if rows.shape[1] else np.zeros(len(rows))
    scale = np.where(peak > 0, 127.0 / np.where(peak > 0, peak, 1.0), 1.0)
    codes = np.clip(np.rint(rows * scale[:, None]), -127, 127).astype(np.int8)
    inverse = 1.0 / scale
    decoded = codes.astype(np.float64) * inverse[:, None]
    return (
        codes,
        inverse,
        np.linalg.norm(decoded, axis=1),
        np.linalg.norm(rows - decoded, axis=1),
    )


class ScopeIndex:
    """The quantised vectors of one scope, by memory id (see the module docstring)."""

    def __init__(self, dim: int, *, capacity: int = 64) -> None:
        self.dim = dim
        size = max(1, capacity)
        self._ids = np.zeros(size, dtype=np.int64)
        self._codes = np.zeros((size, dim), dtype=np.int8)
        self._inverse = np.zeros(size)
        self._norm = np.zeros(size)
        self._error = np.zeros(size)
        self._row: dict[int, int] = {}
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._row

    @property
    def nbytes(self) -> int:
        """Bytes held by the index's arrays (its allocated capacity)."""
        return int(
            self._ids.nbytes
            + self._codes.nbytes
            + self._inverse.nbytes
            + self._norm.nbytes
            + self._error.nbytes
        )

    def ids(self) -> np.ndarray:
        return self._ids[: self._n].copy()

    def add(self, ids: Sequence[int], vectors: np.ndarray) -> None:
        """Add (or replace) the vectors of ``ids``."""
        if not len(ids):
            return
        codes, inverse, norm, error = quantize(vectors)
        for i, memory_id in enumerate(ids):
            row = self._row.get(int(memory_id))
            if row is None:
                row = self._grow()
                self._row[int(memory_id)] = row
                self._ids[row] = memory_id
            self._codes[row] = codes[i]
            self._inverse[row] = inverse[i]
            self._norm[row] = norm[i]
            self._error[row] = error[i]

    def remove(self, ids: Iterable[int]) -> int:
        """Drop ``ids`` (those held); how many were dropped."""
        dropped = 0
        for memory_id in ids:
            row = self._row.pop(int(memory_id), None)
            if row is None:
                continue
            last = self._n - 1
            if row != last:
                moved = int(self._ids[last])
                self._ids[row] = moved
                self._codes[row] = self._codes[last]
                self._inverse[row] = self._inverse[last]
                self._norm[row] = self._norm[last]
                self._error[row] = self._error[last]
                self._row[moved] = row
            self._n = last
            dropped += 1
        return dropped

    def bounds(self, query: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, lower, upper): an interval holding each held vector's true score."""
        n = self._n
        if not n:
            empty = np.zeros(0)
            return np.zeros(0, dtype=np.int64), empty, empty
        q_codes, q_inverse, q_norm, q_error = quantize(query)
        dots = self._dots(q_codes[0], n)
        approx = dots * (self._inverse[:n] * q_inverse[0])
        slack = (
            self._norm[:n] * q_error[0]
            + self._error[:n] * q_norm[0]
            + self._error[:n] * q_error[0]
            + _SLACK
        )
        return self._ids[:n], approx - slack, approx + slack

    def reaching(self, query: np.ndarray, threshold: float) -> np.ndarray:
        """Ids whose true score may be ``>= threshold`` (a superset of those that are)."""
        ids, _, upper = self.bounds(query)
        reached: np.ndarray = ids[upper >= threshold]
        return reached

    def top_candidates(self, query: np.ndarray, k: int) -> np.ndarray:
        """Ids among which the ``k`` best-scoring vectors are (a superset of them)."""
        ids, lower, upper = self.bounds(query)
        if len(ids) <= k:
            return ids
        kth = np.partition(lower, len(lower) - k)[len(lower) - k]
        kept: np.ndarray = ids[upper >= kth]
        return kept

    def _dots(self, q_codes: np.ndarray, n: int) -> np.ndarray:
        codes = self._codes[:n]
        if _nk is not None:
            out = np.asarray(_nk.cdist(q_codes[None, :], codes, metric="dot", out_dtype="float64"))
            return np.asarray(out[0], dtype=np.float64)
        exact: np.ndarray = codes.astype(np.float64) @ q_codes.astype(np.float64)
        return exact  # integers, exactly

    def _grow(self) -> int:
        row = self._n
        if row == len(self._ids):
            size = 2 * len(self._ids)
            self._ids = np.resize(self._ids, size)
            codes = np.zeros((size, self.dim), dtype=np.int8)
            codes[:row] = self._codes[:row]
            self._codes = codes
            self._inverse = np.resize(self._inverse, size)
            self._norm = np.resize(self._norm, size)
            self._error = np.resize(self._error, size)
        self._n = row + 1
        return row
