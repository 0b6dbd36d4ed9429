"""Files in and out: opening what people hand tickwork, with one clear sentence when it
cannot be read, and writing outputs atomically, so that a reader never sees half a file
and a failed write leaves the previous file as it was.

Every input file is read here, and only here (``tests/docs/test_layout.py`` holds every
other module to it): ``read_input`` reads a whole file (``read_descriptor`` one the caller
opened and checked itself), ``open_input`` hands a stream to a reader that takes one,
``check_input`` vets a file another library opens (SQLite), and ``read_head`` peeks at an
existing output before it is replaced. Each opens without blocking (``O_NONBLOCK``, so a
FIFO never hangs), refuses what ``fstat`` says is not a regular file (a folder, a device
such as ``/dev/zero``, a FIFO, a socket; a symbolic link is judged by what it names), and
reads at most its limit: it asks for one byte more and refuses the file when it gets it,
never trusting the size ``stat`` reports (0 for a device, stale for a file that grows).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from runtime.errors import TickworkError

CHUNK = 1 << 20
"""Bytes asked of the system per read."""


class InputFileError(TickworkError, ValueError):
    """An input file that is refused: missing, not a regular file, unreadable or over its
    limit. ``str()`` is ``path: why``; ``reason`` is the why alone."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.reason))


def read_input(path: str | os.PathLike[str], *, limit: int, what: str = "a file") -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them, or an
    ``InputFileError`` saying why not (``what`` names the kind of file in the message)."""
    with _opened(path, what) as (fd, shown):
        return _read_bounded(fd, limit, shown, what)


def read_descriptor(fd: int, *, limit: int, shown: str, what: str = "a file") -> bytes:
    """The bytes of the file open as ``fd`` from its start, at most ``limit`` of them (for
    a file the caller opened and checked itself, such as a locked journal)."""
    os.lseek(fd, 0, os.SEEK_SET)
    return _read_bounded(fd, limit, shown, what)


def open_input(path: str | os.PathLike[str], *, limit: int, what: str = "a file") -> IO[bytes]:
    """The regular file at ``path`` opened for reading, as a stream that raises an
    ``InputFileError`` once more than ``limit`` bytes are read from it."""
    with _opened(path, what) as (fd, shown):
        raw = _Bounded(os.dup(fd), limit, shown, what)
    return io.BufferedReader(raw, buffer_size=min(CHUNK, max(limit, 1)))


def check_input(path: str | os.PathLike[str], *, what: str = "a file") -> bool:
    """Whether ``path`` exists as a regular file (False: it does not exist); an
    ``InputFileError`` when it is something else (a folder, a device, a FIFO) or cannot be
    opened. For a file another library opens itself (SQLite): nothing of it is read."""
    try:
        with _opened(path, what):
            return True
    except InputFileError as exc:
        if exc.reason == _MISSING:
            return False
        raise


def read_head(path: str | os.PathLike[str], size: int) -> bytes | None:
    """The first ``size`` bytes of the regular file at ``path``; None when it is missing,
    not a regular file or unreadable (for recognising an output before replacing it)."""
    try:
        with _opened(path, "a file") as (fd, _shown):
            return os.read(fd, size)
    except (InputFileError, OSError):
        return None


_MISSING = "no such file"


@contextlib.contextmanager
def _opened(path: str | os.PathLike[str], what: str) -> Iterator[tuple[int, str]]:
    """``(fd, shown)`` of ``path`` opened read-only, checked to be a regular file."""
    shown = os.fspath(path)
    if isinstance(shown, bytes) or "\0" in shown:
        raise InputFileError(str(shown), "not a valid file name")
    if shown == "":
        raise InputFileError("''", "the file name is empty")
    try:
        fd = os.open(shown, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise InputFileError(shown, _MISSING) from None
    except OSError as exc:
        raise InputFileError(shown, _cannot_open(exc, what)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputFileError(shown, f"{_kind(mode)}, not {what} (only regular files are read)")
        os.set_blocking(fd, True)
        yield fd, shown
    finally:
        os.close(fd)


def _cannot_open(exc: OSError, what: str) -> str:
    if exc.errno == errno.ENXIO:  # a socket, or a FIFO opened for writing elsewhere
        return f"a socket or a special file, not {what} (only regular files are read)"
    if exc.errno == errno.ELOOP:
        return "a loop of symbolic links"
    return f"cannot be read ({exc.strerror or exc})"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a folder"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (a named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device"
    if stat.S_ISSOCK(mode):
        return "is a socket"
    return "is a special file"


def _too_big(shown: str, limit: int, what: str) -> InputFileError:
    return InputFileError(shown, f"more than {limit} bytes; at most {limit} are read of {what}")


def _read_bounded(fd: int, limit: int, shown: str, what: str) -> bytes:
    parts: list[bytes] = []
    got = 0
    try:
        while got <= limit:
            part = os.read(fd, min(CHUNK, limit + 1 - got))
            if not part:
                return b"".join(parts)
            parts.append(part)
            got += len(part)
    except OSError as exc:
        raise InputFileError(shown, f"cannot be read ({exc.strerror or exc})") from None
    raise _too_big(shown, limit, what)


class _Bounded(io.RawIOBase):
    """A file descriptor read as a raw stream that refuses to give more than ``limit``
    bytes (it raises when the file holds more)."""

    def __init__(self, fd: int, limit: int, shown: str, what: str) -> None:
        self._fd = fd
        self._left = limit
        self._limit = limit
        self._shown = shown
        self._what = what
        self.name = shown

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        at = os.lseek(self._fd, offset, whence)
        self._left = self._limit - at
        return at

    def tell(self) -> int:
        return os.lseek(self._fd, 0, os.SEEK_CUR)

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._left < 0:
            raise _too_big(self._shown, self._limit, self._what)
        try:
            got = os.readv(self._fd, [view[: self._left + 1]])
        except OSError as exc:
            raise InputFileError(self._shown, f"cannot be read ({exc.strerror or exc})") from None
        self._left -= got
        if self._left < 0:
            raise _too_big(self._shown, self._limit, self._what)
        return got

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        if not self.closed:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        super().close()


def open_binary(path: str | Path, *, what: str, error: type[Exception]) -> tuple[IO[bytes], int]:
    """``(file, size)`` of the regular file at ``path`` opened for reading, or ``error``
    saying why not (``what`` names the kind of file: ``a recording``, ``a checkpoint``).

    The stream raises an ``InputFileError`` past ``OPEN_LIMIT`` bytes; prefer
    ``read_input`` or ``open_input`` with a limit of the format's own."""
    try:
        fh = open_input(path, limit=OPEN_LIMIT, what=what)
    except InputFileError as exc:
        raise error(str(exc)) from None
    return fh, os.fstat(fh.fileno()).st_size


OPEN_LIMIT = 4 << 30
"""What ``open_binary`` reads at most of a file (4 GiB)."""


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
