"""Moved to :mod:`reactgraph.tools.approval`; this import path keeps working for a while."""

import sys
import warnings

from reactgraph.tools import approval as _moved

warnings.warn("reactgraph.approval moved to reactgraph.tools.approval", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
