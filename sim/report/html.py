"""The HTML of reports: escaping, the page templates and writing a page to disk.

A page opens from disk and loads nothing: its CSS and JavaScript are inline (from
``sim/report/templates/``), its data is embedded as JSON in a script element no value
can break out of, and its Content-Security-Policy forbids every fetch. Everything put
into a page goes through ``escape``. Pages are written atomically.
"""

from __future__ import annotations

import html
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.errors import TickworkError
from runtime.files import atomic_output, read_head, read_input

TEMPLATES = Path(__file__).with_name("templates")


Json = dict[str, Any]


class ReportError(TickworkError, ValueError):
    """A report that cannot be made: the message says what is wrong with what input."""


@dataclass(frozen=True, slots=True)
class ReportInfo:
    """What a written report holds."""

    path: str
    bytes: int
    ticks: int = 0
    embedded_ticks: int = 0
    worth_a_look: int = 0
    markers: int = 0
    routes: int = 0
    trajectory_points: int = 0
    runs: int = 0
    damaged: bool = False

    def as_json(self) -> Json:
        return {name: getattr(self, name) for name in self.__slots__}


# -- output ----------------------------------------------------------------------------------


def check_output(path: str | os.PathLike[str]) -> Path:
    """``path`` as a report target; ``ReportError`` if it cannot be written there.

    Called before a long run, so that a bad ``--report`` fails before the work. An
    existing file is replaced only if it is a report tickwork wrote: any other file there
    (a recording, a page of someone else's) is left alone.
    """
    target = Path(path)
    if target.is_dir():
        raise ReportError(f"{os.fspath(path)!r} is a folder; give a file name such as report.html")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise ReportError(f"{os.fspath(path)!r}: the folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise ReportError(f"{os.fspath(path)!r}: the folder {str(folder)!r} is not writable")
    if target.exists() and not _is_report(target):
        raise ReportError(
            f"{os.fspath(path)!r} exists and is not a tickwork report: it is not replaced "
            "(remove it, or give another file name)"
        )
    return target


def _is_report(path: Path) -> bool:
    """Whether ``path`` is a page tickwork wrote (its head names tickwork as generator)."""
    head = read_head(path, 4096)  # None for a FIFO or a device: not a report, not opened
    return head is not None and b'<meta name="generator" content="tickwork' in head


def temporary_recording(folder: str | os.PathLike[str] | None = None) -> Path:
    """A fresh path for a recording a report is made from (``run --report`` without
    ``--record``); the caller deletes it."""
    fd, name = tempfile.mkstemp(prefix="tickwork-report-", suffix=".mcap", dir=folder)
    os.close(fd)
    return Path(name)


def write_page(path: str | os.PathLike[str], text: str) -> int:
    """Write ``text`` to ``path`` atomically; the bytes written."""
    data = text.encode("utf-8")
    with atomic_output(check_output(path)) as fh:
        fh.write(data)
    return len(data)


# -- escaping and templates ------------------------------------------------------------------


def escape(value: Any) -> str:
    """``value`` as text, escaped for HTML element content and quoted attributes."""
    return html.escape(str(value), quote=True)


def json_script(element_id: str, data: Any) -> str:
    """``data`` as a ``<script type="application/json">`` that no value can break out of."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    text = (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )
    return f'<script type="application/json" id="{escape(element_id)}">{text}</script>'


_SLOT = re.compile(r"\{\{(\w+)\}\}")


def fill(template: str, parts: Mapping[str, str]) -> str:
    """Put ``parts`` into the ``{{name}}`` slots of a template, in one pass."""

    def put(found: re.Match[str]) -> str:
        name = found[1]
        if name not in parts:
            raise KeyError(f"the report template has a slot {name!r} that nothing fills")
        return parts[name]

    return _SLOT.sub(put, template)


def template(name: str) -> str:
    return read_input(TEMPLATES / name, limit=1 << 20, what="a page template").decode("utf-8")


def render_page(name: str, parts: Mapping[str, str], *, scripts: bool) -> str:
    """The template ``name`` filled with ``parts`` under the shared head (``head.html``):
    ``title`` and ``subtitle`` go there, with the stylesheet and a Content-Security-Policy
    that lets in inline scripts only when the page has some."""
    csp = (
        "default-src 'none'; style-src 'unsafe-inline'; "
        + ("script-src 'unsafe-inline'; " if scripts else "")
        + "img-src data:"
    )
    head = fill(
        template("head.html"),
        {
            "csp": csp,
            "generator": escape(_generator()),
            "title": parts["title"],
            "subtitle": parts["subtitle"],
            "css": template("report.css"),
        },
    )
    body = {k: v for k, v in parts.items() if k not in ("title", "subtitle")}
    return fill(template(name), {**body, "head": head})


def _generator() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"tickwork {version('tickwork')}"
    except PackageNotFoundError:
        return "tickwork"


def num(value: float, digits: int = 1) -> str:
    text = f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def kv_table(rows: Iterable[tuple[str, str]], *, raw: bool = False) -> str:
    """A two-column table; values are escaped unless ``raw`` (already HTML)."""
    body = "".join(
        f"<tr><th>{escape(k)}</th><td>{v if raw else escape(v)}</td></tr>" for k, v in rows
    )
    return f'<table class="kv">{body}</table>'


def counts_text(counts: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) if counts else "none"
