"""The campaign report: a fault campaign's results as one self-contained HTML page, the
fault matrix (pass and fail in colour, each cell linking to its run's summary) and every
run's declared reactions, verdict, deliveries and the command that reproduces it."""

from __future__ import annotations

import os
import shlex
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from runtime.position import finite
from sim.report.html import (
    ReportError,
    ReportInfo,
    check_output,
    escape,
    kv_table,
    render_page,
    write_page,
)

# -- campaigns -------------------------------------------------------------------------------


def _badness(run: Mapping[str, Any]) -> tuple[int, int, int, float, int]:
    """Sort key: the worst run first (lost, unsafe, reactions missed, least delivered)."""
    tasks = run.get("tasks_total") or 0
    share = (run.get("deliveries_done") or 0) / tasks if tasks else 1.0
    unsafe = int(run.get("safety_violations") or 0) + int(run.get("collisions") or 0)
    return (
        0 if run.get("error") else 1,
        -unsafe,
        1 if run.get("reactions_ok") else 0,
        share,
        int(run.get("ticks") or 0),
    )


_WORDS = {"pass": "pass", "fail": "FAIL", "lost": "lost"}


def _state(run: Mapping[str, Any]) -> str:
    if run.get("error"):
        return "lost"
    return "pass" if run.get("passed") else "fail"


def _reproduce(run: Mapping[str, Any]) -> str:
    command = [
        "python",
        "-m",
        "sim",
        "run",
        "--scenario",
        str(run.get("scenario")),
        "--seed",
        str(run.get("seed")),
    ]
    if run.get("fault") not in (None, "(none)"):
        command += ["--fault", str(run["fault"])]
    if isinstance(run.get("ticks"), int) and run["ticks"] > 0:
        command += ["--ticks", str(run["ticks"])]
    return " ".join(shlex.quote(part) for part in command) + " --report run.html"


def campaign_page(report: Mapping[str, Any]) -> tuple[str, ReportInfo]:
    """The HTML page of a campaign's report (the dict ``python -m sim campaign --out``
    writes), and what it holds."""
    runs = report.get("runs")
    rows = report.get("table")
    if not isinstance(runs, list) or not isinstance(rows, list):
        raise ReportError(
            "a campaign report needs its 'runs' and 'table' lists (as "
            "python -m sim campaign --out writes them)"
        )
    columns: list[tuple[str, int]] = []
    by_fault: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(runs):
        if not isinstance(r, dict):
            raise ReportError(f"campaign run {i} is not an object")
        column = (str(r.get("scenario")), int(r.get("seed") or 0))
        if column not in columns:
            columns.append(column)
        by_fault[str(r.get("fault"))].append(i)
    head = "".join(f'<th class="num">{escape(s)}<br>seed {seed}</th>' for s, seed in columns)
    body = []
    for k, row in enumerate(rows):
        fault = str(row.get("fault"))
        mine = by_fault.get(fault, [])
        worst = min(mine, key=lambda i: (_badness(runs[i]), i)) if mine else None
        cells = []
        for column in columns:
            here = [
                i
                for i in mine
                if (str(runs[i].get("scenario")), int(runs[i].get("seed") or 0)) == column
            ]
            if not here:
                cells.append('<td class="cell none">-</td>')
                continue
            i = min(here, key=lambda j: (_badness(runs[j]), j))
            state = _state(runs[i])
            cells.append(
                f'<td class="cell {state}"><a href="#run-{i}" title="'
                f'{escape(_cell_title(runs[i]))}">{_WORDS[state]}</a></td>'
            )
        ok = row.get("passed") == row.get("runs") and not row.get("errors")
        state = "pass" if ok else "fail"
        unsafe = int(row.get("safety_violations") or 0) + int(row.get("collisions") or 0)
        safety = (
            "ok"
            if not unsafe
            else (f"{row.get('safety_violations')} violations, {row.get('collisions')} collisions")
        )
        if row.get("errors"):
            lost = int(row.get("errors") or 0)
            safety += f" ({lost} run{'s' if lost != 1 else ''} lost)"
        seen = f"{row.get('reactions_seen')} of {row.get('runs')}"
        seen_ok = row.get("reactions_seen") == row.get("runs")
        pct = finite(row.get("deliveries_pct"))
        summary_cells = [
            ("expected", escape(", ".join(str(x) for x in row.get("expected", [])) or "-"), None),
            ("seen", escape(seen), seen_ok),
            ("deliveries", escape(f"{pct:.0f}%" if pct is not None else "-"), True),
            ("safety", escape(safety), not unsafe and not row.get("errors")),
        ]
        rendered = "".join(
            f'<td class="summary {name} {_verdict(good)}">{_link(text, worst)}</td>'
            for name, text, good in summary_cells
        )
        body.append(
            f'<tr class="fault-row {state}" id="fault-{k}" data-fault="{escape(fault)}">'
            f'<td class="key">{_link(escape(fault), worst)}</td>{"".join(cells)}'
            f"{rendered}</tr>"
        )
    matrix = (
        f'<table class="matrix"><thead><tr><th>fault</th>{head}<th>declared '
        f"reactions</th><th>seen in</th><th>deliveries</th><th>safety</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )
    sections = [_campaign_run(i, r) for i, r in enumerate(runs)]
    passed = bool(report.get("passed"))
    verdict = (
        '<span class="badge ok">every declared reaction seen, no safety violation, every run '
        "delivered (or cut short) with nothing failed</span>"
        if passed
        else '<span class="badge bad">a declared reaction was missed, a run\'s verdict failed or '
        "a run was lost</span>"
    )
    settings = kv_table(
        [
            ("scenarios", escape(", ".join(str(s) for s in report.get("scenarios", [])))),
            ("seeds", escape(", ".join(str(s) for s in report.get("seeds", [])))),
            ("within", escape(f"{report.get('within')} ticks of a fault's start")),
            ("backend", escape(report.get("backend", "?"))),
            *(
                [("long-term memory", f"<code>{escape(report['memory'])}</code>")]
                if report.get("memory")
                else []
            ),
            ("runs", escape(len(runs))),
        ],
        raw=True,
    )
    parts = {
        "title": escape(f"tickwork fault campaign · {len(rows)} faults · {len(runs)} runs"),
        "subtitle": verdict,
        "matrix": matrix,
        "runs": "".join(sections),
        "settings": settings,
    }
    page = render_page("campaign.html", parts, scripts=False)
    return page, ReportInfo(path="", bytes=len(page.encode("utf-8")), runs=len(runs))


def _verdict(good: bool | None) -> str:
    return "" if good is None else "pass" if good else "fail"


def _link(text: str, run: int | None) -> str:
    """``text`` (HTML) linking to the summary of run number ``run``."""
    return text if run is None else f'<a href="#run-{run}">{text}</a>'


def _cell_title(run: Mapping[str, Any]) -> str:
    return (
        f"{run.get('fault')} · {run.get('scenario')} seed {run.get('seed')}: "
        f"{_state(run)}, {run.get('deliveries_done')}/{run.get('tasks_total')} delivered"
        f" · {_verdict_line(run)}"
    )


def _verdict_line(run: Mapping[str, Any]) -> str:
    """The run's verdict line ("-" for a lost run or one from before verdicts)."""
    verdict = run.get("verdict")
    line = verdict.get("line") if isinstance(verdict, Mapping) else None
    return str(line) if line else "-"


def _campaign_run(index: int, run: Mapping[str, Any]) -> str:
    state = _state(run)
    checks = run.get("expected") or []
    rows = "".join(
        f'<tr class="{"pass" if c.get("ok") else "fail"}"><td>{escape(c.get("cabin"))}</td>'
        f"<td><code>{escape(c.get('reaction'))}</code></td><td>{escape(c.get('because'))}</td>"
        f'<td class="num">{escape("-" if c.get("seen_at") is None else c.get("seen_at"))}</td>'
        f'<td class="{"pass" if c.get("ok") else "fail"}">{"seen" if c.get("ok") else "MISSED"}'
        f"</td></tr>"
        for c in checks
        if isinstance(c, dict)
    )
    expected = (
        f"<table><thead><tr><th>cabin</th><th>declared reaction</th><th>because</th>"
        f'<th class="num">seen at tick</th><th></th></tr></thead><tbody>{rows}</tbody>'
        "</table>"
        if rows
        else '<p class="note">No reaction expected.</p>'
    )
    facts = kv_table(
        [
            ("verdict", _verdict_line(run)),
            ("deliveries", f"{run.get('deliveries_done')} of {run.get('tasks_total')}"),
            ("safety violations", str(run.get("safety_violations"))),
            ("collisions", str(run.get("collisions"))),
            ("ticks", str(run.get("ticks"))),
            ("error", str(run.get("error") or "none")),
            ("board digest", str(run.get("board_digest") or "-")),
            ("reproduce", _reproduce(run)),
        ]
    )
    return (
        f'<section class="run {state}" id="run-{index}"><h3><span class="verdict">'
        f"{_WORDS[state]}"
        f'</span><code>{escape(run.get("fault"))}</code> <span class="note">'
        f"{escape(run.get('scenario'))} · seed {escape(run.get('seed'))}</span></h3>"
        f"{expected}{facts}</section>"
    )


def write_campaign_report(report: Mapping[str, Any], out: str | os.PathLike[str]) -> ReportInfo:
    """Write the HTML page of a campaign's report to ``out`` (atomically)."""
    check_output(out)
    page, info = campaign_page(report)
    written = write_page(out, page)
    return ReportInfo(**{**info.as_json(), "path": os.fspath(out), "bytes": written})
