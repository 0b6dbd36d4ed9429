"""Turning what people type into the objects a run needs: their cabins
(``--cabin MODULE:CLASS@SPEC``), faults (``--fault``, ``--faults FILE``) and long-term
memory files (``--memory``, checked read-only before any output is opened). Shared by
``run``, ``campaign`` and ``replay``; each refuses bad input with one ``InputError`` (or the
library's own ``TickworkError``) that names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sim.cli.exits import InputError

if TYPE_CHECKING:
    from cabins.llm import LLMEndpoint
    from runtime import Cabin
    from sim.faults.model import Fault
    from sim.run.harness import CabinRef, ExtraCabin


def cabin_ref(text: str) -> CabinRef:
    """``MODULE:CLASS@SPEC`` → a reference to the cabin: its module and class, imported from
    the folder that holds it (``module_folder``), and its spec file, loaded."""
    from runtime import load_spec
    from sim.run.harness import CabinRef

    target, sep, spec_path = text.partition("@")
    module_name, colon, class_name = target.partition(":")
    if not sep or not colon or not module_name or not class_name or not spec_path:
        raise InputError(f"--cabin {text!r}: expected MODULE:CLASS@SPEC, e.g. {EXAMPLE_CABIN}")
    if not all(part.isidentifier() for part in module_name.split(".")):
        raise InputError(
            f"--cabin {text!r}: {module_name!r} is not a module name (dotted Python names, "
            "such as people_watch or my_cabins.people_watch)"
        )
    if not class_name.isidentifier():
        raise InputError(f"--cabin {text!r}: {class_name!r} is not a class name")
    spec = load_spec(spec_path)
    return CabinRef(module_name, class_name, spec, module_folder(text, module_name, spec_path))


EXAMPLE_CABIN = "people_watch:PeopleWatch@examples/people_watch/people_watch.toml"
"""A ``--cabin`` argument that works from the project's root (the first cabin of the docs'
"Write a cabin" guide)."""


def module_folder(text: str, module: str, spec_path: str) -> str:
    """The folder ``module`` is imported from: the current folder if it holds the module's
    file (``name.py`` or a package ``name/``), else the spec file's folder if it does, else
    the current folder when the module is importable anyway (installed); otherwise one
    ``InputError`` saying where it looked and how to fix it."""
    import importlib.util
    import os
    from pathlib import Path

    top = module.split(".")[0]
    here = Path.cwd()
    beside = Path(spec_path).resolve().parent
    for folder in (here, beside):
        if (folder / f"{top}.py").exists() or (folder / top / "__init__.py").exists():
            return os.fspath(folder)
    try:
        installed = importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        installed = False
    if installed:
        return os.fspath(here)
    raise InputError(
        f"--cabin {text!r}: no module named {top!r} in the current folder ({here}) or beside "
        f"the spec ({beside}), and none installed: put {top}.py beside its spec file, run "
        "from the folder that holds it, or install it"
    )


def load_cabin(text: str, *, llm: LLMEndpoint | None = None) -> ExtraCabin:
    """``MODULE:CLASS@SPEC`` → the cabin's spec and the class that builds it.

    ``MODULE`` is imported from the current folder or, if it is not there, from the spec
    file's folder (``module_folder``); ``SPEC`` is a spec file. A class whose
    constructor takes an ``llm`` keyword (an LLM cabin) is built with ``llm`` (the model
    endpoint ``--llm-base-url`` or the environment names, or None).
    """
    import dataclasses
    import functools
    import inspect

    from runtime.errors import SettingError

    try:
        cabin = cabin_ref(text).load()
    except SettingError as exc:
        raise InputError(f"--cabin {text!r}: {exc}") from None
    factory: Any = cabin.factory
    try:
        takes_llm = "llm" in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a callable without a signature
        takes_llm = False
    if takes_llm:
        return dataclasses.replace(cabin, factory=functools.partial(factory, llm=llm))
    return cabin


def build_cabin(text: str, cabin: ExtraCabin) -> Cabin:
    """The cabin ``--cabin text`` names, built on its spec (``CabinBuildError`` if the
    class cannot build it, or builds something else)."""
    from sim.run.harness import CabinBuildError, build_extra

    try:
        return build_extra(cabin)
    except CabinBuildError as exc:
        raise InputError(f"--cabin {text!r}: {exc}") from None


def load_faults(texts: Sequence[str], path: str | None) -> list[Fault]:
    """The faults of ``--fault TEXT`` (repeatable) and of ``--faults FILE``."""
    from sim.faults.model import load_faults as from_file
    from sim.faults.model import parse_fault

    faults = [parse_fault(text) for text in texts]
    if path is not None:
        faults.extend(from_file(path))
    return faults


def check_memory(path: str) -> None:
    """Refuse ``--memory path`` when it is not a long-term memory file this tickwork can use
    (read-only: a refused file is left exactly as it was; a missing one is a new memory)."""
    from runtime.agent.memory_file import MemoryFileError, check_file

    try:
        check_file(path)
    except MemoryFileError as exc:
        raise InputError(f"--memory: {exc}") from None


def memory_file(path: str) -> str:
    """``path`` as an absolute path to a usable long-term memory file (created if absent)."""
    import os
    import sqlite3

    from runtime import LongTermMemory

    absolute = os.path.abspath(path)
    check_memory(path)
    try:
        LongTermMemory(absolute).close()  # created once, before parallel runs race to
    except sqlite3.Error as exc:
        raise InputError(f"--memory {path!r}: not a usable SQLite file ({exc})") from None
    return absolute


__all__ = [
    "build_cabin",
    "cabin_ref",
    "check_memory",
    "load_cabin",
    "load_faults",
    "memory_file",
]
