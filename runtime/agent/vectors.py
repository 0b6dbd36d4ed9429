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

A threshold query over a large scope (the duplicate check: is anything ``t = 0.95``
similar?) would still read every code. It first reads a *sketch* instead, 24 float32
numbers a vector (96 bytes, 3/8 of the codes): the vector's coordinates on a
basis ``B`` of ``m = 22`` orthonormal directions, fitted to the scope's own vectors
(the top eigenvectors of their second moment, so that most of each vector lies in
it), the norm of what lies outside it, and the vector's quantisation error. For the
decoded ``x̂ = x - e`` and the query ``q``, by Cauchy-Schwarz on the part outside ``B``
(``P⊥``) and on the error,

    x·q = (Bᵀx̂)·(Bᵀq) + (P⊥x̂)·(P⊥q) + e·q <= (Bᵀx̂)·(Bᵀq) + |P⊥x̂| |P⊥q| + |e| |q|

with ``|P⊥v|² = |v|² - |Bᵀv|²`` (Pythagoras, ``B`` orthonormal). The right side is one
dot product of the sketch row with ``(Bᵀq, |P⊥q|, |q|)``, an upper bound of the true
score for *any* orthonormal ``B``: a vector whose bound is below ``t`` (less a slack
far above float32 rounding, scaled by the vectors' and the query's norms) cannot
reach ``t``, and is skipped. A good basis only
makes the bound tight; a poor one (vectors spread evenly over every direction) keeps
too many (more than an eighth of the scope), and the query then scans every code as
before, so no answer ever depends on the basis. The survivors (few, when the basis
fits) get the int8 interval check above, and the caller scores what remains exactly.
The basis is fitted once a scope holds ``sketch_from`` vectors, and again each time
it has doubled since (every sketch row is recomputed then: amortised O(1) per add), at
the next threshold query or when the loader calls ``fit``. Fitting uses NumKong and
einsum, not numpy's BLAS: on a busy 2-core machine OpenBLAS's threads made one
256 x 256 eigendecomposition take over a second; a subspace iteration with modified
Gram-Schmidt (twice) finds the top directions in milliseconds, and the basis is used
only when its columns are orthonormal to 1e-9.

The index changes only through ``add`` and ``remove`` (swap with the last row: O(1)),
so the store keeps it in step with its writes instead of reloading it.

Each vector may carry a *claim*, any hashable the caller derives from its text (the
duplicate filter's numbers and negation, ``NearDuplicate.claim``). A threshold query
given a claim scores only the vectors of that claim (and those added without one):
when the caller refuses a match of another claim anyway, that is the same answer
for a fraction of the scan.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from types import ModuleType

import numpy as np

_nk: ModuleType | None
try:  # the SIMD kernels; numpy does the same exactly, only slower
    import numkong as _nk
except ImportError:  # pragma: no cover - numkong ships wheels for the supported platforms
    _nk = None

__all__ = ["ScopeIndex", "quantize"]

_SLACK = 1e-6  # float rounding in the scale products, far above its real size
_ANY: Hashable = object()  # a threshold query over every claim
_BASIS = 22  # directions of the sketch; with |P⊥x̂| and |e|, 24 float32 a vector
_SKETCH_SLACK = 1e-4  # float32 rounding of a 24-term sketch product of unit vectors is
# below 1e-5; for others it scales with |x̂| + |e| and |q|, and so does the slack
_FIT_SAMPLE = 4096  # vectors the basis is fitted on (evenly spaced over the scope)
_FIT_ROUNDS = 12  # of the subspace iteration
_FIT_SLICE = 8192  # vectors sketched at a time when fitting
_SKETCH_KEEPS = 8  # a sketch that keeps more than 1/8 of the scope: scan every code


def quantize(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows of float vectors as (int8 codes, 1/scale, |x̂|, |x - x̂|), all per row."""
    rows = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
    peak = np.max(np.abs(rows), axis=1) if rows.shape[1] else np.zeros(len(rows))
    scale = np.where(peak > 0, 127.0 / np.where(peak > 0, peak, 1.0), 1.0)
    codes = np.clip(np.rint(rows * scale[:, None]), -127, 127).astype(np.int8)
    inverse = 1.0 / scale
    decoded = codes.astype(np.float64) * inverse[:, None]
    error = rows - decoded
    return (
        codes,
        inverse,
        np.sqrt(np.einsum("ij,ij->i", decoded, decoded)),
        np.sqrt(np.einsum("ij,ij->i", error, error)),
    )


def _dots(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """``a @ b.T`` (``b`` defaults to ``a``) in float64, with NumKong's kernels or einsum:
    never numpy's BLAS (see the module docstring)."""
    b = a if b is None else b
    if _nk is not None and len(a) and len(b):
        out = np.zeros((len(a), len(b)))
        _nk.cdist(a, b, metric="dot", out=out)
        return out
    dots: np.ndarray = np.einsum("ij,kj->ik", a, b, dtype=np.float64)
    return dots


def _top_directions(gram: np.ndarray, m: int) -> np.ndarray | None:
    """``m`` orthonormal columns spanning (about) the top eigenvectors of the symmetric
    ``gram``, by subspace iteration; None if they do not come out orthonormal."""
    dim = len(gram)
    start = np.argsort(-np.diag(gram), kind="stable")[:m]  # the strongest axes
    basis = np.zeros((dim, m))
    basis[start, np.arange(m)] = 1.0
    for _ in range(_FIT_ROUNDS):
        basis = _orthonormal(np.einsum("ij,jk->ik", gram, basis))
    if not basis.shape[1]:
        return None
    residue = np.einsum("ji,jk->ik", basis, basis) - np.eye(basis.shape[1])
    if float(np.abs(residue).max()) > 1e-9:
        return None
    return np.ascontiguousarray(basis)


def _orthonormal(columns: np.ndarray) -> np.ndarray:
    """The columns made orthonormal by modified Gram-Schmidt, run twice ("twice is
    enough" for orthogonality to rounding); a column that vanishes is replaced by the
    axis it is least along, or dropped."""
    dim, m = columns.shape
    kept: list[np.ndarray] = []
    for j in range(m):
        for candidate in (columns[:, j], np.eye(dim)[np.argmin(np.abs(columns[:, j]))]):
            v = np.array(candidate, dtype=np.float64)
            scale = float(np.sqrt(v @ v))
            for _ in range(2):
                for q in kept:
                    v -= (q @ v) * q
            norm = float(np.sqrt(v @ v))
            if norm > 1e-8 * max(scale, 1e-300):
                kept.append(v / norm)
                break
    return np.column_stack(kept) if kept else np.zeros((dim, 0))


class ScopeIndex:
    """The quantised vectors of one scope, by memory id (see the module docstring)."""

    def __init__(self, dim: int, *, capacity: int = 64, sketch_from: int = 4096) -> None:
        if isinstance(sketch_from, bool) or not isinstance(sketch_from, int) or sketch_from < 1:
            raise ValueError(f"sketch_from must be an int >= 1, got {sketch_from!r}")
        self.dim = dim
        self.sketch_from = sketch_from
        size = max(1, capacity)
        self._ids = np.zeros(size, dtype=np.int64)
        self._codes = np.zeros((size, dim), dtype=np.int8)
        self._inverse = np.zeros(size)
        self._norm = np.zeros(size)
        self._error = np.zeros(size)
        self._scores = np.zeros(size)  # the scan's output, reused
        self._max_norm = 0.0  # bounds over every vector ever held (never lowered)
        self._max_error = 0.0
        self._row: dict[int, int] = {}
        self._claim_of: dict[int, Hashable] = {}  # None: added without a claim
        self._claims: dict[Hashable, set[int]] = {}
        self._n = 0
        self._basis: np.ndarray | None = None  # dim x m, orthonormal columns
        self._fitted_at = 0
        # one row per sketch number (Bᵀx̂, |P⊥x̂|, |e|), one column per vector: the bound
        # is then an einsum down the columns, no BLAS (whose threads, on a busy machine,
        # made this 100,000-row product 50 times slower)
        self._sketch = np.zeros((0, 0), dtype=np.float32)

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
            + self._scores.nbytes
            + self._sketch.nbytes
        )

    def ids(self) -> np.ndarray:
        return self._ids[: self._n].copy()

    def add(
        self, ids: Sequence[int], vectors: np.ndarray, claims: Sequence[Hashable] | None = None
    ) -> None:
        """Add (or replace) the vectors of ``ids``, each with its claim when given."""
        if not len(ids):
            return
        if claims is not None and len(claims) != len(ids):
            raise ValueError(f"{len(ids)} ids but {len(claims)} claims")
        if len(set(ids)) != len(ids):  # the last vector of an id wins
            for i, memory_id in enumerate(ids):
                self.add(
                    [memory_id],
                    np.atleast_2d(vectors)[i : i + 1],
                    None if claims is None else [claims[i]],
                )
            return
        keys = [int(i) for i in ids]
        claim_of, groups = self._claim_of, self._claims
        for i, memory_id in enumerate(keys):
            if memory_id in claim_of:
                self._unclaim(memory_id)
            claim = None if claims is None else claims[i]
            claim_of[memory_id] = claim
            group = groups.get(claim)
            if group is None:
                groups[claim] = {memory_id}
            else:
                group.add(memory_id)
        codes, inverse, norm, error = quantize(vectors)
        held = [self._row.get(memory_id) for memory_id in keys]
        fresh = [i for i, row in enumerate(held) if row is None]
        rows = np.fromiter((-1 if r is None else r for r in held), dtype=np.intp, count=len(keys))
        if fresh:
            start = self._n
            self._reserve(start + len(fresh))
            new_rows = np.arange(start, start + len(fresh))
            rows[fresh] = new_rows
            self._row.update(zip([keys[i] for i in fresh], new_rows.tolist(), strict=True))
            self._ids[new_rows] = np.asarray(keys, dtype=np.int64)[fresh]
            self._n = start + len(fresh)
        self._codes[rows] = codes
        self._inverse[rows] = inverse
        self._norm[rows] = norm
        self._error[rows] = error
        self._max_norm = max(self._max_norm, float(norm.max()))
        self._max_error = max(self._max_error, float(error.max()))
        if self._basis is not None and not self._due():  # else the next fit sketches them
            self._sketch[:, rows] = self._sketch_rows(rows)

    def remove(self, ids: Iterable[int]) -> int:
        """Drop ``ids`` (those held); how many were dropped."""
        dropped = 0
        for memory_id in ids:
            row = self._row.pop(int(memory_id), None)
            if row is None:
                continue
            self._unclaim(int(memory_id))
            last = self._n - 1
            if row != last:
                moved = int(self._ids[last])
                self._ids[row] = moved
                self._codes[row] = self._codes[last]
                self._inverse[row] = self._inverse[last]
                self._norm[row] = self._norm[last]
                self._error[row] = self._error[last]
                if self._basis is not None:
                    self._sketch[:, row] = self._sketch[:, last]
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
        approx, q_norm, q_error = self._approx(query)
        slack = self._slack(np.arange(n), q_norm, q_error)
        return self._ids[:n].copy(), approx - slack, approx + slack

    def reaching(self, query: np.ndarray, threshold: float, claim: Hashable = _ANY) -> np.ndarray:
        """Ids whose true score may be ``>= threshold`` (a superset of those that are),
        among the vectors of ``claim`` and those without one when it is given."""
        if not self._n:
            return np.zeros(0, dtype=np.int64)
        if claim is not _ANY:
            group = self._claims.get(claim, set())
            loose = self._claims.get(None, set()) if claim is not None else set()
            if len(group) + len(loose) <= self._n // 4:  # else a full scan is cheaper
                return self._reaching_among(query, threshold, [*group, *loose])
        if self._due():
            self.fit()
        if self._basis is not None:
            rows = self._sketched(query, threshold)
            if len(rows) <= self._n // _SKETCH_KEEPS:
                return self._reaching_rows(query, threshold, rows)
        approx, q_norm, q_error = self._approx(query)
        wide = self._max_norm * q_error + self._max_error * (q_norm + q_error) + _SLACK
        rows = np.flatnonzero(approx >= threshold - wide)  # every row's slack is <= wide
        rows = rows[approx[rows] + self._slack(rows, q_norm, q_error) >= threshold]
        reached: np.ndarray = self._ids[rows]
        return reached

    def top_candidates(self, query: np.ndarray, k: int) -> np.ndarray:
        """Ids among which the ``k`` best-scoring vectors are (a superset of them)."""
        n = self._n
        if n <= k:
            return self._ids[:n].copy()
        approx, q_norm, q_error = self._approx(query)
        wide = self._max_norm * q_error + self._max_error * (q_norm + q_error) + _SLACK
        # the k-th best lower bound is at least the k-th best scan score minus ``wide``:
        # a vector whose upper bound is below that is beaten by k others
        floor = float(np.partition(approx, n - k)[n - k]) - wide
        rows = np.flatnonzero(approx >= floor - wide)
        rows = rows[approx[rows] + self._slack(rows, q_norm, q_error) >= floor]
        kept: np.ndarray = self._ids[rows]
        return kept

    def _reaching_among(
        self, query: np.ndarray, threshold: float, ids: Sequence[int]
    ) -> np.ndarray:
        rows = np.fromiter((self._row[i] for i in ids), dtype=np.intp, count=len(ids))
        return self._reaching_rows(query, threshold, rows)

    def _reaching_rows(self, query: np.ndarray, threshold: float, rows: np.ndarray) -> np.ndarray:
        """The int8 interval check of ``rows`` only: the ids of those that may reach."""
        if not len(rows):
            return np.zeros(0, dtype=np.int64)
        q_codes, q_inverse, q_norm, q_error = quantize(query)
        codes = self._codes[rows]
        if _nk is not None:
            approx = np.zeros(len(rows))
            _nk.cdist(q_codes, codes, metric="dot", out=approx.reshape(1, -1))
        else:  # exact integers
            approx = (codes.astype(np.int32) @ q_codes[0].astype(np.int32)).astype(np.float64)
        approx *= self._inverse[rows]
        approx *= q_inverse[0]
        keep = approx + self._slack(rows, float(q_norm[0]), float(q_error[0])) >= threshold
        reached: np.ndarray = self._ids[rows[keep]]
        return reached

    def _sketched(self, query: np.ndarray, threshold: float) -> np.ndarray:
        """Rows whose sketch bound reaches ``threshold`` (a superset of those whose true
        score does; the module docstring has the bound)."""
        basis = self._basis
        assert basis is not None
        q = np.asarray(query, dtype=np.float64).reshape(-1)
        projected = np.einsum("ji,j->i", basis, q)
        outside = math.sqrt(max(0.0, float(q @ q) - float(projected @ projected)))
        weights = np.concatenate([projected, [outside, math.sqrt(float(q @ q))]])
        bound = np.einsum("ji,j->i", self._sketch[:, : self._n], weights.astype(np.float32))
        size = (self._max_norm + self._max_error) * math.sqrt(float(q @ q))
        rows: np.ndarray = np.flatnonzero(bound >= threshold - _SKETCH_SLACK * max(1.0, size))
        return rows

    def _due(self) -> bool:
        return self._n >= max(self.sketch_from, 2 * self._fitted_at)

    def fit(self) -> None:
        """Fit the sketch's basis to the held vectors and sketch every one of them, if the
        scope has reached ``sketch_from`` or doubled since the last fit (else nothing)."""
        if not self._due():
            return
        n = self._n
        self._fitted_at = n
        sample = np.unique(np.linspace(0, n - 1, min(n, _FIT_SAMPLE)).astype(np.intp))
        decoded = (self._codes[sample].astype(np.float32) * self._inverse[sample, None]).T
        basis = _top_directions(_dots(np.ascontiguousarray(decoded)), min(_BASIS, self.dim))
        if basis is None:  # no basis to trust: threshold queries scan every code
            self._basis = None
            return
        self._basis = basis
        self._sketch = np.zeros((basis.shape[1] + 2, len(self._ids)), dtype=np.float32)
        for start in range(0, n, _FIT_SLICE):  # in slices: bounded temporaries
            rows = np.arange(start, min(n, start + _FIT_SLICE))
            self._sketch[:, rows] = self._sketch_rows(rows)

    def _sketch_rows(self, rows: np.ndarray) -> np.ndarray:
        """The sketch of the decoded vectors at ``rows``: Bᵀx̂, |P⊥x̂|, |e|, a column each."""
        basis = self._basis
        assert basis is not None
        decoded = self._codes[rows].astype(np.float64) * self._inverse[rows, None]
        projected = _dots(decoded, np.ascontiguousarray(basis.T))
        inside = np.einsum("ij,ij->i", projected, projected)
        outside = np.sqrt(np.maximum(0.0, self._norm[rows] ** 2 - inside))
        return np.vstack([projected.T, outside, self._error[rows]]).astype(np.float32)

    def _unclaim(self, memory_id: int) -> None:
        if memory_id not in self._claim_of:
            return
        claim = self._claim_of.pop(memory_id)
        group = self._claims[claim]
        group.discard(memory_id)
        if not group:
            del self._claims[claim]

    def _approx(self, query: np.ndarray) -> tuple[np.ndarray, float, float]:
        """The scan: every held vector's decoded score (a view, valid until the next scan),
        with the query's decoded norm and quantisation error."""
        n = self._n
        q_codes, q_inverse, q_norm, q_error = quantize(query)
        scores = self._scores[:n]
        codes = self._codes[:n]
        if _nk is not None:
            _nk.cdist(q_codes, codes, metric="dot", out=scores.reshape(1, n))
        else:  # exact integers in float64
            np.matmul(codes.astype(np.float64), q_codes[0].astype(np.float64), out=scores)
        scores *= self._inverse[:n]
        scores *= q_inverse[0]
        return scores, float(q_norm[0]), float(q_error[0])

    def _slack(self, rows: np.ndarray, q_norm: float, q_error: float) -> np.ndarray:
        slack: np.ndarray = (
            self._norm[rows] * q_error + self._error[rows] * (q_norm + q_error) + _SLACK
        )
        return slack

    def _reserve(self, size: int) -> None:
        """Room for ``size`` vectors (grown by a quarter and more: scopes grow slowly)."""
        have = len(self._ids)
        if size <= have:
            return
        size = max(size, have + have // 4 + 64)
        n = self._n
        self._ids = np.resize(self._ids, size)
        codes = np.zeros((size, self.dim), dtype=np.int8)
        codes[:n] = self._codes[:n]
        self._codes = codes
        self._inverse = np.resize(self._inverse, size)
        self._norm = np.resize(self._norm, size)
        self._error = np.resize(self._error, size)
        self._scores = np.zeros(size)
        if self._basis is not None:
            sketch = np.zeros((self._sketch.shape[0], size), dtype=np.float32)
            sketch[:, :n] = self._sketch[:, :n]
            self._sketch = sketch
