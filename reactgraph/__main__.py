"""``python -m reactgraph`` runs the command line (see :mod:`reactgraph.cli`)."""

import sys

from reactgraph.cli import main

sys.exit(main())
