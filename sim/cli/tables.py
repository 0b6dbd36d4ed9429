"""Terminal tables for the commands that read recordings: one look for all of them.

Imported by command handlers only (rich loads when a table is drawn, not at
``--help``). Cells are plain text, never rich markup, since they hold recorded
values that may contain brackets.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any


def console() -> Any:
    """A console that folds at 160 columns when the output is not a terminal."""
    from rich.console import Console

    wide = sys.stdout.isatty() or "COLUMNS" in os.environ
    return Console(highlight=False, width=None if wide else 160)


def table(title: str, *columns: str) -> Any:
    from rich.table import Table

    out = Table(title=title, title_justify="left", title_style="bold")
    for name in columns:
        out.add_column(name, overflow="fold")
    return out


def cell(text: Any) -> Any:
    """A table cell that rich does not read as markup."""
    from rich.text import Text

    return Text(str(text))


def counts_text(counts: Mapping[str, Any]) -> str:
    """``{"a": 2, "b": 1}`` as ``a 2, b 1``; ``none`` when empty."""
    return ", ".join(f"{k} {v}" for k, v in counts.items()) if counts else "none"
