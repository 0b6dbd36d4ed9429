"""The simulator's command line, ``python -m sim``: one module per command group.

``app`` builds the parser and runs a command; ``run``, ``campaign``, ``specs``
(scenarios and check-spec), ``recording`` (inspect, diff, repair), ``analysis``
(doctor, replay) and ``report`` each add their commands; ``exits``, ``args``,
``inputs`` and ``tables`` are what they share.
"""

from sim.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
