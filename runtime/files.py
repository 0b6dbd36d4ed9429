"""Opening the files people hand the simulator, with one clear sentence when it cannot."""

from __future__ import annotations

import os
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
