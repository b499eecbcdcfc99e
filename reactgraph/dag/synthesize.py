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

The answer is held to the same grounding policy and checks as a ReAct answer of the
synthesis model (:func:`~reactgraph.policy.safeguards.resolve_settings` of the steps' settings
for its abilities, SPEC R13.1). The evidence is what the steps' *tools* returned (their
``tool_steps``) and the goal — never a step's own words, which a small model may have made
up. So:

* ``answer_from_observations`` (the strict policy, the embedded model): no synthesis call;
  the answer is made of the steps' tool observations (:func:`dag_observation_answer`,
  with the lead a yes/no or which/what goal gets, :func:`~reactgraph.answer.lead.choose_lead`),
  then what could not be found (the steps that failed or got no data);
* ``grounding="enforce"``: the synthesis is written unseen and checked (values, facts
  passed on, :func:`~reactgraph.answer.fitness.answer_problems`, a figure or state tied to
  the wrong record, :func:`~reactgraph.answer.claims.misattributed_claims`); one that fails —
  an id no step returned — is replaced by :func:`dag_observation_answer` with its lead;
* ``"flag"``: the synthesis streams and values no step's tool returned are named under it;
* ``"report"``: only reported. The check goes in ``DAGState.grounding``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from reactgraph.core.config import AgentSettings
from reactgraph.dag.analyze import format_results
from reactgraph.dag.budget import model_label
from reactgraph.dag.settings import DAGSettings
from reactgraph.dag.state import DAGState, PlanStep, StepResult
from reactgraph.answer.claims import claim_problems
from reactgraph.answer.written import written_problems
from reactgraph.answer.fitness import answer_problems
from reactgraph.answer.grounding import check_grounding, observation_answer
from reactgraph.core.language import detect_language, phrase
from reactgraph.answer.lead import choose_lead
from reactgraph.models.registry import ModelRegistry
from reactgraph.protocol.prompts import FLAG_NOTE, SYNTHESIS_HISTORY, SYNTHESIS_SYSTEM, SYNTHESIS_USER
from reactgraph.policy.safeguards import resolve_settings
from reactgraph.answer.synthesis import collect_answer, emit_answer, format_history, one_chunk, stream_messages


def dag_synthesis_messages(goal: str, plan: Sequence[PlanStep], results: Mapping[str, StepResult],
                           draft: str | None, chars: int, history: str = "") -> list[BaseMessage]:
    """The synthesis prompt: the synthesizer system prompt, and the goal with the steps'
    results (each cut to ``chars``) and the analyzer's draft answer as the work log, after the
    thread's earlier runs (``history``, :func:`~reactgraph.answer.synthesis.format_history`) when
    there are some."""
    trace = format_results(plan, results, chars)
    if draft:
        trace += f"\n\nDraft answer from the assistant:\n{draft}"
    before = SYNTHESIS_HISTORY.format(turns=history) if history.strip() else ""
    return [SystemMessage(SYNTHESIS_SYSTEM), HumanMessage(before + SYNTHESIS_USER.format(query=goal, trace=trace))]


def tool_trace(plan: Sequence[PlanStep], results: Mapping[str, StepResult]) -> list[dict[str, Any]]:
    """Every tool call record of the round's steps, in plan order: a DAG answer's evidence."""
    return [record for step in plan for record in (results.get(step["id"]) or {}).get("tool_steps") or []]


def dag_observation_answer(goal: str, plan: Sequence[PlanStep], results: Mapping[str, StepResult], *,
                           chars: int = 2000, descriptions: Mapping[str, str] | None = None,
                           lead: str | None = None) -> str:
    """A DAG answer that states only values the steps' tools returned (SPEC R13.1).

    Args:
        goal: The run's goal (its language picks the engine's sentences).
        plan: The round's plan.
        results: Its results by step id.
        chars: Characters kept of each observation.
        descriptions: Tool name → description (table column names).
        lead: The sentence that answers the goal (:func:`~reactgraph.answer.lead.choose_lead`).

    Returns:
        Markdown: :func:`~reactgraph.answer.grounding.observation_answer` over every step's tool
        calls (``no_data`` when none succeeded), then ``not_found`` (the language table's
        phrases) and each step that failed or got no
        tool data (its task, and why when it failed).
    """
    trace = tool_trace(plan, results)
    language = detect_language(goal)
    missing = []
    for step in plan:
        record = results.get(step["id"])
        got_data = record is not None and any(not call.get("error") for call in record.get("tool_steps") or [])
        if record is None or record["status"] != "completed" or not got_data:
            why = f" ({record['error']})" if record is not None and record.get("error") else ""
            missing.append(f"- {step['task']}{why}")
    if any(not call.get("error") for call in trace):
        body = observation_answer(goal, trace, chars, descriptions, language=language, lead=lead)
    else:
        body = phrase("no_data", language)
    return "\n\n".join([body, phrase("not_found", language) + "\n" + "\n".join(missing)]) if missing else body


class DAGSynthesize:
    """The ``synthesize`` node of the DAG graph (see the module docstring).

    Args:
        models: The registry; synthesis runs on ``settings.synthesis_role``.
        settings: The DAG settings.
        step_settings: The steps' :class:`~reactgraph.AgentSettings`: their safeguard
            fields, resolved for the synthesis model's abilities, decide the answer's
            grounding as for a ReAct answer.
        descriptions: Tool name → description (table column names of an answer made of
            observations).
    """

    def __init__(self, models: ModelRegistry, settings: DAGSettings, step_settings: AgentSettings | None = None,
                 descriptions: Mapping[str, str] | None = None) -> None:
        self.models = models
        self.settings = settings
        self.step_settings = step_settings or AgentSettings()
        self.descriptions = dict(descriptions or {})

    async def __call__(self, state: DAGState, config: RunnableConfig) -> dict[str, Any]:
        answer = state.get("answer") or ""
        if not (config.get("configurable") or {}).get("synthesize", True):  # no answer checked: none recorded
            return {"messages": [AIMessage(answer)], "grounding": None}
        results = state.get("results") or {}
        if not results:  # the planner failed before any step ran: its message is the answer
            text = await emit_answer(one_chunk(answer), answer)
            return {"synthesis": text, "messages": [AIMessage(text)], "grounding": None}
        entry = self.models.resolve(self.settings.synthesis_role)
        policy = resolve_settings(self.step_settings, entry.abilities)
        goal, plan = state.get("goal", ""), state.get("plan") or []
        trace = tool_trace(plan, results)
        usage: dict[str, int] = {}
        model = model_label(entry.llm)
        history = format_history(state.get("earlier_turns") or [])

        def grounded(text: str, action: str) -> dict[str, Any]:
            report = check_grounding(text, trace, goal, policy.grounding_min_facts,
                                     derived=bool(policy.grounding_derived), context=history)
            return report.to_dict(policy.grounding or "off", action)

        def fallback(lead: str | None = None) -> str:
            return dag_observation_answer(goal, plan, results, chars=self.settings.result_chars,
                                          descriptions=self.descriptions, lead=lead)

        def done(text: str, grounding: dict[str, Any] | None) -> dict[str, Any]:
            update: dict[str, Any] = {"synthesis": text, "messages": [AIMessage(text)], "grounding": grounding}
            if usage:
                update.update(usage=usage, model_usage={model: usage})
            return update

        if policy.answer_from_observations and any(not call.get("error") for call in trace):
            lead = await choose_lead(entry.llm, entry.abilities, goal, trace, config=config, fallbacks=entry.fallbacks,
                                     usage_out=usage)
            text = await emit_answer(one_chunk(fallback(lead)), "")
            return done(text, grounded(text, "observations"))
        draft = (state.get("analysis") or {}).get("final_answer")
        messages = dag_synthesis_messages(goal, plan, results, draft, self.settings.result_chars, history)
        call_usage: dict[str, int] = {}
        chunks = stream_messages(entry.chained(), messages, config=config, usage_out=call_usage)
        if policy.grounding == "enforce":
            text = await collect_answer(chunks, answer)
            usage.update(call_usage or {"model_calls": 1})
            report = check_grounding(text, trace, goal, policy.grounding_min_facts,
                                     derived=bool(policy.grounding_derived), context=history)
            problems = (answer_problems(text, goal, self.descriptions, trace) + claim_problems(text, trace, goal)
                        + written_problems(text, trace, goal, (), detect_language(goal)) if trace else [])
            action = "kept"
            if report.ungrounded or report.factless or problems:
                # the observation answer with the engine's lead: a yes/no question keeps its verdict
                lead = await choose_lead(entry.llm, entry.abilities, goal, trace, config=config,
                                         fallbacks=entry.fallbacks, usage_out=usage) if trace else None
                text, action = fallback(lead), "fallback"
            await emit_answer(one_chunk(text), text)
            checked = grounded(text, action)
            if action == "fallback":
                checked = {**checked, "withdrawn": list(report.ungrounded), **({"problems": problems} if problems else {})}
            return done(text, checked)
        note = self._flag_note(goal, trace, policy, history) if policy.grounding == "flag" else None
        text = await emit_answer(chunks, answer, epilogue=note)
        usage.update(call_usage or {"model_calls": 1})
        if policy.grounding == "off":
            return done(text, None)
        return done(text, grounded(text, "flagged" if note is not None and note(text) else "kept"))

    @staticmethod
    def _flag_note(goal: str, trace: list[dict[str, Any]], policy: AgentSettings, history: str) -> Callable[[str], str]:
        """The note under a flagged answer naming the values no step's tool returned."""
        def note(text: str) -> str:
            ungrounded = check_grounding(text, trace, goal, derived=bool(policy.grounding_derived),
                                         context=history).ungrounded
            if not ungrounded:
                return ""
            return FLAG_NOTE.format(note=phrase("flag_note", detect_language(goal), values=", ".join(ungrounded)))
        return note
