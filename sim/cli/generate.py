"""The ``generate`` command of ``python -m sim``: a valid random warehouse as a scenario
file, from a seed, of the ``gen`` family (``sim.world.generate``) or, with ``--family
hard``, of the ``hard`` family (``sim.world.hard``); each family takes its own settings."""

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
  python -m sim generate --family hard --seed 3 -o hard3.toml      what hard:3 names
  python -m sim generate --family hard --seed 3 --layout bays --battery tight --tasks 2
  python -m sim campaign --scenario gen:0-49 --faults auto    generated worlds, no files
Same family, seed and settings, same file. exit status: 0 written, 2 bad input
"""

_GEN_ONLY = ("size", "aisle_width", "orientation", "people", "forklifts", "docks")
_HARD_ONLY = ("layout", "movers", "battery", "max_floor")
_SETTINGS = {"gen": _GEN_ONLY, "hard": _HARD_ONLY}


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
    gen.add_argument(
        "--family",
        choices=["gen", "hard"],
        default="gen",
        help="gen (default): small regular warehouses, what gen:N names; hard: dead-end "
        "bays, single-lane corridors, turned and fishbone rows, large floors, tight "
        "batteries and 5+ movers, what hard:N names",
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
    gen.add_argument("--tasks", type=count, metavar="T", help="deliveries (drawn: 2-6; hard: 4-8)")
    gen.add_argument("--docks", type=count, metavar="D", help="docks (drawn: 3-6)")
    hard = gen.add_argument_group("the hard family's settings (with --family hard)")
    hard.add_argument(
        "--layout",
        choices=["bays", "corridors", "fishbone", "rotated", "large"],
        help="the layout (default: the seed's, seed mod 5 in this order)",
    )
    hard.add_argument("--movers", type=count, metavar="M", help="people and forklifts (drawn: 5-8)")
    hard.add_argument(
        "--battery",
        choices=["tight", "ample"],
        help="tight: some delivery needs a charge between its pick-up and its drop; "
        "ample: a full charge covers any one (drawn: half each)",
    )
    hard.add_argument(
        "--max-floor",
        type=size,
        metavar="WxH",
        help="the largest floor drawn, from 40x30 to 120x80 (the default) m",
    )
    gen.add_argument(
        "-o", "--out", metavar="FILE.toml", help="write here (default: standard output)"
    )
    gen.set_defaults(handler=cmd_generate)


def cmd_generate(args: argparse.Namespace) -> int:
    from runtime.files import atomic_output
    from sim.report.html import ReportError, check_output
    from sim.world.generate import to_toml

    if args.out is not None:
        try:
            check_output(args.out)
        except ReportError as exc:
            raise InputError(f"-o {exc}") from None
    scenario = _draw_hard(args) if args.family == "hard" else _draw_gen(args)
    text = to_toml(scenario)
    if args.out is None:
        sys.stdout.write(text)
    else:
        with atomic_output(args.out) as fh:
            fh.write(text.encode("utf-8"))
        print(f"wrote {args.out}: {scenario.description}", file=sys.stderr)
    return EXIT_OK


def _refuse(args: argparse.Namespace, names: tuple[str, ...], family: str) -> None:
    """Settings of the other family are refused, all named in one error."""
    given = [_flag(n) for n in names if getattr(args, n) is not None]
    if given:
        other = "hard" if family == "gen" else "gen"
        theirs = ", ".join(_flag(n) for n in ("tasks", *(n for n in _SETTINGS[family])))
        raise InputError(
            f"{', '.join(given)}: only --family {other} takes {'it' if len(given) == 1 else 'them'}"
            f"; --family {family} takes {theirs}"
        )


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _draw_gen(args: argparse.Namespace) -> Any:
    from sim.world.generate import GeneratorSettings, generate

    _refuse(args, _HARD_ONLY, "gen")
    settings = GeneratorSettings(
        size=args.size,
        aisle_width=args.aisle_width,
        orientation=args.orientation,
        people=args.people,
        forklifts=args.forklifts,
        tasks=args.tasks,
        docks=args.docks,
    )
    return generate(args.seed, settings)


def _draw_hard(args: argparse.Namespace) -> Any:
    from sim.world.hard import HardSettings, generate_hard

    _refuse(args, _GEN_ONLY, "hard")
    extra = {} if args.max_floor is None else {"max_floor": args.max_floor}
    settings = HardSettings(
        layout=args.layout,
        tasks=args.tasks,
        movers=args.movers,
        tight_battery=None if args.battery is None else args.battery == "tight",
        **extra,
    )
    return generate_hard(args.seed, settings)
