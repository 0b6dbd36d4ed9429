"""The analysis commands of ``python -m sim``: doctor and replay.

``doctor`` (``sim.analysis.doctor``) says what each bad outcome of a recorded run lacked and
which spec changes would have covered the most of them; ``replay``
(``sim.analysis.replay``) feeds the recorded working sets back to fresh cabins and reports
every tick where a decision differs. This module parses arguments and prints the
reports, as one JSON object (``--json``) or as tables. Top-level imports stay
light so that ``--help`` is instant.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from sim.cli.args import at_least
from sim.cli.exits import EXIT_FAILED, EXIT_OK, notice, print_json
from sim.cli.tables import cell as _t
from sim.cli.tables import console as _console
from sim.cli.tables import table as _table

DOCTOR_EPILOG = """\
examples:
  python -m sim doctor run.mcap
  python -m sim doctor run.mcap --window 100 --json
A bad outcome is an action_failed, replan, alarm, emergency_stop, collision or
safety_violation event; it belongs to the cabin its cabin:<name> tag names (an
untagged incident belongs to every cabin). Suggestions are TOML lines for the
cabin's spec, ranked by how many bad outcomes each would have covered
(weights."P" = W is the dotted form: under a spec's [weights] table write "P" = W).
The last lines give the run's liveness (waits for movers, give-ways, no-progress
re-plans, re-plans to charge first, stalled episodes, deferred and abandoned tasks)
and its verdict with the reachable tasks left undelivered (from the summary a finished
run recorded).
exit status: 0 nothing to suggest, 1 spec changes suggested, 2 bad input
"""

REPLAY_EPILOG = """\
examples:
  python -m sim replay run.mcap
  python -m sim replay run.mcap --json \
      --cabin people_watch:PeopleWatch@examples/people_watch/people_watch.toml
The built-in cabins are built fresh on the recorded specs; give your own cabins
with --cabin, as for `python -m sim run`. Faults recorded with the run (crashes,
lost events) are applied again.
exit status: 0 no drift, 1 decision drift, 2 bad input
"""

SHOWN = 30
"""Rows printed per table before the rest is summarised (``--json`` has them all)."""


def register(sub: Any) -> None:
    """Add this module's commands to the ``python -m sim`` parser."""
    raw = argparse.RawDescriptionHelpFormatter
    doctor = sub.add_parser(
        "doctor",
        help="what each bad outcome lacked, and the spec changes that would help",
        epilog=DOCTOR_EPILOG,
        formatter_class=raw,
    )
    doctor.add_argument("recording", metavar="FILE.mcap")
    doctor.add_argument(
        "--window",
        type=at_least(0, what="number of ticks"),
        default=40,
        metavar="TICKS",
        help="look this many ticks back from each bad outcome (default: 40)",
    )
    doctor.add_argument("--json", action="store_true", help="print one JSON object")
    doctor.set_defaults(handler=cmd_doctor)

    replay = sub.add_parser(
        "replay",
        help="feed a recording back to the cabins and report decision drift",
        epilog=REPLAY_EPILOG,
        formatter_class=raw,
    )
    replay.add_argument("recording", metavar="FILE.mcap")
    replay.add_argument(
        "--cabin",
        action="append",
        default=[],
        metavar="MODULE:CLASS@SPEC",
        help="replay your own cabin too: CLASS from MODULE (importable from "
        "the current directory), built as CLASS(spec) on the spec file "
        "SPEC; repeatable",
    )
    replay.add_argument("--json", action="store_true", help="print one JSON object")
    replay.set_defaults(handler=cmd_replay)


# -- handlers --------------------------------------------------------------------------------


def cmd_doctor(args: argparse.Namespace) -> int:
    from runtime import configure_logging
    from runtime.recording.inspect import open_recording
    from sim.analysis.doctor import diagnose

    configure_logging(level="error")
    recording = open_recording(args.recording, warn=notice)
    report = diagnose(recording, window=args.window)
    if args.json:
        print_json(report.as_json())
    else:
        _print_doctor(report)
    return EXIT_FAILED if report.suggestions else EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    from runtime import configure_logging
    from runtime.recording.inspect import open_recording
    from sim.analysis.replay import replay
    from sim.cli.inputs import build_cabin, load_cabin

    configure_logging(level="critical")  # a replayed cabin may log its (recorded) failures
    cabins = [build_cabin(text, load_cabin(text)) for text in args.cabin]
    recording = open_recording(args.recording, warn=notice)
    report = replay(recording, cabins=cabins)
    if args.json:
        print_json(report.as_json())
    else:
        _print_replay(report)
    return EXIT_FAILED if report.drifted else EXIT_OK


# -- tables ----------------------------------------------------------------------------------


def _ticks_text(ticks: Any) -> str:
    return ", ".join(str(t) for t in ticks)


def _more(console: Any, total: int) -> None:
    if total > SHOWN:
        console.print(_t(f"... and {total - SHOWN} more (--json lists them all)"))


def _print_doctor(report: Any) -> None:
    console = _console()
    counts = ", ".join(f"{n} {k}" for k, n in sorted(report.outcome_counts.items()))
    console.print(
        _t(
            f"{report.path} · {report.ticks} ticks · {len(report.findings)} bad "
            f"outcome(s){': ' + counts if counts else ''} · window {report.window} "
            "ticks"
        )
    )
    if report.findings:
        table = _table(
            "bad outcomes and what their cabin lacked before them",
            "tick",
            "outcome",
            "cabin",
            "missing or evicted in the window",
        )
        for finding in report.findings[:SHOWN]:
            o = finding.outcome
            lacks = (
                "\n".join(
                    (lack.describe() if o.cabin is not None else f"{lack.cabin}: {lack.describe()}")
                    for lack in finding.lacks
                )
                or "nothing"
            )
            table.add_row(str(o.tick), _t(o.summary), o.cabin or "(every cabin)", _t(lacks))
        console.print(table)
        _more(console, len(report.findings))
    for finding in report.findings:
        if finding.outcome.kind != "collision":
            continue
        d = finding.outcome.data if isinstance(finding.outcome.data, dict) else {}
        table = _table(
            f"collision at tick {finding.outcome.tick}: {d.get('hit', '?')} at "
            f"({d.get('x')}, {d.get('y')}), {d.get('speed')} m/s, heading {d.get('heading')} rad"
            " - the cabin decisions before it",
            "tick",
            "cabin",
            "decision",
            "detail",
        )
        for decision in finding.decisions[-SHOWN:]:
            table.add_row(
                str(decision["tick"]),
                decision["cabin"],
                decision["decision"],
                _t(json.dumps(decision["detail"], sort_keys=True, default=str)),
            )
        console.print(table)
    if report.suggestions:
        table = _table(
            "suggested spec changes, by bad outcomes covered",
            "#",
            "cabin",
            "change (TOML)",
            "outcomes",
            "e.g. ticks",
            "why",
        )
        for i, s in enumerate(report.suggestions[:SHOWN], start=1):
            table.add_row(
                str(i), s.cabin, _t(s.change), str(s.outcomes), _ticks_text(s.examples), _t(s.why)
            )
        console.print(table)
        _more(console, len(report.suggestions))
    elif report.findings:
        console.print("no spec change to suggest")
    if report.injected:
        table = _table(
            "injected by the run's faults (not a spec problem)",
            "cabin",
            "item",
            "reason",
            "fault",
            "outcomes",
            "e.g. ticks",
        )
        for i in report.injected[:SHOWN]:
            table.add_row(
                i.cabin,
                _t(i.pattern),
                i.reason,
                _t(", ".join(i.faults)),
                str(i.outcomes),
                _ticks_text(i.ticks[:5]),
            )
        console.print(table)
    if report.pressure:
        table = _table(
            "capacity pressure: what each cabin selected and lost to capacity",
            "cabin",
            "lost",
            "ticks",
            "episodes",
            "lost most often (ticks)",
            "tighten first",
        )
        for p in report.pressure:
            table.add_row(
                p.cabin,
                str(p.lost),
                f"{p.ticks} ({p.first}-{p.last})",
                str(p.episodes),
                _t(", ".join(f"{k} ({n})" for k, n in p.keys)),
                _t(p.advice),
            )
        console.print(table)
    for note in report.notes:
        console.print(_t(f"note: {note}"))
    _print_liveness(console, report.liveness)
    if not report.findings:
        console.print(
            "[green]no bad outcome in this recording[/green]"
            if not report.liveness.stuck
            else "[red]no bad outcome in this recording, and yet the run did not make "
            "progress (above)[/red]"
        )


def _print_liveness(console: Any, liveness: Any) -> None:
    """The run's liveness: its waits, give-ways, no-progress re-plans, re-plans to charge
    first, stalls, deferrals and abandoned tasks, and its verdict with the reachable tasks
    it left undelivered."""
    style = "red" if liveness.stuck else ""
    console.print(_t(f"liveness: {liveness.counts_text()}"), style=style)
    outcome = liveness.outcome_text()
    if liveness.undelivered and liveness.status != "failed":
        named = ", ".join(t for t in liveness.undelivered if t)
        outcome += f" ({len(liveness.undelivered)} undelivered{': ' + named if named else ''})"
    console.print(_t(outcome), style=style)


def _print_replay(report: Any) -> None:
    console = _console()
    span = (
        "no tick" if report.first_tick is None else f"ticks {report.first_tick}-{report.last_tick}"
    )
    faults = f" · faults {', '.join(report.faults)}" if report.faults else ""
    console.print(
        _t(
            f"{report.path} · replayed {report.ticks} ticks ({span}) · cabins "
            f"{', '.join(report.cabins) or 'none'}{faults}"
        )
    )
    for name in report.skipped:
        console.print(
            _t(f"warning: cabin {name!r} was not replayed (give it with --cabin MODULE:CLASS@SPEC)")
        )
    for note in report.notes:
        console.print(_t(f"note: {note}"))
    if not report.drifted:
        console.print(
            "[green]no decision drift: every replayed decision matches the recording[/green]"
        )
        return
    table = _table("decision drift", "tick", "cabin", "what differed")
    for drift in report.drifts[:SHOWN]:
        table.add_row(str(drift.tick), drift.cabin, _t(drift.describe()))
    console.print(table)
    _more(console, len(report.drifts))
    by_cabin = ", ".join(f"{c} at {n} tick(s)" for c, n in report.by_cabin().items())
    console.print(_t(f"DRIFT: {by_cabin}; first at tick {report.drift_ticks[0]}"), style="red")
