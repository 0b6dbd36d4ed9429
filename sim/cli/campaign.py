"""The ``campaign`` command of ``python -m sim``: scenarios x seeds x faults, each run
checked against the reactions its specs declare."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from sim.cli.args import positive_int, seeds
from sim.cli.exits import EXIT_FAILED, EXIT_OK, InputError

if TYPE_CHECKING:
    from sim.run.campaign import Campaign

CAMPAIGN_EPILOG = """\
examples:
  python -m sim campaign --faults auto --seeds 0-2
  python -m sim campaign --fault missing:executor:event:action_failed*@100-400 --seeds 0-9
  python -m sim campaign --faults auto --backend ray --address ray://head:10001 --out r.json
  python -m sim campaign --faults auto --memory shared.sqlite   runs learn from each other
  python -m sim campaign --scenario gen:0-99 --faults auto --journal c.jsonl   resumable
  python -m sim campaign --scenario hard:0-29 --seeds 0-1 --faults none   the harder family
exit status: 0 every run passed: its declared reactions seen and its verdict not failed
  (a run cut short by --ticks is not failed); 1 otherwise (a reaction missed, a run unsafe,
  a reachable task undelivered at the scenario's end, a stalled episode, an abandoned task,
  a flat battery, a run lost); 2 bad input
"""


def register(sub: Any) -> None:
    """Add the ``campaign`` command to the ``python -m sim`` parser."""
    from sim.faults.grammar import GRAMMAR

    campaign = sub.add_parser(
        "campaign",
        help="run scenarios x seeds x faults and check every declared reaction",
        epilog=CAMPAIGN_EPILOG + "\n" + GRAMMAR,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    campaign.add_argument(
        "--scenario",
        action="append",
        metavar="NAME|PATH",
        help="a scenario (repeatable; default: warehouse), or generated worlds: "
        "gen:N or gen:A-B, hard:N or hard:A-B (the seeds of python -m sim generate "
        "[--family hard])",
    )
    campaign.add_argument(
        "--cabin",
        action="append",
        default=[],
        metavar="MODULE:CLASS@SPEC",
        help="also run your own cabin in every run (repeatable): CLASS from MODULE "
        "(importable from the current directory) on the spec file SPEC; its "
        "[on_missing] reactions are checked like the built-ins', and --faults auto "
        "covers its required patterns",
    )
    campaign.add_argument(
        "--specs",
        metavar="DIR",
        help="folder of the built-in cabins' specs (default: the shipped "
        "specs/); --faults auto reads their required patterns",
    )
    campaign.add_argument(
        "--seeds",
        default="0-2",
        type=seeds,
        metavar="LIST",
        help="seeds: 0-4, or 1,5,9 (default: 0-2)",
    )
    campaign.add_argument(
        "--fault", action="append", default=[], metavar="FAULT", help="a fault to run (repeatable)"
    )
    campaign.add_argument(
        "--faults",
        metavar="auto|none|FILE",
        help="'auto': one missing-item fault per required pattern of every "
        "spec plus one of each other kind; 'none': the fault-free control runs "
        "only; or a TOML fault file",
    )
    campaign.add_argument(
        "--ticks",
        type=positive_int,
        metavar="N",
        help="ticks per run (default: the scenario's duration; a run stops "
        "early once its deliveries are done and its fault was judged)",
    )
    campaign.add_argument(
        "--within",
        type=positive_int,
        default=40,
        metavar="K",
        help="a declared reaction must show within K ticks of the fault's start (default: 40)",
    )
    campaign.add_argument(
        "--workers",
        type=positive_int,
        metavar="N",
        help="parallel runs (default: the number of CPUs)",
    )
    campaign.add_argument(
        "--backend",
        choices=["local", "ray"],
        default="local",
        help="local process pool (default) or Ray (pip install 'tickwork[ray]')",
    )
    campaign.add_argument(
        "--address", metavar="ADDR", help="Ray cluster address (default: start a local Ray)"
    )
    campaign.add_argument("--out", metavar="FILE", help="write every run's result as JSON")
    campaign.add_argument(
        "--journal",
        metavar="FILE.jsonl",
        help="append each run's result to FILE as soon as the run finishes; started again "
        "with the same FILE, the campaign runs only what FILE does not hold yet (same "
        "world, seed, fault, settings and tickwork code)",
    )
    campaign.add_argument(
        "--memory",
        metavar="FILE.sqlite",
        help="one long-term memory file for every run of the campaign "
        "(parallel runs share it): the planners remember where the way "
        "was blocked and recall it. Each run recalls what the file holds "
        "when it starts, so results depend on the order the runs happen "
        "to run in (the backend, the workers); without --memory they "
        "do not",
    )
    campaign.add_argument(
        "--report",
        metavar="FILE.html",
        help="write the fault matrix as one self-contained HTML page",
    )
    campaign.add_argument(
        "--json", action="store_true", help="print the results as one JSON object"
    )
    campaign.set_defaults(handler=cmd_campaign)


# -- handler ---------------------------------------------------------------------------------


def cmd_campaign(args: argparse.Namespace) -> int:
    import contextlib
    import json
    import os

    from runtime import configure_logging, load_specs
    from sim.cli.inputs import (
        build_cabin,
        cabin_ref,
        check_memory,
        load_cabin,
        load_faults,
        memory_file,
    )
    from sim.faults.model import FaultPlan
    from sim.run import campaign as cp
    from sim.run.harness import BUILTIN_CABINS, SPECS_DIR

    configure_logging(level="error")
    worlds = scenario_worlds(args.scenario or ["warehouse"])
    scenarios = list(worlds)
    specs = load_specs(args.specs or SPECS_DIR)
    absent = [name for name in BUILTIN_CABINS if name not in specs]
    if absent:
        raise InputError(
            f"--specs {args.specs}: no spec for the built-in cabin(s) {', '.join(absent)}"
        )
    others = sorted(set(specs) - set(BUILTIN_CABINS))
    if others:  # a campaign runs the built-in cabins only
        print(
            f"note: --specs {args.specs}: campaigns run the built-in cabins; ignoring the "
            f"spec(s) of {', '.join(others)}",
            file=sys.stderr,
        )
        specs = {name: specs[name] for name in BUILTIN_CABINS}
    refs = [cabin_ref(text) for text in args.cabin]
    for text, ref in zip(args.cabin, refs, strict=True):
        build_cabin(text, load_cabin(text))  # importable and buildable here, before any run
        if ref.spec.name in specs:
            raise InputError(f"--cabin {text!r}: a cabin named {ref.spec.name!r} runs already")
        specs[ref.spec.name] = ref.spec
    if args.report is not None:
        from sim.cli.report import check_report_target

        check_report_target(args.report)
    from sim.cli.outputs import check_outputs, check_replaceable

    check_outputs(
        [
            ("--out", args.out),
            ("--report", args.report),
            ("--memory", args.memory),
            ("--journal", args.journal),
        ],
        inputs=[("--scenario", name) for name in scenarios if os.path.isfile(name)]
        + [("--faults", args.faults if args.faults not in (None, "auto", "none") else None)],
    )
    check_replaceable("--out", args.out, what="a campaign result", ours=is_campaign_result)
    faults = load_faults(args.fault, None if args.faults in (None, "auto", "none") else args.faults)
    if args.faults == "auto":
        faults.extend(cp.auto_faults(specs))
    FaultPlan(faults).check_cabins(specs)
    if not faults and args.faults != "none":
        raise InputError(
            "no faults: give --fault FAULT (repeatable), --faults auto|FILE, or --faults none "
            "for the control runs alone"
        )
    if args.backend == "ray" and len({ref.folder for ref in refs}) > 1:
        raise InputError("--backend ray: give every --cabin from one folder")
    if args.memory is not None:
        check_memory(args.memory)  # read-only, before the journal is opened
    journal = None
    with contextlib.ExitStack() as stack:
        if args.journal is not None:  # opened (checked, locked) before anything is written
            from sim.run.journal import Journal

            journal = stack.enter_context(Journal(args.journal))
        shared: dict[str, Any] = {}
        if args.memory is not None:
            shared["memory"] = memory_file(args.memory)
        requests = [
            cp.RunRequest(
                scenario=name,
                seed=seed,
                fault=fault,
                ticks=args.ticks,
                within=args.within,
                specs={n: specs[n] for n in BUILTIN_CABINS},
                world=worlds[name],
                cabins=tuple(refs),
                **shared,
            )
            for name in scenarios
            for seed in args.seeds
            for fault in [None, *faults]
        ]
        workers = args.workers or os.cpu_count() or 1
        if args.backend == "ray":
            try:
                folders = sorted({ref.folder for ref in refs})
                import ray  # noqa: F401 (it sets up its own logger when imported)

                from runtime.logs import adopt_logger
                from sim.run.ray_backend import RaySession, ray_lost_errors

                adopt_logger("ray")  # its notices at this command's level, as its events
                session = stack.enter_context(
                    RaySession(address=args.address, working_dir=folders[0] if folders else None)
                )
            except ImportError:
                raise InputError("the Ray backend needs Ray: pip install 'tickwork[ray]'") from None
            campaign = cp.Campaign(
                requests, session.executor, workers, lost_errors=ray_lost_errors()
            )
        else:
            campaign = cp.Campaign(requests, cp.local_executor, workers)
        campaign.journal = journal
        results = _run(campaign, len(requests), quiet=args.json or not sys.stderr.isatty())
    rows = cp.table(results)
    report = {
        "scenarios": scenarios,
        "seeds": args.seeds,
        "within": args.within,
        "backend": args.backend,
        "passed": cp.passed(results),
        "table": rows,
        "runs": results,
    }
    if args.memory is not None:
        report["memory"] = shared["memory"]
    if journal is not None:
        report["journal"] = {
            "path": args.journal,
            "reused": journal.reused,
            "ran": journal.appended,
            "refused_lines": len(journal.refused),
        }
        if not args.json:
            refused = (
                f", {len(journal.refused)} damaged or edited line(s) refused (their runs ran again)"
                if journal.refused
                else ""
            )
            print(
                f"journal {args.journal}: {journal.reused} run(s) taken from it, "
                f"{journal.appended} run and appended{refused}",
                file=sys.stderr,
            )
    if args.out:
        from runtime.files import atomic_output

        try:
            with atomic_output(args.out) as fh:
                fh.write(json.dumps(report, indent=2, sort_keys=True).encode())
        except OSError as exc:  # checked before the runs; the folder changed since
            print(json.dumps(report, sort_keys=True))
            raise InputError(
                f"--out {args.out!r}: cannot write it ({exc.strerror or exc}); the results "
                "are printed above instead"
            ) from None
    if args.report is not None:
        from sim.cli.report import write_campaign_page

        write_campaign_page(args.report, report, quiet=args.json)
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        _print_campaign(rows, results, report["passed"])
    return EXIT_OK if report["passed"] else EXIT_FAILED


RESULT_KEYS = frozenset({"scenarios", "seeds", "passed", "table", "runs"})
"""Keys every campaign result (``--out``) has, this tickwork's and earlier ones'."""


def is_campaign_result(path: str) -> bool:
    """Whether ``path`` is a campaign result (a JSON object with ``RESULT_KEYS``), which
    ``--out`` may replace; a recording, a journal or anything else is not."""
    from runtime.files import InputFileError, read_input
    from runtime.jsondata import JSONDataError, parse

    try:
        value = parse(read_input(path, limit=1 << 30, what="a campaign result"), max_depth=64)
    except (InputFileError, JSONDataError):
        return False
    return isinstance(value, dict) and value.keys() >= RESULT_KEYS


def _run(campaign: Campaign, total: int, *, quiet: bool) -> list[dict[str, Any]]:
    """``campaign.run()``, under a progress bar unless ``quiet``."""
    if quiet:
        return campaign.run()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(
        TextColumn("[bold]campaign"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        transient=True,
    ) as bar:
        task = bar.add_task("", total=total)
        campaign.progress = lambda r: bar.update(
            task, advance=1, description=f"{r['fault']} seed {r['seed']}"
        )
        results = campaign.run()
    return results


def scenario_worlds(names: list[str]) -> dict[str, Any]:
    """Each ``--scenario``: a shipped name, a file, or generated worlds (``gen:0-49``,
    ``hard:0-29``), loaded once here so that every worker gets the scenario itself."""
    from sim.world.families import family_worlds
    from sim.world.scenario import load_scenario

    worlds: dict[str, Any] = {}
    for name in names:
        drawn = family_worlds(name)
        if drawn is None:
            worlds[name] = load_scenario(name)
        else:
            worlds.update(drawn)
    return worlds


def _print_campaign(rows: list[dict[str, Any]], results: list[dict[str, Any]], ok: bool) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title="fault campaign", title_justify="left")
    table.add_column("fault", overflow="fold")
    table.add_column("declared reactions", overflow="fold")
    for name in ("seen in", "deliveries", "safety", "verdicts"):
        table.add_column(name)
    for row in rows:
        seen = f"{row['reactions_seen']} of {row['runs']}"
        if row["reactions_seen"] < row["runs"]:
            seen = f"[red]{seen}[/red]"
        unsafe = row["safety_violations"] + row["collisions"]
        safety = (
            "ok"
            if unsafe == 0
            else f"[red]{row['safety_violations']} violations, {row['collisions']} collisions[/red]"
        )
        if row["errors"]:
            safety += f" [red]({row['errors']} runs lost)[/red]"
        if row.get("not_started"):
            seen += f" [red](the fault never started in {row['not_started']})[/red]"
        table.add_row(
            Text(row["fault"]),
            Text("\n".join(row["expected"]) or "-"),
            seen,
            f"{row['delivered']} of {row['tasks']} ({row['deliveries_pct']:.0f}%)",
            safety,
            _verdicts_text(row.get("verdicts", {})),
        )
    console = Console()
    console.print(table)
    _print_runs(console, results)
    console.print(
        "[green]every declared reaction seen, no safety violation, every run delivered (or "
        "cut short by --ticks) with nothing failed[/green]"
        if ok
        else "[red]FAILED: a declared reaction was missed, a run's verdict failed (unsafe, "
        "tasks left undone, stalled, abandoned, a flat battery) or a run was lost[/red]",
        soft_wrap=True,
    )


_STATUS_STYLE = {"passed": "", "cut_short": "yellow", "failed": "red", "lost": "red"}


def _verdicts_text(counts: dict[str, int]) -> str:
    """``{"passed": 2, "failed": 1}`` as ``2 passed, [red]1 failed[/red]``."""
    parts = []
    for status in ("passed", "cut_short", "failed", "lost", "unknown"):
        n = counts.get(status, 0)
        if n:
            text = f"{n} {status.replace('_', ' ')}"
            style = _STATUS_STYLE.get(status, "")
            parts.append(f"[{style}]{text}[/{style}]" if style else text)
    return ", ".join(parts) or "-"


def _print_runs(console: Any, results: list[dict[str, Any]]) -> None:
    """One row per run that did not pass (its verdict failed, a reaction was missed, or it
    was lost), with its deliveries and its verdict; the runs that passed in one line."""
    from rich.table import Table
    from rich.text import Text

    from sim.run.campaign import verdict_status

    failed = [r for r in results if not r["passed"]]
    if failed:
        table = Table(title="runs that failed", title_justify="left")
        for name in ("scenario", "seed", "fault", "deliveries", "verdict"):
            table.add_column(name, overflow="fold")
        for r in failed:
            status = verdict_status(r)
            if status == "lost":
                line = f"lost: {r.get('error')}"
            elif isinstance(r.get("verdict"), dict):
                line = str(r["verdict"].get("line", status))
            else:
                line = status
            if status != "lost" and not r.get("reactions_ok", True):
                line += "; a declared reaction was missed"
            table.add_row(
                Text(str(r["scenario"])),
                str(r["seed"]),
                Text(str(r["fault"])),
                f"{r['deliveries_done']} of {r['tasks_total']}",
                Text(line, style=_STATUS_STYLE.get(status, "") or "red"),
            )
        console.print(table)
    passed = [r for r in results if r["passed"]]
    if passed:
        cut = sum(verdict_status(r) == "cut_short" for r in passed)
        console.print(
            f"{len(passed)} run(s) passed: {len(passed) - cut} safe and delivered"
            + (f", {cut} cut short by --ticks with nothing failed" if cut else ""),
            highlight=False,
            soft_wrap=True,
        )
