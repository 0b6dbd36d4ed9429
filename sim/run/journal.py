"""A campaign's journal: each run's result kept on disk the moment the run finishes.

A campaign of thousands of runs takes hours. With a journal, each finished run is
appended to a JSON Lines file (written, flushed and fsynced before the next result is
taken), so an interrupted campaign loses only the runs that were in flight, and a
campaign started again with the same journal runs only what the journal does not hold.

A run is found again by its key: a digest of everything its result depends on (the
scenario's content, the seed, the fault, ``ticks``, ``within``, the specs, the user
cabins, the long-term memory file) and of the code a run executes (tickwork's packages
but the command line, the reports and the doctor), so a journal written by other code,
or for another world of the same name, is never taken for this campaign's.
Runs that ended in an error (a worker that died twice, a run that raised) are kept in the
file but run again. The file starts with a header line; a last line cut short by a crash
is dropped when the journal is opened; any other line that is not an entry makes the
journal refused, never rewritten. One campaign at a time may hold a journal (a lock).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import structlog

from runtime.errors import TickworkError

if TYPE_CHECKING:
    from sim.run.campaign import RunRequest

FORMAT = 1
HEADER = json.dumps({"tickwork_journal": FORMAT}).encode() + b"\n"

_CODE_PACKAGES = ("runtime", "cabins", "sim")
_CODE_SUFFIXES = (".py", ".toml", ".json")
NOT_RUN_CODE = (
    "sim/__main__.py",
    "sim/cli/",
    "sim/report/",
    "sim/analysis/",
    "sim/run/journal.py",
)
"""Code a run never imports (``python -m sim``, the reports, the doctor, this module):
editing it keeps a journal's runs."""


class JournalError(TickworkError):
    """A journal that cannot be used: not a journal, damaged, locked, or not writable."""


def run_code() -> list[tuple[str, Path]]:
    """The source files a run's result can depend on: ``runtime``, ``cabins`` and ``sim``
    but ``NOT_RUN_CODE``, as (name in the package tree, path), sorted by name."""
    import importlib

    files = []
    for package in _CODE_PACKAGES:
        root = Path(importlib.import_module(package).__file__ or "").parent
        for path in root.rglob("*"):
            name = f"{package}/{path.relative_to(root).as_posix()}"
            if (
                path.suffix in _CODE_SUFFIXES
                and "__pycache__" not in path.parts
                and not name.startswith(NOT_RUN_CODE)
            ):
                files.append((name, path))
    return sorted(files)


def code_digest() -> str:
    """A digest of the code a run's result can depend on (``run_code()``)."""
    digest = hashlib.sha256()
    for name, path in run_code():
        digest.update(f"{name}\0".encode())
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def run_key(request: RunRequest, *, code: str) -> str:
    """The digest a run's result is kept under: what the result depends on, and ``code``."""
    world = request.world
    if world is None:
        from sim.world.scenario import load_scenario

        world = load_scenario(request.scenario)
    specs = request.specs or {}
    fields = {
        "scenario": request.scenario,
        "world": hashlib.sha256(world.model_dump_json().encode()).hexdigest(),
        "seed": request.seed,
        "fault": request.label,
        "ticks": request.ticks,
        "within": request.within,
        "memory": request.memory,
        "specs": {name: specs[name].model_dump(mode="json") for name in sorted(specs)},
        "cabins": [[c.label, c.spec.model_dump(mode="json")] for c in request.cabins],
        "extra": [
            [getattr(e.factory, "__qualname__", type(e.factory).__name__), e.spec.name]
            for e in request.extra
        ],
        "code": code,
    }
    text = json.dumps(fields, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class Journal:
    """The runs one journal file holds, and the file, locked, to append new ones to.

    ``code`` stands for tickwork's code in the keys (default: ``code_digest()``).
    """

    def __init__(self, path: str | os.PathLike[str], *, code: str | None = None) -> None:
        self.path = os.fspath(path)
        self.code = code_digest() if code is None else code
        self.reused = 0
        self.appended = 0
        self._log = structlog.get_logger("tickwork.journal").bind(journal=self.path)
        self._entries: dict[str, dict[str, Any]] = {}
        self._file = self._open()
        try:
            self._load()
        except BaseException:
            self._file.close()
            raise

    @property
    def held(self) -> int:
        """Entries in the file, of this campaign or not, errors included."""
        return len(self._entries)

    def get(self, request: RunRequest) -> dict[str, Any] | None:
        """The result the journal holds for ``request``, unless it ended in an error."""
        result = self._entries.get(run_key(request, code=self.code))
        if result is None or result.get("error") is not None:
            return None
        self.reused += 1
        return result

    def append(self, request: RunRequest, result: Mapping[str, Any]) -> None:
        """Keep ``result`` on disk (written and fsynced) before returning."""
        key = run_key(request, code=self.code)
        line = json.dumps({"key": key, "result": result}, sort_keys=True, default=_plain)
        try:
            self._file.write(line.encode() + b"\n")
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            raise JournalError(
                f"journal {self.path!r}: cannot append a run ({exc.strerror or exc})"
            ) from None
        self._entries[key] = json.loads(line)["result"]
        self.appended += 1

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _open(self) -> IO[bytes]:
        import fcntl

        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except IsADirectoryError:
            raise JournalError(f"journal {self.path!r} is a folder; give a file name") from None
        except OSError as exc:
            raise JournalError(
                f"journal {self.path!r}: cannot be opened ({exc.strerror or exc})"
            ) from None
        fh = os.fdopen(fd, "r+b")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise JournalError(
                f"journal {self.path!r}: another campaign is writing it; wait for it to end "
                "or give another file"
            ) from None
        return fh

    def _load(self) -> None:
        data = self._file.read()
        if not data or (b"\n" not in data and HEADER.startswith(data)):
            self._rewrite(0, HEADER)  # new, or a header cut short before any run was kept
            return
        first, _, _rest = data.partition(b"\n")
        if first + b"\n" != HEADER:
            raise JournalError(self._not_a_journal(first))
        complete = data.rfind(b"\n") + 1
        for number, line in enumerate(data[len(HEADER) : complete].split(b"\n")[:-1], start=2):
            entry = _entry(line)
            if entry is None:
                raise JournalError(
                    f"journal {self.path!r}: line {number} is not a run's entry; the file is "
                    "damaged or not a journal (it was left as it is)"
                )
            self._entries[entry[0]] = entry[1]
        if complete < len(data):
            self._log.warning("journal_tail_dropped", bytes=len(data) - complete)
            self._rewrite(complete, b"")

    def _rewrite(self, at: int, tail: bytes) -> None:
        self._file.seek(at)
        self._file.truncate()
        self._file.write(tail)
        self._file.flush()
        os.fsync(self._file.fileno())

    def _not_a_journal(self, first: bytes) -> str:
        try:
            header = json.loads(first)
        except ValueError:
            header = None
        if isinstance(header, dict) and "tickwork_journal" in header:
            return (
                f"journal {self.path!r} is in format {header['tickwork_journal']!r}; this "
                f"tickwork reads format {FORMAT}"
            )
        return f"journal {self.path!r} is not a campaign journal (it was left as it is)"


def _entry(line: bytes) -> tuple[str, dict[str, Any]] | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    if not isinstance(entry, dict) or set(entry) != {"key", "result"}:
        return None
    key, result = entry["key"], entry["result"]
    if not isinstance(key, str) or not isinstance(result, dict):
        return None
    return key, result


def _plain(value: object) -> object:
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    raise TypeError(f"{type(value).__name__} is not JSON")
