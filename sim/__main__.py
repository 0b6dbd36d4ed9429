"""``python -m sim``: the simulator's command line."""

import sys

from sim.cli.app import main

sys.exit(main())
