"""Files in and out: opening what people hand tickwork, with one clear sentence when it
cannot be read, and writing outputs atomically, so that a reader never sees half a file
and a failed write leaves the previous file as it was."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


def open_binary(path: str | Path, *, what: str, error: type[Exception]) -> tuple[IO[bytes], int]:
    """``(file, size)`` of ``path`` opened for reading, or ``error`` saying why not.

    ``what`` names the kind of file in the message (``a recording``, ``a checkpoint``).
    """
    shown = str(path)
    try:
        size = os.path.getsize(path)
        return open(path, "rb"), size
    except FileNotFoundError:
        raise error(f"{shown}: no such file") from None
    except IsADirectoryError:
        raise error(f"{shown}: is a folder, not {what}") from None
    except OSError as exc:
        raise error(f"{shown}: cannot be read ({exc.strerror or exc})") from None


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str], *, mode: int = 0o644) -> Iterator[IO[bytes]]:
    """A binary file to write ``path``'s new content to: a temporary file in the same
    folder, flushed, fsynced and renamed over ``path`` when the block ends, then the folder
    fsynced. If the block raises, the temporary file is removed and ``path`` is untouched.
    ``mode`` is the finished file's permission bits (``mkstemp`` makes files private)."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_folder(folder)


def fsync_folder(folder: str | os.PathLike[str]) -> None:
    """Make a rename in ``folder`` durable (where the platform allows it)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
