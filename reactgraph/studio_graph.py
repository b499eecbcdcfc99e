"""Moved to :mod:`reactgraph.demo.studio`; this import path keeps working for a while."""

import sys
import warnings

from reactgraph.demo import studio as _moved

warnings.warn("reactgraph.studio_graph moved to reactgraph.demo.studio", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
