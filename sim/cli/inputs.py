"""Turning what people type into the objects a run needs: their cabins
(``--cabin MODULE:CLASS@SPEC``), faults (``--fault``, ``--faults FILE``) and long-term
memory files (``--memory``). Shared by ``run``, ``campaign`` and ``replay``; each refuses
bad input with one ``InputError`` (or the library's own ``TickworkError``) that names it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sim.cli.exits import InputError

if TYPE_CHECKING:
    from cabins.llm import LLMEndpoint
    from runtime import Cabin
    from sim.faults.model import Fault
    from sim.run.harness import ExtraCabin


def load_cabin(text: str, *, llm: LLMEndpoint | None = None) -> ExtraCabin:
    """``MODULE:CLASS@SPEC`` → the cabin's spec and the class that builds it.

    ``MODULE`` is imported from the current folder; ``SPEC`` is a spec file. A class whose
    constructor takes an ``llm`` keyword (an LLM cabin) is built with ``llm`` (the model
    endpoint ``--llm-base-url`` or the environment names, or None).
    """
    import functools
    import importlib
    import inspect
    import os

    from runtime import load_spec
    from sim.run.harness import ExtraCabin

    target, sep, spec_path = text.partition("@")
    module_name, colon, class_name = target.partition(":")
    if not sep or not colon or not module_name or not class_name or not spec_path:
        raise InputError(
            f"--cabin {text!r}: expected MODULE:CLASS@SPEC, e.g. greeter:Greeter@specs/greeter.toml"
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"--cabin {text!r}: cannot import module {module_name!r}: {exc}") from None
    factory = getattr(module, class_name, None)
    if factory is None or not callable(factory):
        raise InputError(f"--cabin {text!r}: module {module_name!r} has no class {class_name!r}")
    try:
        takes_llm = "llm" in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a callable without a signature
        takes_llm = False
    if takes_llm:
        factory = functools.partial(factory, llm=llm)
    return ExtraCabin(spec=load_spec(spec_path), factory=factory)


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


def memory_file(path: str) -> str:
    """``path`` as an absolute path to a usable long-term memory file (created if absent)."""
    import os
    import sqlite3

    from runtime import LongTermMemory

    absolute = os.path.abspath(path)
    try:
        LongTermMemory(absolute).close()  # created once, before parallel runs race to
    except sqlite3.Error as exc:
        raise InputError(f"--memory {path!r}: not a usable SQLite file ({exc})") from None
    return absolute


__all__ = ["build_cabin", "load_cabin", "load_faults", "memory_file"]
