"""Where the built-in cabins' shipped specs live, in a checkout and in an installed wheel.

The specs are edited as ``specs/*.toml`` at the top of the repository. A wheel carries
the same folder as the data-only package ``tickwork_specs`` (``pyproject.toml`` maps
it), so ``python -m sim run`` finds them however tickwork was installed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path


def shipped_specs_dir() -> Path:
    """The folder holding ``planner.toml``, ``executor.toml`` and ``monitor.toml``."""
    checkout = Path(__file__).resolve().parent.parent / "specs"
    if (checkout / "planner.toml").is_file():
        return checkout
    found = importlib.util.find_spec("tickwork_specs")  # a folder without __init__.py
    if found is None or not found.submodule_search_locations:
        return checkout  # neither: load_specs names the folder it could not find
    return Path(next(iter(found.submodule_search_locations)))
