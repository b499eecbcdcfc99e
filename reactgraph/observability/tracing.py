"""OpenTelemetry set-up for reactgraph's spans (issue 40): the GenAI semantic-convention
attribute names the spans use, whether content is recorded, and a tracer provider made the
standard way from the ``OTEL_*`` environment variables.

Needs the ``[otel]`` extra (``opentelemetry-api``, ``opentelemetry-sdk``,
``opentelemetry-exporter-otlp-proto-http``).
"""

from __future__ import annotations

import os
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


def configure_otel(service_name: str = "reactgraph") -> Any:
    """Make OpenTelemetry's global tracer provider the standard way, unless the process
    has one already: an SDK ``TracerProvider`` whose resource reads ``OTEL_SERVICE_NAME``
    and ``OTEL_RESOURCE_ATTRIBUTES`` (``service_name`` when neither names the service),
    exporting in batches over OTLP/HTTP (protobuf) to ``OTEL_EXPORTER_OTLP_ENDPOINT`` /
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (default ``http://localhost:4318``), with the
    headers, timeout and compression the ``OTEL_EXPORTER_OTLP_*`` variables give.
    ``OTEL_SDK_DISABLED=true`` makes nothing. What ``reactgraph serve --otel`` calls.

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
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider
