"""Moved to :mod:`reactgraph.policy.safeguards`; this import path keeps working for a while."""

import sys
import warnings

from reactgraph.policy import safeguards as _moved

warnings.warn("reactgraph.safeguards moved to reactgraph.policy.safeguards", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
