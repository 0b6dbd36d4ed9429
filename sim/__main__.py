"""``python -m sim``: the simulator's command line."""

import sys

from sim.cli import main

sys.exit(main())
