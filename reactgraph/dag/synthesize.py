"""DAG mode's answer phase (SPEC R9.4): one streamed synthesis over the last round.

The synthesizer prompt of the ReAct engine (SPEC R3.1) with the steps' results as the
work log and the analyzer's final answer as the draft. It falls back to the analyzer's
answer, then to the concatenated step results (``DAGState.answer`` holds whichever
applies): when the call fails, or streams nothing. After a planner failure with no
results, the failure message is the answer and no model is called. Skipped when the
run's config says ``configurable.synthesize = False`` (``DAGAgent.run`` uses that).
The answer shown (the synthesis, else the answer before it) is added to the thread's
``messages`` as an assistant message, so a DAG run reads in the thread's conversation as a
ReAct turn does: the goal, then the answer (SPEC R13.8).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from reactgraph.dag.analyze import format_results
from reactgraph.dag.budget import model_label
from reactgraph.dag.settings import DAGSettings
from reactgraph.dag.state import DAGState, PlanStep, StepResult
from reactgraph.models.registry import ModelRegistry
from reactgraph.prompts import SYNTHESIS_HISTORY, SYNTHESIS_SYSTEM, SYNTHESIS_USER
from reactgraph.synthesis import emit_answer, format_history, one_chunk, stream_messages


def dag_synthesis_messages(goal: str, plan: Sequence[PlanStep], results: Mapping[str, StepResult],
                           draft: str | None, chars: int, history: str = "") -> list[BaseMessage]:
    """The synthesis prompt: the synthesizer system prompt, and the goal with the steps'
    results (each cut to ``chars``) and the analyzer's draft answer as the work log, after the
    thread's earlier runs (``history``, :func:`~reactgraph.synthesis.format_history`) when
    there are some (issue 35)."""
    trace = format_results(plan, results, chars)
    if draft:
        trace += f"\n\nDraft answer from the assistant:\n{draft}"
    before = SYNTHESIS_HISTORY.format(turns=history) if history.strip() else ""
    return [SystemMessage(SYNTHESIS_SYSTEM), HumanMessage(before + SYNTHESIS_USER.format(query=goal, trace=trace))]


class DAGSynthesize:
    """The ``synthesize`` node of the DAG graph (see the module docstring).

    Args:
        models: The registry; synthesis runs on ``settings.synthesis_role``.
        settings: The DAG settings.
    """

    def __init__(self, models: ModelRegistry, settings: DAGSettings) -> None:
        self.models = models
        self.settings = settings

    async def __call__(self, state: DAGState, config: RunnableConfig) -> dict[str, Any]:
        answer = state.get("answer") or ""
        if not (config.get("configurable") or {}).get("synthesize", True):
            return {"messages": [AIMessage(answer)]}
        results = state.get("results") or {}
        if not results:  # the planner failed before any step ran: its message is the answer
            text = await emit_answer(one_chunk(answer), answer)
            return {"synthesis": text, "messages": [AIMessage(text)]}
        draft = (state.get("analysis") or {}).get("final_answer")
        messages = dag_synthesis_messages(state.get("goal", ""), state.get("plan") or [], results, draft,
                                          self.settings.result_chars, format_history(state.get("earlier_turns") or []))
        usage: dict[str, int] = {}
        chunks = stream_messages(self.models.resolve(self.settings.synthesis_role).chained(), messages, config=config,
                                 usage_out=usage)
        text = await emit_answer(chunks, answer)
        usage = usage or {"model_calls": 1}
        model = model_label(self.models.resolve(self.settings.synthesis_role).llm)
        return {"synthesis": text, "usage": usage, "model_usage": {model: usage}, "messages": [AIMessage(text)]}
