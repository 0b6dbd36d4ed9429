"""Where things are, for tests in any folder of ``tests/``."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root."""
SPECS = ROOT / "specs"
"""The shipped specs."""
SUPPORT = Path(__file__).resolve().parent
"""This folder: shared test code and Foxglove's reader script."""
ARTIFACTS = ROOT / "tests" / "artifacts"
"""Where browser tests leave screenshots (ignored by git)."""
