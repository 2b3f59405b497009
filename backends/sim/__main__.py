"""`python -m backends.sim`: the same as `gateway sim`."""

import sys

from backends.sim.cli import main

sys.exit(main())
