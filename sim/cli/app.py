"""The command line's entry point: the parser of every command, and ``main``.

Each command group is a module with ``register(subparsers)``, which adds its
commands with their handlers; ``main`` runs the chosen handler and turns any
``TickworkError`` into one ``error:`` line and exit status 2, here and nowhere else.
Command modules import what they need inside their handlers, so ``--help`` stays
instant.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from runtime.errors import TickworkError
from sim.cli import analysis, campaign, generate, recording, report, run, specs
from sim.cli.exits import EXIT_OK, EXIT_USAGE

COMMAND_GROUPS = (run, campaign, generate, specs, recording, analysis, report)
"""The modules that add commands, in the order ``--help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sim",
        description="tickwork's headless warehouse simulator.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in COMMAND_GROUPS:
        group.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except TickworkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. piped into `head`: the reader left, nothing to report
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    return code
