"""``python -m reactgraph`` runs the command line (see :mod:`reactgraph.cli.main`)."""

import sys

from reactgraph.cli.main import main

sys.exit(main())
