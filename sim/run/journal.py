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
is dropped when the journal is opened; a file whose header is not this format's is
refused, never rewritten. One campaign at a time may hold a journal (a lock).

A line is verified, not trusted: it carries the sha256 of its own key and result
(``{"key": ..., "result": ..., "sha256": ...}``), and its result's fields must have their
types (``JournalResult``: every ``expected`` entry with its ``reaction``, ``collisions`` a
count, ``passed`` a boolean, ``fault`` a string or null, ``measured`` a run summary's
judged fields, ...). A line that fails either check is refused (logged with its number,
counted in ``refused``) and its run is run again. A line that passes is judged again
(``sim.run.campaign.judged``, as a live run is) from what it measured: its ``passed``,
``safe``, ``verdict`` and each reaction's ``ok`` are never taken from the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr
from pydantic import ValidationError as PydanticValidationError

from runtime.errors import TickworkError
from runtime.files import InputFileError, read_descriptor, read_input
from runtime.jsondata import JSONDataError, parse
from runtime.tomlfile import key_path
from sim.run.summary import JUDGED, Count, SummaryError, checked_summary

if TYPE_CHECKING:
    from sim.run.campaign import RunRequest

FORMAT = 2
"""Format 2 (issue 30): each line carries its own checksum, and a result its ``measured``
fields. A format-1 journal is refused (its keys name older code: nothing in it is reused)."""
MAX_SOURCE_BYTES = 16 << 20
"""The largest source file a key digests."""
MAX_BYTES = 1 << 30
"""The largest journal read (1 GiB: some half a million runs)."""
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
        digest.update(read_input(path, limit=MAX_SOURCE_BYTES, what="a source file"))
        digest.update(b"\0")
    return digest.hexdigest()


_LIBRARIES = ("numpy", "shapely", "pydantic", "structlog")
"""Libraries a run's numbers go through: their versions are part of every key."""


def run_key(request: RunRequest, *, code: str) -> str:
    """The digest a run's result is kept under: what the result depends on, and ``code``."""
    world = request.world
    if world is None:
        from sim.world.families import load_world

        world = load_world(request.scenario)
    specs = request.specs
    if specs is None:  # what the worker reads: the shipped specs
        from runtime import load_specs
        from sim.run.harness import SPECS_DIR

        specs = load_specs(SPECS_DIR)
    fields = {
        "scenario": request.scenario,
        "world": hashlib.sha256(world.model_dump_json().encode()).hexdigest(),
        "seed": request.seed,
        "fault": request.label,
        "ticks": request.ticks,
        "within": request.within,
        "memory": request.memory,
        "specs": {name: specs[name].model_dump(mode="json") for name in sorted(specs)},
        "cabins": [
            [c.label, c.spec.model_dump(mode="json"), _module_digest(c.module, c.folder)]
            for c in request.cabins
        ],
        "extra": [
            [_factory_name(e.factory), e.spec.model_dump(mode="json")] for e in request.extra
        ],
        "code": code,
        "python": sys.version,
        "libraries": {name: _version(name) for name in _LIBRARIES},
    }
    text = json.dumps(fields, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _module_digest(module: str, folder: str) -> str | None:
    """A digest of a user cabin's module file (not of what it imports), None if not found."""
    import importlib.util

    loaded = sys.modules.get(module)
    where = getattr(loaded, "__file__", None)
    if where is None:
        base = Path(folder, *module.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                where = str(candidate)
                break
        else:
            try:
                found = importlib.util.find_spec(module)
            except (ImportError, ValueError):
                found = None
            where = found.origin if found is not None else None
    if where is None:
        return None
    try:
        source = read_input(where, limit=MAX_SOURCE_BYTES, what="a Python module")
    except InputFileError:  # a special file, or one that is gone
        return None
    return hashlib.sha256(source).hexdigest()


def _factory_name(factory: object) -> str:
    """A factory by its module and name; anything else (a ``functools.partial``) by its
    ``repr``, which names its arguments (or their addresses: then nothing is reused)."""
    qualname = getattr(factory, "__qualname__", None)
    if qualname is None or "<" in qualname:
        return repr(factory)
    return f"{getattr(factory, '__module__', '?')}.{qualname}"


def _version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


class Journal:
    """The runs one journal file holds, and the file, locked, to append new ones to.

    ``code`` stands for tickwork's code in the keys (default: ``code_digest()``), taken
    once, when the journal is opened.
    """

    def __init__(self, path: str | os.PathLike[str], *, code: str | None = None) -> None:
        self.path = os.fspath(path)
        self.code = code_digest() if code is None else code
        self.reused = 0
        self.appended = 0
        self._log = structlog.get_logger("tickwork.journal").bind(journal=self.path)
        self._entries: dict[str, JournalResult] = {}
        self.refused: list[tuple[int, str]] = []
        """The lines refused when the journal was opened: (line number, why)."""
        self._fd = self._open()
        try:
            self._load()
        except BaseException:
            os.close(self._fd)
            raise

    @property
    def held(self) -> int:
        """Entries in the file, of this campaign or not, errors included."""
        return len(self._entries)

    def get(self, request: RunRequest) -> dict[str, Any] | None:
        """The result the journal holds for ``request``, judged again from what it measured
        (``sim.run.campaign.judged``); None when it holds none, or one that ended in an
        error."""
        from sim.run.campaign import judged

        entry = self._entries.get(run_key(request, code=self.code))
        if entry is None or entry.error is not None:
            return None
        self.reused += 1
        return judged(
            request,
            measured=entry.measured,
            seen=[seen.model_dump() for seen in entry.expected],
            fault_started=entry.fault_started,
            board_digest=entry.board_digest,
        )

    def append(self, request: RunRequest, result: Mapping[str, Any]) -> None:
        """Keep ``result`` on disk (written and fsynced) before returning. A write that
        fails is cut off again, so the file never keeps half a line of it."""
        key = run_key(request, code=self.code)
        plain = json.loads(json.dumps(result, default=_plain))
        line = json.dumps(
            {"key": key, "result": plain, "sha256": line_digest(key, plain)}, sort_keys=True
        )
        data = line.encode() + b"\n"
        end = os.lseek(self._fd, 0, os.SEEK_END)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, end)
            raise JournalError(
                f"journal {self.path!r}: cannot append a run ({exc.strerror or exc})"
            ) from None
        try:
            self._entries[key] = JournalResult.model_validate(plain)
        except PydanticValidationError:
            self._entries.pop(key, None)  # kept in the file, never taken: it runs again
        self.appended += 1

    def close(self) -> None:
        with contextlib.suppress(OSError):  # everything kept was fsynced already
            os.close(self._fd)

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _open(self) -> int:
        import fcntl

        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK, 0o644)
        except IsADirectoryError:
            raise JournalError(f"journal {self.path!r} is a folder; give a file name") from None
        except OSError as exc:
            raise JournalError(
                f"journal {self.path!r}: cannot be opened ({exc.strerror or exc})"
            ) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise JournalError(f"journal {self.path!r} is not a regular file")
            os.set_blocking(fd, True)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise JournalError(
                    f"journal {self.path!r}: another campaign is writing it; wait for it to "
                    "end or give another file"
                ) from None
            except OSError as exc:
                raise JournalError(
                    f"journal {self.path!r}: cannot be locked ({exc.strerror or exc})"
                ) from None
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _load(self) -> None:
        try:
            data = read_descriptor(self._fd, limit=MAX_BYTES, shown=self.path, what="a journal")
        except InputFileError as exc:
            raise JournalError(f"journal {exc}") from None
        if not data:
            self._rewrite(0, HEADER)  # a new journal
            return
        first, newline, _rest = data.partition(b"\n")
        header = _parsed(first)
        if not newline or not _is_header(header):
            raise JournalError(self._not_a_journal(header, cut=not newline and _is_header(header)))
        start = len(first) + 1
        complete = data.rfind(b"\n") + 1
        for number, line in enumerate(data[start:complete].split(b"\n")[:-1], start=2):
            try:
                key, result = entry_of(line)
            except JournalLineError as exc:
                self.refused.append((number, str(exc)))
                self._log.warning("journal_line_refused", line=number, why=str(exc))
                continue
            self._entries[key] = result
        if complete < len(data):
            self._log.warning("journal_tail_dropped", bytes=len(data) - complete)
            self._rewrite(complete, b"")

    def _rewrite(self, at: int, tail: bytes) -> None:
        try:
            os.ftruncate(self._fd, at)
            if tail:
                os.pwrite(self._fd, tail, at)
            os.fsync(self._fd)
        except OSError as exc:
            raise JournalError(
                f"journal {self.path!r}: cannot be written ({exc.strerror or exc})"
            ) from None

    def _not_a_journal(self, header: Any, *, cut: bool) -> str:
        named = header.get("tickwork_journal", FORMAT) if isinstance(header, dict) else FORMAT
        if type(named) in (int, str) and named != FORMAT:
            return (
                f"journal {self.path!r} is in format {header['tickwork_journal']!r}; this "
                f"tickwork reads format {FORMAT}"
            )
        why = ": its header line is cut short" if cut else ""
        return f"journal {self.path!r} is not a campaign journal{why} (it was left as it is)"


def _is_header(header: Any) -> bool:
    """Whether parsed JSON is this format's header (``true`` and ``1.0`` equal 1 in Python)."""
    return header == {"tickwork_journal": FORMAT} and type(header["tickwork_journal"]) is int


def _parsed(line: bytes) -> Any:
    """``line`` as JSON, or None when it is not JSON (or nested too deep to read)."""
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


class JournalLineError(TickworkError, ValueError):
    """A journal line that is not a verified entry; the message says why."""


class SeenReaction(BaseModel):
    """A reaction a fault's run expected, and the tick it was first seen at (None: never);
    ``ok`` is judged again, never read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cabin: StrictStr
    reaction: StrictStr
    because: StrictStr
    seen_at: Count | None
    ok: StrictBool


class JournalResult(BaseModel):
    """A journal line's result (a ``sim.run.campaign`` result), every field typed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario: StrictStr
    cabins: list[StrictStr]
    collision_details: list[dict[str, Any]]
    tasks_undeliverable: Count
    seed: StrictInt
    fault: StrictStr | None
    fault_kind: StrictStr | None
    expected: list[SeenReaction]
    fault_started: StrictBool
    reactions_ok: StrictBool
    safe: StrictBool
    passed: StrictBool
    verdict: dict[str, Any] | None
    measured: dict[str, Any]
    deliveries_done: Count
    tasks_total: Count
    tasks_undelivered: list[StrictStr]
    safety_violations: Count
    collisions: Count
    ticks: Count
    board_digest: StrictStr | None
    error: StrictStr | None


def line_digest(key: str, result: Any) -> str:
    """The checksum a journal line carries: sha256 of its key and result as sorted JSON."""
    text = json.dumps({"key": key, "result": result}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def entry_of(line: bytes) -> tuple[str, JournalResult]:
    """A journal line's key and result, verified; a ``JournalLineError`` saying why not."""
    try:
        entry = parse(line)
    except JSONDataError as exc:
        raise JournalLineError(f"{exc}") from None
    if not isinstance(entry, dict) or set(entry) != {"key", "result", "sha256"}:
        raise JournalLineError("not an entry (a key, a result and a sha256)")
    key, result = entry["key"], entry["result"]
    if not isinstance(key, str) or not isinstance(result, dict):
        raise JournalLineError("not an entry (its key is not text or its result not an object)")
    if entry["sha256"] != line_digest(key, result):
        raise JournalLineError("its checksum does not match its key and result")
    try:
        checked = JournalResult.model_validate(result)
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        raise JournalLineError(f"result.{key_path(first['loc'])}: {first['msg']}") from None
    if checked.error is None:
        missing = [name for name in JUDGED if name not in checked.measured]
        if missing:
            raise JournalLineError(f"result.measured lacks {', '.join(missing)}")
        try:
            checked_summary(checked.measured, where="result.measured")
        except SummaryError as exc:
            raise JournalLineError(str(exc).replace("the run summary's ", "")) from None
    return key, checked


def _plain(value: object) -> object:
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    raise TypeError(f"{type(value).__name__} is not JSON")
