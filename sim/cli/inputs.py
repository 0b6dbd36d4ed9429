"""Turning what people type into the objects a run needs: their cabins
(``--cabin MODULE:CLASS@SPEC``), faults (``--fault``, ``--faults FILE``) and long-term
memory files (``--memory``). Shared by ``run``, ``campaign`` and ``replay``; each refuses
bad input with one ``InputError`` (or the library's own ``TickworkError``) that names it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sim.cli.exits import InputError

if TYPE_CHECKING:
    from runtime import Cabin
    from sim.faults.model import Fault
    from sim.run.harness import CabinRef, ExtraCabin


def cabin_ref(text: str) -> CabinRef:
    """``MODULE:CLASS@SPEC`` → a reference to the cabin: its module and class, imported from
    the current folder, and its spec file, loaded."""
    import os

    from runtime import load_spec
    from sim.run.harness import CabinRef

    target, sep, spec_path = text.partition("@")
    module_name, colon, class_name = target.partition(":")
    if not sep or not colon or not module_name or not class_name or not spec_path:
        raise InputError(
            f"--cabin {text!r}: expected MODULE:CLASS@SPEC, e.g. greeter:Greeter@specs/greeter.toml"
        )
    return CabinRef(module_name, class_name, load_spec(spec_path), os.getcwd())


def load_cabin(text: str) -> ExtraCabin:
    """``MODULE:CLASS@SPEC`` → the cabin's spec and the class that builds it.

    ``MODULE`` is imported from the current folder; ``SPEC`` is a spec file.
    """
    from runtime.errors import SettingError

    try:
        return cabin_ref(text).load()
    except SettingError as exc:
        raise InputError(f"--cabin {text!r}: {exc}") from None


def build_cabin(text: str, cabin: ExtraCabin) -> Cabin:
    """The cabin ``--cabin text`` names, built on its spec."""
    try:
        return cabin.factory(cabin.spec)
    except (TypeError, ValueError) as exc:
        raise InputError(f"--cabin {text!r}: cannot build the cabin: {exc}") from None


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


__all__ = ["build_cabin", "cabin_ref", "load_cabin", "load_faults", "memory_file"]
