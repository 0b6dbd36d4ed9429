"""npm packages for the tests that run Foxglove's own code on Node.js.

Each set of pinned packages is installed once into a folder of its own under
``~/.cache/tickwork-npm`` (or ``$TICKWORK_NPM_CACHE``); a test skips where node and npm
are not installed (``.ci/run`` installs them) or npm cannot install the set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

FOXGLOVE_READER = ("@mcap/core@2", "@mcap/support", "@foxglove/schemas@2", "ajv@8")
"""Foxglove's MCAP reader, its zstd, its published schemas and a JSON Schema validator."""
WS_PROTOCOL = ("@foxglove/ws-protocol@0.8.0", "ws@8.18.3")
"""The protocol's own client library (``FoxgloveClient``, offering ``foxglove.websocket.v1``)
and the WebSocket implementation it is given on Node."""


def _package_folder(spec: str) -> str:
    """``@scope/name@1`` → ``@scope/name``."""
    name, _, _ = spec[1:].partition("@") if spec.startswith("@") else spec.partition("@")
    return "@" + name if spec.startswith("@") else name


def node_modules(name: str, packages: Sequence[str]) -> Path:
    """The ``node_modules`` folder holding ``packages`` (installed into cache folder
    ``name`` if needed); skips the test without node and npm."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed: Foxglove's code cannot be run")
    base = Path(os.environ.get("TICKWORK_NPM_CACHE", Path.home() / ".cache" / "tickwork-npm"))
    where = base / name
    modules = where / "node_modules"
    if not all((modules / _package_folder(p)).is_dir() for p in packages):
        where.mkdir(parents=True, exist_ok=True)
        (where / "package.json").write_text('{"private": true}\n')
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--silent", *packages],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            pytest.skip(f"npm could not install {' '.join(packages)}: {done.stderr[-300:]}")
    return modules
