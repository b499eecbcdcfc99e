"""Moved to :mod:`reactgraph.persistence.checkpointing`; this import path keeps working for a while."""

import sys
import warnings

from reactgraph.persistence import checkpointing as _moved

warnings.warn("reactgraph.checkpointing moved to reactgraph.persistence.checkpointing", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
