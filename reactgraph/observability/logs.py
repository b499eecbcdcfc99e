"""Structured log lines: one per HTTP request and one per run end, with the
thread id, run id, finish reason, model calls, tokens and seconds, and the trace and span
ids when tracing is on, so a log line leads to its trace.

Lines go through the standard :mod:`logging` loggers ``reactgraph.runs`` and
``reactgraph.requests`` at ``INFO``. As text they read ``run_end thread_id=… run_id=… …``;
:class:`JsonFormatter` (``reactgraph serve --log-format json``) writes each record as one
JSON object per line with the same fields as members.

No value makes a line of its own or reaches a terminal as a control sequence, whatever a
request sent (a thread id, a path): in text, a value with a space, a quote, ``=``, a
backslash or a control character is written quoted with its control characters escaped
(``path="x\n{…}\x1b[31m"``), and every other record's message has its control characters
escaped (:class:`TextFormatter`); in JSON they are escaped as JSON escapes them, DEL, the C1
controls and U+2028/U+2029 included.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from collections.abc import Mapping
from typing import Any, Literal

RUN_LOGGER = logging.getLogger("reactgraph.runs")
"""The logger of the ``run_end`` lines."""

REQUEST_LOGGER = logging.getLogger("reactgraph.requests")
"""The logger of the ``request`` lines (the server's)."""

SERVE_LOGGER = logging.getLogger("reactgraph.serve")
"""What ``reactgraph serve --log-format json`` would otherwise print as text: its start-up
lines (model, page, workers, MCP servers) at ``INFO`` and its errors at ``ERROR``."""

UVICORN_ACCESS = "uvicorn.access"
"""uvicorn's access logger: its records' arguments are ``(client, method, path, http
version, status)``."""

_FIELDS = "reactgraph_fields"
"""The attribute of a log record holding its structured fields."""

LogFormat = Literal["text", "json"]

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""What no log line carries raw: the C0 controls (newlines, ESC), DEL, the C1 controls
(``\\x9b`` opens an ANSI sequence too) and the Unicode line and paragraph separators."""

_QUOTED = re.compile('[\\s"=\\\\\x00-\x1f\x7f-\x9f\u2028\u2029]')
"""What makes a text value quoted: what would blur where it ends, or a control character."""

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape_controls(text: str) -> str:
    """``text`` with each control character (:data:`_CONTROL`) written as its escape
    (``\\n``, ``\\r``, ``\\t``, ``\\x1b``, ``\\u2028``): one line, no terminal control
    sequence. Other text, non-ASCII letters included, is kept."""
    return _CONTROL.sub(lambda found: _NAMED.get(found.group()) or (
        f"\\x{ord(found.group()):02x}" if ord(found.group()) < 0x100 else f"\\u{ord(found.group()):04x}"), text)


def text_value(value: Any) -> str:
    """A field's value in a text line: as it is when it is one plain word, else in double
    quotes, with ``"`` and ``\\`` escaped by a backslash and control characters escaped
    (:func:`escape_controls`), so a value cannot end its field early, forge another field
    or start a line of its own."""
    text = value if isinstance(value, str) else str(value)
    if text and not _QUOTED.search(text):
        return text
    return '"' + escape_controls(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'


def log_fields(logger: logging.Logger, event: str, fields: Mapping[str, Any]) -> None:
    """Log one structured line at ``INFO``: ``event`` then ``key=value`` for each field that
    is not ``None``; a :class:`JsonFormatter` writes the fields as members. Nothing is
    formatted when the logger does not take ``INFO``.

    Args:
        logger: :data:`RUN_LOGGER`, :data:`REQUEST_LOGGER` or another.
        event: The line's kind (``run_end``, ``request``).
        fields: Its values (strings, numbers, ``None``).
    """
    if not logger.isEnabledFor(logging.INFO):
        return
    kept = {key: value for key, value in fields.items() if value is not None}
    text = " ".join(f"{key}={text_value(value)}" for key, value in kept.items())
    logger.info("%s %s", event, text, extra={_FIELDS: {"event": event, **kept}})


class JsonFormatter(logging.Formatter):
    """Each record as one line of JSON: ``ts`` (ISO 8601, UTC), ``level``, ``logger``, ``pid``
    (the process: which worker of ``serve --workers``), then
    the structured fields of :func:`log_fields` (``event``, ``thread_id``, ``run_id``, …) or,
    for any other record, ``message``; ``exception`` with the traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one JSON line."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"
        line: dict[str, Any] = {"ts": stamp, "level": record.levelname.lower(), "logger": record.name,
                                "pid": record.process}
        fields = getattr(record, _FIELDS, None)
        if fields is not None:
            line.update(fields)
        else:
            line["message"] = record.getMessage()
            if record.name == UVICORN_ACCESS and isinstance(record.args, tuple) and len(record.args) == 5:
                client, method, path, version, status = record.args
                line.update({"event": "access", "client": client, "method": method, "path": path,
                             "http_version": version, "status": status})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return escape_controls(json.dumps(line, ensure_ascii=False, default=str))  # what JSON leaves raw: DEL, C1, U+2028/9


class TextFormatter(logging.Formatter):
    """``logging.Formatter`` whose message part is one line with no control sequence
    (:func:`escape_controls`): a message that quotes a request's value (an exception's
    text, a path) cannot start a line of its own or color the terminal. A traceback
    still follows on its own lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        """The format filled with the record's escaped message."""
        record.message = escape_controls(record.message)
        return super().formatMessage(record)


def text_formatter() -> TextFormatter:
    """The formatter of the text lines :func:`configure_logging` writes (``reactgraph.requests: request …``)."""
    return TextFormatter("%(name)s: %(message)s")


def configure_logging(log_format: LogFormat = "text", level: int = logging.INFO) -> None:
    """Send the ``reactgraph.runs`` and ``reactgraph.requests`` lines to stderr, as text or
    JSON lines (what ``reactgraph serve --log-format`` does). Other ``reactgraph`` loggers
    keep their level. In ``text`` the root logger's handlers escape their messages too
    (:class:`TextFormatter`, their format kept). In ``json`` every record of the handler is JSON, and so is every
    record that reaches the root logger (its handlers get :class:`JsonFormatter`, a stderr
    one is added when it has none; Python's warnings are logged), and
    :data:`SERVE_LOGGER`'s lines go the same way.

    Args:
        log_format: ``text`` or ``json``.
        level: The level of the two loggers.

    Raises:
        ValueError: An unknown format.
    """
    if log_format not in ("text", "json"):
        raise ValueError(f"log format must be text or json, got {log_format!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else text_formatter())
    loggers = [RUN_LOGGER, REQUEST_LOGGER]
    if log_format == "json":
        root = logging.getLogger()
        if not root.handlers:
            root.addHandler(logging.StreamHandler(sys.stderr))
        for other in root.handlers:
            other.setFormatter(JsonFormatter())
        logging.captureWarnings(True)
        loggers.append(SERVE_LOGGER)
    else:  # the root's lines (``reactgraph: …`` warnings and errors) get their messages escaped too
        for other in logging.getLogger().handlers:
            if not isinstance(other.formatter, TextFormatter):
                other.setFormatter(TextFormatter(other.formatter._fmt if other.formatter else None))
    for logger in loggers:
        for old in [old for old in logger.handlers if getattr(old, "_reactgraph", False)]:
            logger.removeHandler(old)
        handler._reactgraph = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = False


def uvicorn_log_config(log_format: LogFormat = "text") -> dict[str, Any]:
    """uvicorn's ``log_config`` for ``reactgraph serve --log-format``: uvicorn's own for
    ``text``; for ``json`` its start-up, error and access lines as :class:`JsonFormatter`
    lines (errors on stderr, access lines on stdout, as uvicorn puts them), loggers of
    other libraries left as they are.

    Raises:
        ValueError: An unknown format.
    """
    if log_format not in ("text", "json"):
        raise ValueError(f"log format must be text or json, got {log_format!r}")
    if log_format == "text":
        from uvicorn.config import LOGGING_CONFIG

        return LOGGING_CONFIG
    json_formatter = {"()": f"{JsonFormatter.__module__}.{JsonFormatter.__qualname__}"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": json_formatter},
        "handlers": {
            "default": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"},
            "access": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stdout"},
        },
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": "INFO", "propagate": False},
            "uvicorn.error": {"level": "INFO"},
            UVICORN_ACCESS: {"handlers": ["access"], "level": "INFO", "propagate": False},
        },
    }


class LogConsole:
    """Stands in for the terminal's ``rich`` console under ``serve --log-format json``: each
    line given to :meth:`print` becomes an ``INFO`` record of :data:`SERVE_LOGGER` (its markup
    taken out), so it is written as JSON like every other line."""

    def print(self, *objects: Any, **_: Any) -> None:
        """Log what ``rich.console.Console.print`` would have printed, line by line."""
        from rich.text import Text

        text = " ".join(Text.from_markup(item).plain if isinstance(item, str) else str(item) for item in objects)
        for line in text.splitlines():
            if line.strip():
                SERVE_LOGGER.info(line)
