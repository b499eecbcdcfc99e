"""Moved to :mod:`reactgraph.core.bounds`; this import path keeps working for a while."""

import sys
import warnings

from reactgraph.core import bounds as _moved

warnings.warn("reactgraph.bounds moved to reactgraph.core.bounds", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
