"""``synthesize``: the answer phase (SPEC §3). Streams the user-facing answer as
``answer`` events and records it in ``synthesis``.

If the synthesis call fails for any reason, the loop's answer is sent instead (R3.2): as
the only delta when nothing was streamed yet, or after a blank line when the stream broke
off. Skipped (no events, ``synthesis`` stays ``None``) when the run's config says
``configurable.synthesize = False`` or the settings disable it; ``ReActAgent.run`` uses that.
A run ended by a ``return_direct`` tool makes no model call: the tool's result is sent as
the answer, as it is (issue 21).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from langchain_core.runnables import RunnableConfig

from reactgraph.engine import Engine
from reactgraph.events import emit
from reactgraph.state import AgentState
from reactgraph.synthesis import stream_synthesis, with_fallback


async def emit_answer(chunks: AsyncIterator[str], fallback: str) -> str:
    """Send a streamed answer as ``answer`` events (start, one delta per chunk, done),
    falling back to ``fallback`` as :func:`~reactgraph.synthesis.with_fallback` does (R3.2).

    Returns:
        The whole text sent.
    """
    emit("answer", status="start")
    parts: list[str] = []
    async for text in with_fallback(chunks, fallback):
        parts.append(text)
        emit("answer", status="delta", content=text)
    emit("answer", status="done")
    return "".join(parts)


async def _once(text: str) -> AsyncIterator[str]:
    yield text


class Synthesize:
    """Stream the synthesis (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        enabled = (config.get("configurable") or {}).get("synthesize", self.engine.settings.synthesize)
        if not enabled:
            return {}
        if state.get("finish_reason") == "return_direct":
            return {"synthesis": await emit_answer(_once(state.get("answer") or ""), "")}
        usage: dict[str, int] = {}
        chunks = stream_synthesis(
            self.engine.synthesis_model,
            state.get("query", ""),
            state.get("steps", []),
            state.get("answer") or "",
            result_chars=self.engine.settings.synthesis_result_chars,
            config=config,
            usage_out=usage,
        )
        text = await emit_answer(chunks, state.get("answer") or "")
        return {"synthesis": text, "usage": usage or {"model_calls": 1}}
