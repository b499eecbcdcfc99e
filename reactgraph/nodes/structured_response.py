"""``structured_response``: the run's answer as a validated object.

Added to the graph when ``create_react_graph`` is given ``response_format``, after
synthesis: one :func:`~reactgraph.structured_llm_call` on the conversation (whose last
message is the loop's final answer) with the caller's schema. The three levels of SPEC §4
make it work on any model — forced function call, JSON mode (with the schema when the
provider takes one), plain text — where LangGraph's prebuilt agent needs native
structured output.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.utils.function_calling import convert_to_json_schema
from pydantic import BaseModel

from reactgraph.engine.bindings import Engine
from reactgraph.engine.state import AgentState
from reactgraph.protocol.structured import structured_llm_call

logger = logging.getLogger(__name__)


def parse_response_format(response_format: Any) -> tuple[str | None, dict[str, Any] | type[BaseModel]]:
    """Split a ``response_format`` argument into ``(prompt, schema)``.

    Args:
        response_format: A pydantic model class, a JSON schema dict, a ``TypedDict``
            class, or a ``(prompt, schema)`` tuple whose prompt is sent as a system message
            before the conversation (as LangGraph's prebuilt agent does).

    Returns:
        The prompt (``None`` without one) and a schema :func:`structured_llm_call` takes
        (a ``TypedDict`` becomes its JSON schema, so the value is a dict).

    Raises:
        TypeError: Not a schema of these kinds.
    """
    prompt = None
    schema = response_format
    if isinstance(response_format, tuple) and len(response_format) == 2:
        prompt, schema = response_format
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return prompt, schema
    if isinstance(schema, dict):
        return prompt, schema
    if isinstance(schema, type) and hasattr(schema, "__annotations__") and hasattr(schema, "__total__"):
        return prompt, convert_to_json_schema(schema)
    raise TypeError(f"response_format must be a pydantic model, a JSON schema dict or a TypedDict, got {schema!r}")


class StructuredResponse:
    """Write ``structured_response``: the value :func:`structured_llm_call` returns (a
    pydantic object for a model class, else a dict), or ``None`` when every level failed
    (logged; the run still ends normally, SPEC R2.7). Its model calls count in ``usage``.
    """

    def __init__(self, engine: Engine, response_format: Any) -> None:
        self.engine = engine
        self.prompt, self.schema = parse_response_format(response_format)

    async def __call__(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        messages = [*([SystemMessage(self.prompt)] if self.prompt else []), *self.engine.portable(state.get("messages", []))]
        llm, fallbacks = self.engine.structured_models(state.get("model"))
        result = await structured_llm_call(
            llm, messages, self.schema, default_value=None, config=config,
            reformat_retries=self.engine.settings.parse_retries, fallbacks=fallbacks,
        )
        if result.level is None:
            logger.warning("no structured response after %d model calls: %s", result.calls, result.error)
        return {"structured_response": result.value, "usage": result.usage}
