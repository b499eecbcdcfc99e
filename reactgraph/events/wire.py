"""The wire format of the events (SPEC §8): JSON that no line-splitting client breaks
(:func:`wire_safe`, :func:`wire_json`) and :data:`OMIT`, the default of a field a payload
leaves out."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from reactgraph.protocol.jsonparse import safe_json

_LINE_BREAKING = re.compile("[\u0085\u2028\u2029\ud800-\udfff]")
"""Characters JSON may leave raw that break a wire: U+0085, U+2028 and U+2029 end a line
for line-splitting clients (Python's ``str.splitlines``, httpx ``iter_lines``), and lone
surrogates cannot be encoded as UTF-8 at all."""


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float (nested in dicts and lists) made ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def wire_safe(json_text: str) -> str:
    """JSON text with every U+0085, U+2028, U+2029 and lone surrogate written as a
    ``\\uXXXX`` escape: the one escaping rule of every event encoder (this module's SSE
    frames, the AG-UI endpoint's). These characters can only stand inside JSON
    strings, where the escape reads back as the same string; the result is one line for
    every line-splitting client and always encodes as UTF-8.

    Args:
        json_text: JSON text, as any encoder wrote it.

    Returns:
        The same JSON value, safe on any wire.
    """
    return _LINE_BREAKING.sub(lambda match: f"\\u{ord(match.group()):04x}", json_text)


def wire_json(value: Any) -> str:
    """``value`` as one line of standard JSON that is safe on any wire (SSE ``data:``
    lines, HTTP error bodies), whatever strings a tool or model produced.

    Non-ASCII text is kept as is, except U+0085, U+2028, U+2029 and lone surrogates,
    which are written as ``\\uXXXX`` escapes (a JSON parser reads back the same string;
    the UTF-8 encoding of the result never fails). NaN and infinities become ``null``;
    objects JSON cannot encode go through ``str``. Never raises.

    Args:
        value: Any JSON-like value.

    Returns:
        The JSON text, without line breaks.
    """
    dumps = {"ensure_ascii": False, "allow_nan": False, "default": str}
    try:
        text = json.dumps(value, **dumps)
    except (ValueError, TypeError, RecursionError, OverflowError):
        try:
            text = json.dumps(_finite(value), **dumps)
        except (ValueError, TypeError, RecursionError, OverflowError):
            text = json.dumps(safe_json(value), **dumps)
    return wire_safe(text)


class _Omitted:
    """The type of :data:`OMIT`."""

    _instance: _Omitted | None = None

    def __new__(cls) -> _Omitted:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "OMIT"

    def __bool__(self) -> bool:
        return False


OMIT: Any = _Omitted()
"""The default of an event field that a payload leaves out when it is not given (e.g.
``Done.limit`` of a run no limit stopped, ``DagStepCompleted.result`` of a step that never
ran): the wire form has no such member at all, which is not the same as ``null``."""
