"""Moved to :mod:`reactgraph.core.redaction`; this import path keeps working for a while."""

import sys
import warnings

from reactgraph.core import redaction as _moved

warnings.warn("reactgraph.redaction moved to reactgraph.core.redaction", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
