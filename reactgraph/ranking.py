"""Moved to :mod:`reactgraph.tools.ranking`; this import path keeps working for a while."""

import sys
import warnings

from reactgraph.tools import ranking as _moved

warnings.warn("reactgraph.ranking moved to reactgraph.tools.ranking", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
