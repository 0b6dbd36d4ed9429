"""The report command of ``python -m sim``: a recorded run as one self-contained HTML page.

The page is built by ``sim.report.pages``; this module parses arguments and says where
the page went. Top-level imports stay light so that ``--help`` is instant.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sim.cli.args import at_least
from sim.cli.exits import EXIT_OK, InputError, notice, print_json

REPORT_EPILOG = """\
examples:
  python -m sim report run.mcap                      writes run.html beside it
  python -m sim report run.mcap -o report.html --json
  python -m sim run --report report.html             run, record, report in one go
The page opens from disk and loads nothing from the network. It embeds the
working set of at most --max-ticks ticks (the ones worth a look first: faults,
alarms, bad outcomes); python -m sim inspect FILE.mcap --tick N shows any other.
exit status: 0 written, 2 bad input (not a recording, no ticks, a bad output path)
A damaged recording is reported up to its break, with a notice on stderr.
"""


def register(sub: Any) -> None:
    """Add the ``report`` command to the ``python -m sim`` parser."""
    report = sub.add_parser(
        "report",
        help="write a recorded run as one self-contained HTML page",
        epilog=REPORT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    report.add_argument("recording", metavar="FILE.mcap")
    report.add_argument(
        "-o",
        "--out",
        metavar="FILE.html",
        help="where to write the page (default: FILE.html beside the recording)",
    )
    report.add_argument(
        "--max-ticks",
        type=at_least(0),
        default=None,
        metavar="N",
        help="embed the working set of at most N ticks (default: 200)",
    )
    report.add_argument(
        "--max-points",
        type=at_least(10),
        default=None,
        metavar="N",
        help="at most N points per timeline and on the trajectory (default: 1000)",
    )
    report.add_argument(
        "--json", action="store_true", help="print one JSON object saying what the page holds"
    )
    report.set_defaults(handler=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    import os

    from sim.report import pages as rp

    out = args.out if args.out is not None else os.path.splitext(args.recording)[0] + ".html"
    if os.path.abspath(out) == os.path.abspath(args.recording):
        raise InputError(f"-o {out!r} would overwrite the recording itself")
    try:
        info = rp.write_run_report(
            args.recording,
            out,
            max_points=rp.MAX_POINTS if args.max_points is None else args.max_points,
            max_ticks=rp.MAX_TICKS if args.max_ticks is None else args.max_ticks,
            warn=notice,
        )
    except OSError as exc:
        raise InputError(f"{out!r}: cannot write it ({exc.strerror or exc})") from None
    if args.json:
        print_json(info.as_json())
    else:
        print(
            f"wrote {info.path} ({info.bytes / 1e3:.0f} kB): {info.ticks} ticks, the working "
            f"set of {info.embedded_ticks} embedded ({info.worth_a_look} worth a look), "
            f"{info.markers} markers, {info.routes} routes"
        )
    return EXIT_OK


# -- for run --report and campaign --report --------------------------------------------------


def check_report_target(path: str) -> None:
    """Refuse a ``--report`` target that cannot be written, before any work is done."""
    from sim.report.html import ReportError, check_output

    try:
        check_output(path)
    except ReportError as exc:
        raise InputError(f"--report {exc}") from None


def run_report_recording(args: argparse.Namespace) -> Path | None:
    """For ``run --report``: check the target; the temporary file to record to when the run
    records nowhere else (no ``--record``, no ``--resume``), else None. The caller deletes it."""
    if getattr(args, "report", None) is None:
        return None
    from sim.report.html import temporary_recording

    check_report_target(args.report)
    if args.record is not None or args.resume is not None:
        return None
    return temporary_recording()


def write_run_page(
    out: str, recording: str | Path, summary: Mapping[str, Any], *, quiet: bool = False
) -> None:
    """After ``run --report``: the page of the run's recording, with the run's own summary."""
    from runtime.recording.reader import RecordingError
    from sim.report.html import ReportError
    from sim.report.pages import write_run_report

    try:
        info = write_run_report(recording, out, summary=summary, warn=notice)
    except (RecordingError, ReportError) as exc:
        raise InputError(f"--report {out!r}: {exc}") from None
    except OSError as exc:
        raise InputError(f"--report {out!r}: cannot write it ({exc.strerror or exc})") from None
    if not quiet:
        print(f"report: {info.path} ({info.bytes / 1e3:.0f} kB)")


def write_campaign_page(out: str, report: Mapping[str, Any], *, quiet: bool = False) -> None:
    """After ``campaign --report``: the fault matrix as a page."""
    from sim.report.campaign import write_campaign_report
    from sim.report.html import ReportError

    try:
        info = write_campaign_report(report, out)
    except ReportError as exc:
        raise InputError(f"--report {out!r}: {exc}") from None
    except OSError as exc:
        raise InputError(f"--report {out!r}: cannot write it ({exc.strerror or exc})") from None
    if not quiet:
        print(f"report: {info.path} ({info.bytes / 1e3:.0f} kB)")
