"""Moved to :mod:`reactgraph.protocol.action_schema`; this import path keeps working for a while."""

import sys
import warnings

from reactgraph.protocol import action_schema as _moved

warnings.warn("reactgraph.action_schema moved to reactgraph.protocol.action_schema", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
