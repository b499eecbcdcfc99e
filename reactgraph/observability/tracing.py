"""OpenTelemetry set-up for reactgraph's spans: the GenAI semantic-convention
attribute names the spans use, whether content is recorded, and a tracer provider made the
standard way from the ``OTEL_*`` environment variables.

Needs the ``[otel]`` extra (``opentelemetry-api``, ``opentelemetry-sdk``,
``opentelemetry-exporter-otlp-proto-http``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The environment variable OpenTelemetry's GenAI instrumentations read to record message
content; ``true`` turns it on for reactgraph's spans as well (off by default)."""

# GenAI semantic conventions (open-telemetry/semantic-conventions, docs/gen-ai): the names
# of the spans' attributes.
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
ERROR_TYPE = "error.type"


def capture_content_default() -> bool:
    """Whether spans record content when :func:`~reactgraph.observability.instrument` is
    not told: ``$OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is ``true``."""
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"


OTEL_LOGGER = logging.getLogger("reactgraph.otel")
"""Where the one-line export warnings go (:class:`ReportingExporter`)."""

EXPORTER_LOGGERS = ("opentelemetry.exporter.otlp.proto.http.trace_exporter",
                    "opentelemetry.exporter.otlp.proto.http._common", "opentelemetry.sdk.trace.export")
"""The OpenTelemetry loggers that say, on every export, that a batch could not be sent
(a line per retry and per batch): :func:`configure_otel` quiets their warnings and errors,
the :class:`ReportingExporter` says it once a minute instead."""

WARN_INTERVAL = 60.0
"""Seconds between two warnings that spans could not be sent."""


def spans_endpoint() -> str:
    """Where OTLP/HTTP spans go, as the ``OTEL_*`` variables say:
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` as it is, else ``OTEL_EXPORTER_OTLP_ENDPOINT``
    plus ``/v1/traces``, else ``http://localhost:4318/v1/traces``."""
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or "http://localhost:4318"
    return base.rstrip("/") + "/v1/traces"


class _Quiet(logging.Filter):
    """Drops the exporter loggers' per-export warnings and errors (:data:`EXPORTER_LOGGERS`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.WARNING


class ReportingExporter:
    """A span exporter around another that says, in one warning line at most every
    ``interval`` seconds, that spans could not be sent and where they were going (a receiver
    that is not running would otherwise get a line per batch and per retry).

    Args:
        inner: The exporter (OpenTelemetry's ``SpanExporter`` interface).
        destination: Where it sends, for the message.
        interval: Seconds between two warnings (:data:`WARN_INTERVAL`).
        clock: Monotonic seconds (tests give their own).
    """

    def __init__(self, inner: Any, destination: str, interval: float = WARN_INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self.destination = destination
        self.interval = interval
        self.clock = clock
        self.failed = 0  # batches not sent since the last warning
        self._warned: float | None = None
        self._lock = threading.Lock()

    def export(self, spans: Sequence[Any]) -> Any:
        """Export through the inner exporter; a failure (or an exception) counts and may warn."""
        from opentelemetry.sdk.trace.export import SpanExportResult

        try:
            result = self.inner.export(spans)
        except Exception as exc:  # the batch processor would log it on every batch
            result, reason = SpanExportResult.FAILURE, f"{type(exc).__name__}: {exc}"
        else:
            reason = ""
        if result != SpanExportResult.SUCCESS:
            self._failed(len(spans), reason)
        return result

    def _failed(self, count: int, reason: str) -> None:
        with self._lock:
            self.failed += count
            now = self.clock()
            if self._warned is not None and now - self._warned < self.interval:
                return
            self._warned, dropped, self.failed = now, self.failed, 0
        OTEL_LOGGER.warning("traces: %d span(s) could not be sent to %s (is an OTLP receiver running there?%s); "
                            "this is said at most once every %g s", dropped, self.destination,
                            f" {reason}" if reason else "", self.interval)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def describe_tracing(provider: Any) -> str:
    """Where ``serve --otel``'s spans go, for its start-up line: the OTLP/HTTP endpoint
    (:func:`spans_endpoint`), or why none is used."""
    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return "traces: off (OTEL_SDK_DISABLED=true)"
    if getattr(provider, "_reactgraph_endpoint", None):
        return f"traces: OpenTelemetry spans go to {provider._reactgraph_endpoint} (OTLP/HTTP)"
    return "traces: OpenTelemetry spans go to the tracer provider this process had already set"


def configure_otel(service_name: str = "reactgraph") -> Any:
    """Make OpenTelemetry's global tracer provider the standard way, unless the process
    has one already: an SDK ``TracerProvider`` whose resource reads ``OTEL_SERVICE_NAME``
    and ``OTEL_RESOURCE_ATTRIBUTES`` (``service_name`` when neither names the service),
    exporting in batches over OTLP/HTTP (protobuf) to ``OTEL_EXPORTER_OTLP_ENDPOINT`` /
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (default ``http://localhost:4318``), with the
    headers, timeout and compression the ``OTEL_EXPORTER_OTLP_*`` variables give.
    ``OTEL_SDK_DISABLED=true`` makes nothing. What ``reactgraph serve --otel`` calls. When the
    spans cannot be sent (no receiver), one warning line says so at most once a minute
    (:class:`ReportingExporter`); the exporter's own line per batch and retry is quieted.

    Args:
        service_name: ``service.name`` when the environment gives none.

    Returns:
        The global tracer provider (the one made, or the one already set).

    Raises:
        ImportError: The ``[otel]`` extra is not installed.
    """
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider) or os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return current
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()  # reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": service_name}))
    provider = TracerProvider(resource=resource)
    endpoint = spans_endpoint()
    provider.add_span_processor(BatchSpanProcessor(ReportingExporter(OTLPSpanExporter(), endpoint)))  # type: ignore[arg-type]
    provider._reactgraph_endpoint = endpoint  # type: ignore[attr-defined]  # what describe_tracing says
    for name in EXPORTER_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(existing, _Quiet) for existing in logger.filters):
            logger.addFilter(_Quiet())
    if OTEL_LOGGER.level == logging.NOTSET:
        OTEL_LOGGER.setLevel(logging.WARNING)  # heard under the command's ERROR-level root logger
    trace.set_tracer_provider(provider)
    return provider
