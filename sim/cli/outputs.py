"""The files a command will write, checked together before any of them is opened.

A run that is refused must leave every file as it found it: so ``run`` and ``campaign``
name all their outputs (``--record``, ``--checkpoint``, ``--report``, ``--out``) and the
files they read and write (``--memory``) up front, and this module refuses, with one
``InputError`` naming the flag, an output that is a folder, lies in a folder that does not
exist or cannot be written, is one of the command's inputs, or names the same file as
another output; ``check_replaceable`` refuses an existing file an output would replace that
is not of the output's kind (``campaign --out`` over a recording).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from sim.cli.exits import InputError

Named = tuple[str, "str | os.PathLike[str] | None"]
"""``(flag, path)``: a path a flag gave (or the default it stands for); None: not given."""


def check_outputs(outputs: Sequence[Named], *, inputs: Sequence[Named] = ()) -> None:
    """Refuse, before anything is written, outputs that cannot be written or that clash.

    ``outputs`` and ``inputs`` are ``(flag, path)`` pairs; pairs whose path is None are
    skipped. Paths are compared as the files they name (``a/../b`` is ``b``, links
    followed), so two spellings of one file clash too.
    """
    seen: dict[str, str] = {}
    for flag, path in inputs:
        if path is not None:
            seen.setdefault(_identity(path), flag)
    for flag, path in outputs:
        if path is None:
            continue
        _check_writable(flag, os.fspath(path))
        key = _identity(path)
        if key in seen:
            raise InputError(
                f"{flag} {os.fspath(path)!r} names the same file as {seen[key]}: each "
                "output needs a file of its own (nothing was written)"
            )
        seen[key] = flag


def _identity(path: str | os.PathLike[str]) -> str:
    return os.path.normcase(os.path.realpath(os.fspath(path)))


def _check_writable(flag: str, path: str) -> None:
    if path == "":
        raise InputError(f"{flag}: the file name is empty")
    if os.path.isdir(path):
        raise InputError(f"{flag} {path!r} is a folder; give a file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError(f"{flag} {path!r}: the folder {folder!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise InputError(f"{flag} {path!r}: the folder {folder!r} is not writable")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise InputError(f"{flag} {path!r}: the file is not writable")


def check_replaceable(
    flag: str, path: str | None, *, what: str, ours: Callable[[str], bool]
) -> None:
    """Refuse ``path`` when it exists and ``ours(path)`` does not recognise it as a file of
    this kind (``what``): an output replaces only a file tickwork wrote for it."""
    if path is None or not os.path.lexists(path) or os.path.isdir(path):
        return  # a missing file is new; a folder is refused by check_outputs
    if not ours(path):
        raise InputError(
            f"{flag} {path!r} exists and is not {what}: it is not replaced (remove it, or give "
            "another file name; nothing was written)"
        )


__all__ = ["check_outputs", "check_replaceable"]
