"""``synthesize``: the answer phase (SPEC §3). Streams the user-facing answer as
``answer`` events and records it in ``synthesis``.

If the synthesis call fails for any reason, the loop's answer is sent instead (R3.2): as
the only delta when nothing was streamed yet, or after a blank line when the stream broke
off. Skipped (no events, ``synthesis`` stays ``None``) when the run's config says
``configurable.synthesize = False`` or the settings disable it; ``ReActAgent.run`` uses that.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.runnables import RunnableConfig

from reactgraph.engine import Engine
from reactgraph.events import emit
from reactgraph.state import AgentState
from reactgraph.synthesis import stream_synthesis

logger = logging.getLogger(__name__)


class Synthesize:
    """Stream the synthesis (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        enabled = (config.get("configurable") or {}).get("synthesize", self.engine.settings.synthesize)
        if not enabled:
            return {}
        answer = state.get("answer") or ""
        emit("answer", status="start")
        parts: list[str] = []
        usage: dict[str, int] = {}
        try:
            async for text in stream_synthesis(
                self.engine.synthesis_model,
                state.get("query", ""),
                state.get("steps", []),
                answer,
                result_chars=self.engine.settings.synthesis_result_chars,
                config=config,
                usage_out=usage,
            ):
                parts.append(text)
                emit("answer", status="delta", content=text)
        except Exception as exc:  # synthesis must never cost the user the answer (R3.2)
            logger.warning("synthesis failed, falling back to the loop's answer: %s", exc)
            fallback = answer if not parts else f"\n\n{answer}"
            parts.append(fallback)
            emit("answer", status="delta", content=fallback)
            usage = {"model_calls": 1}
        if not "".join(parts).strip():  # the model streamed nothing useful
            parts.append(answer)
            emit("answer", status="delta", content=answer)
        emit("answer", status="done")
        return {"synthesis": "".join(parts), "usage": usage}
