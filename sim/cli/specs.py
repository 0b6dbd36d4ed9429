"""The ``scenarios`` and ``check-spec`` commands of ``python -m sim``: what ships, and
whether a cabin spec says what its author means."""

from __future__ import annotations

import argparse
from typing import Any

from sim.cli.args import positive_int
from sim.cli.exits import EXIT_OK, EXIT_USAGE
from sim.cli.tables import counts_text


def register(sub: Any) -> None:
    """Add the ``scenarios`` and ``check-spec`` commands to the ``python -m sim`` parser."""
    scenarios = sub.add_parser(
        "scenarios",
        help="list the shipped scenarios",
        epilog="exit status: 0 listed",
    )
    scenarios.add_argument("--json", action="store_true")
    scenarios.set_defaults(handler=cmd_scenarios)

    names = sub.add_parser(
        "names",
        help="the board keys and event kinds the simulator and built-in cabins write",
        epilog="exit status: 0 listed",
    )
    names.add_argument("--json", action="store_true")
    names.add_argument(
        "--markdown", action="store_true", help="the reference tables as Markdown, for docs"
    )
    names.set_defaults(handler=cmd_names)

    check = sub.add_parser(
        "check-spec",
        help="validate cabin specs and show what each receives",
        epilog="examples:\n"
        "  python -m sim check-spec specs/\n"
        "  python -m sim check-spec people_watch.toml --scenario narrow_aisles --strict\n"
        "exit status: 0 every spec loads (warnings aside), 2 a spec does not load, or has\n"
        "  a registry finding under --strict, or bad input",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("files", nargs="+", metavar="FILE", help="spec TOML files or folders")
    check.add_argument(
        "--scenario",
        default="warehouse",
        metavar="NAME|PATH",
        help="show what each spec would receive in this scenario (default: warehouse)",
    )
    check.add_argument(
        "--capacity",
        type=positive_int,
        default=64,
        metavar="N",
        help="the working-memory capacity the specs share: each spec's worst-case demand on "
        "the scenario, and theirs together, is checked against it (default: 64)",
    )
    check.add_argument(
        "--strict",
        action="store_true",
        help="a board key, event kind or map kind nothing writes, or a weight or required "
        "pattern that selects nothing, is an error (exit 2), not a warning",
    )
    check.add_argument("--json", action="store_true")
    check.set_defaults(handler=cmd_check_spec)


# -- scenarios ---------------------------------------------------------------------------------


def cmd_scenarios(args: argparse.Namespace) -> int:
    from sim.world.scenario import list_scenarios

    rows = list_scenarios()
    if args.json:
        import json

        print(json.dumps([{"name": n, "description": d} for n, d in rows]))
        return EXIT_OK
    from rich.console import Console
    from rich.table import Table

    table = Table(
        "name",
        "description",
        title_justify="left",
        title="shipped scenarios (python -m sim run --scenario NAME)",
    )
    for name, description in rows:
        table.add_row(name, description)
    Console().print(table)
    return EXIT_OK


# -- names -------------------------------------------------------------------------------------


def cmd_names(args: argparse.Namespace) -> int:
    """Print the registry (``cabins.warehouse.registry``): one table of board keys, one of
    event kinds."""
    from cabins.warehouse.registry import WAREHOUSE

    board = [("key", "type", "unit", "writer", "description")] + [
        (e.key, e.type, e.unit, e.writer, e.description) for e in WAREHOUSE.board
    ]
    events = [("kind", "data fields", "writer", "description")] + [
        (e.kind, ", ".join(e.fields), e.writer, e.description) for e in WAREHOUSE.events
    ]
    if args.json:
        import json

        print(
            json.dumps(
                {
                    "board": [dict(zip(board[0], row, strict=True)) for row in board[1:]],
                    "events": [dict(zip(events[0], row, strict=True)) for row in events[1:]],
                    "map_kinds": list(WAREHOUSE.map_kinds),
                }
            )
        )
        return EXIT_OK
    if args.markdown:
        for rows in (board, events):
            print("| " + " | ".join(rows[0]) + " |")
            print("|" + "---|" * len(rows[0]))
            for row in rows[1:]:
                print("| " + " | ".join((f"`{row[0]}`", *row[1:])) + " |")
            print()
        return EXIT_OK
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for title, rows in (("board keys", board), ("event kinds", events)):
        table = Table(*rows[0], title=title, title_justify="left")
        for row in rows[1:]:
            table.add_row(*row)
        console.print(table)
    return EXIT_OK


# -- check-spec --------------------------------------------------------------------------------


def cmd_check_spec(args: argparse.Namespace) -> int:
    from runtime import configure_logging
    from sim.analysis.speccheck import check_specs

    configure_logging(level="error")
    reports = check_specs(
        args.files, scenario=args.scenario, capacity=args.capacity, strict=args.strict
    )
    if args.json:
        import json

        print(json.dumps(reports, sort_keys=True))
    else:
        _print_spec_reports(reports)
    return EXIT_USAGE if any(r["errors"] for r in reports) else EXIT_OK


def _print_spec_reports(reports: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    for report in reports:
        if report["errors"]:
            for line in report["errors"]:
                console.print(f"[red]error[/red] {escape(line)}", highlight=False)
            continue
        spec = report["spec"]
        table = Table(
            show_header=False,
            title=f"{report['path']}: cabin {spec['name']!r}",
            title_justify="left",
        )
        table.add_column(style="bold")
        table.add_column()
        for label, value in report["reads"].items():
            table.add_row(label, escape(value))
        receives = report.get("receives")
        if receives is not None:
            table.add_row(
                f"receives in {receives['scenario']}", ", ".join(receives["items"]) or "nothing"
            )
            table.add_row(
                "missing there",
                counts_text(receives["missing"]) if receives["missing"] else "nothing",
            )
            if receives.get("evicted"):
                table.add_row("lost to capacity there", ", ".join(receives["evicted"]))
        demand = report.get("demand")
        if demand is not None:
            memory = report["memory"]
            table.add_row(
                "worst-case demand",
                f"{demand['total']} items at once (board {demand['board']}, map window "
                f"{demand['map_window']}, corridor {demand['corridor']}, events "
                f"{demand['events']}); with {', '.join(memory['specs'])}: {memory['total']} "
                f"of capacity {memory['capacity']}",
            )
        console.print(table)
        for line in report["warnings"]:
            console.print(f"[yellow]warning[/yellow] {escape(line)}", highlight=False)
