"""Moved to :mod:`reactgraph.tools.hooks`; this import path keeps working for a while."""

import sys
import warnings

from reactgraph.tools import hooks as _moved

warnings.warn("reactgraph.hooks moved to reactgraph.tools.hooks", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
