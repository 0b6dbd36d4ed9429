"""The ``generate`` command of ``python -m sim``: a valid random warehouse as a scenario
file, from a seed (``sim.world.generate``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sim.cli.args import positive_float
from sim.cli.exits import EXIT_OK, InputError

GENERATE_EPILOG = """\
examples:
  python -m sim generate --seed 7 -o gen7.toml
  python -m sim generate --seed 1 --size 60x40 --aisle-width 1.85 --people 3 -o tight.toml
  python -m sim run --scenario gen7.toml
  python -m sim campaign --scenario gen:0-49 --faults auto    generated worlds, no files
Same seed and settings, same file. exit status: 0 written, 2 bad input
"""


def size(text: str) -> tuple[float, float]:
    """``WxH`` in metres, e.g. ``60x40``."""
    width, sep, height = text.lower().partition("x")
    try:
        if not sep:
            raise ValueError
        return (positive_float(width), positive_float(height))
    except (ValueError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(
            f"expected WxH in metres, e.g. 60x40, got {text!r}"
        ) from None


def count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return value


def register(sub: Any) -> None:
    """Add the ``generate`` command to the ``python -m sim`` parser."""
    gen = sub.add_parser(
        "generate",
        help="write a valid random warehouse scenario from a seed",
        epilog=GENERATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    gen.add_argument("--seed", type=count, required=True, metavar="N", help="the seed")
    gen.add_argument("--size", type=size, metavar="WxH", help="floor size in metres (drawn)")
    gen.add_argument(
        "--aisle-width",
        type=positive_float,
        metavar="M",
        help="aisle width between shelf rows in metres (drawn from just above the "
        "robot's minimum to 4 m)",
    )
    gen.add_argument("--orientation", choices=["x", "y"], help="shelf rows along x or y (drawn)")
    gen.add_argument("--people", type=count, metavar="K", help="people on loops (drawn: 0-3)")
    gen.add_argument("--forklifts", type=count, metavar="F", help="forklifts (drawn: 0-1)")
    gen.add_argument("--tasks", type=count, metavar="T", help="deliveries (drawn: 2-6)")
    gen.add_argument("--docks", type=count, metavar="D", help="docks (drawn: 3-6)")
    gen.add_argument(
        "-o", "--out", metavar="FILE.toml", help="write here (default: standard output)"
    )
    gen.set_defaults(handler=cmd_generate)


def cmd_generate(args: argparse.Namespace) -> int:
    from runtime.files import atomic_output
    from sim.report.html import ReportError, check_output
    from sim.world.generate import GeneratorSettings, generate, to_toml

    if args.out is not None:
        try:
            check_output(args.out)
        except ReportError as exc:
            raise InputError(f"-o {exc}") from None
    settings = GeneratorSettings(
        size=args.size,
        aisle_width=args.aisle_width,
        orientation=args.orientation,
        people=args.people,
        forklifts=args.forklifts,
        tasks=args.tasks,
        docks=args.docks,
    )
    scenario = generate(args.seed, settings)
    text = to_toml(scenario)
    if args.out is None:
        sys.stdout.write(text)
    else:
        with atomic_output(args.out) as fh:
            fh.write(text.encode("utf-8"))
        print(f"wrote {args.out}: {scenario.description}", file=sys.stderr)
    return EXIT_OK
