"""Moved to :mod:`reactgraph.answer.grounding`; this import path keeps working for a while."""

import sys
import warnings

from reactgraph.answer import grounding as _moved

warnings.warn("reactgraph.grounding moved to reactgraph.answer.grounding", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
