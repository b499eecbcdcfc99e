"""``synthesize``: the answer phase (SPEC §3). Streams the user-facing answer as
``answer`` events and records it in ``synthesis``.

If the synthesis call fails for any reason, the loop's answer is sent instead (R3.2): as
the only delta when nothing was streamed yet, or after a blank line when the stream broke
off. Skipped (no events, ``synthesis`` stays ``None``) when the run's config says
``configurable.synthesize = False`` or the settings disable it; ``ReActAgent.run`` uses that.

The synthesis sees only the model's own draft answer, never a step summary, and a stream
that starts repeating one line is cut there (:func:`~reactgraph.synthesis.until_repetition`,
SPEC R13.1).
Then, unless ``AgentSettings.grounding`` is ``"off"``, every number and id of the answer is
checked against the trace and the question (:func:`~reactgraph.grounding.check_grounding`)
and the result stored in ``grounding``. Under ``"enforce"`` an answer with ungrounded
values, or a factless one (tools returned facts, the answer passes on none), is withdrawn —
an ``answer`` event ``{status: "reset", ungrounded, factless}`` tells clients to drop the
text streamed so far — and asked for once more with the strict prompt; if that
answer is not grounded either, it is withdrawn too and replaced by
:func:`~reactgraph.grounding.observation_answer`. When tools were called and every call failed,
``"enforce"`` skips the synthesis call: the answer is what the tools said
(``observation_answer``'s failure lines; grounding ``action: "no_data"``).
A run ended by a ``return_direct`` tool makes no model call: the tool's result is sent as
the answer, as it is (issue 21).
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from reactgraph._engine import Engine
from reactgraph.events import AnswerReset, emit
from reactgraph.grounding import check_grounding, observation_answer
from reactgraph.state import AgentState
from reactgraph.synthesis import emit_answer, one_chunk, stream_synthesis, until_repetition
from reactgraph.usage import sum_usage


class Synthesize:
    """Stream the synthesis and check its grounding (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def _stream(self, state: AgentState, config: RunnableConfig, usage: dict[str, int],
                      fallback: str, *, strict: bool = False, ungrounded: list[str] | None = None) -> str:
        call_usage: dict[str, int] = {}
        # A stalled loop's last answer was forced out of a model that was going in circles.
        draft = (state.get("draft_answer") or "") if state.get("finish_reason") != "stalled" else ""
        chunks = stream_synthesis(
            self.engine.synthesis_model,
            state.get("query", ""),
            state.get("steps", []),
            draft,
            result_chars=self.engine.settings.synthesis_result_chars,
            config=config,
            usage_out=call_usage,
            strict=strict,
            ungrounded=ungrounded or (),
        )
        text = await emit_answer(until_repetition(chunks), fallback)
        usage.update(sum_usage(usage, call_usage or {"model_calls": 1}))
        return text

    async def __call__(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        settings = self.engine.settings
        enabled = (config.get("configurable") or {}).get("synthesize", settings.synthesize)
        if not enabled:
            return {}
        if state.get("finish_reason") == "return_direct":  # the tool's result is the answer (issue 21)
            return {"synthesis": await emit_answer(one_chunk(state.get("answer") or ""), "")}
        usage: dict[str, int] = {}
        query, steps = state.get("query", ""), state.get("steps", [])
        if settings.grounding == "enforce" and steps and all(step.get("error") for step in steps):
            # Tools were called and none returned data: nothing to ground an answer in, so the
            # answer is what the tools said (an unknown id, an outage), not the model's guess.
            text = await emit_answer(one_chunk(observation_answer(query, steps, settings.synthesis_result_chars)), "")
            report = check_grounding(text, steps, query, settings.grounding_min_facts)
            return {"synthesis": text, "grounding": report.to_dict(settings.grounding, "no_data")}
        text = await self._stream(state, config, usage, state.get("answer") or "")
        if settings.grounding == "off":
            return {"synthesis": text, "usage": usage}
        report, action = check_grounding(text, steps, query, settings.grounding_min_facts), "kept"
        if settings.grounding == "enforce" and (report.ungrounded or report.factless):
            last_resort = observation_answer(query, steps, settings.synthesis_result_chars)
            emit(AnswerReset(ungrounded=report.ungrounded, factless=report.factless))
            text = await self._stream(state, config, usage, last_resort, strict=True, ungrounded=report.ungrounded)
            report, action = check_grounding(text, steps, query, settings.grounding_min_facts), "reasked"
            if report.ungrounded or report.factless:
                emit(AnswerReset(ungrounded=report.ungrounded, factless=report.factless))
                text = await emit_answer(one_chunk(last_resort), last_resort)
                report, action = check_grounding(text, steps, query, settings.grounding_min_facts), "fallback"
        return {"synthesis": text, "usage": usage, "grounding": report.to_dict(settings.grounding, action)}
