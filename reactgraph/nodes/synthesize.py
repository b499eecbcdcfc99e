"""``synthesize``: the answer phase (SPEC §3). Writes the user-facing answer as ``answer``
events and records it in ``synthesis``.

If the synthesis call fails for any reason, the loop's answer is sent instead (R3.2): as
the only delta when nothing was streamed yet, or after a blank line when the stream broke
off. Skipped (no events, ``synthesis`` stays ``None``) when the run's config says
``configurable.synthesize = False`` or the settings disable it; ``ReActAgent.run`` uses that.

The synthesis sees the model's own draft answer (never a step summary), the thread's earlier
turns within a budget (:func:`~reactgraph.answer.synthesis.format_history`), and a stream
that starts repeating one line is cut there (:func:`~reactgraph.answer.synthesis.until_repetition`,
SPEC R13.1). Then, unless ``AgentSettings.grounding`` is ``"off"``, every number and id of
the answer is checked against the trace, the question and the earlier turns
(:func:`~reactgraph.answer.grounding.check_grounding`; derived figures count with
``grounding_derived``) and the result stored in ``grounding``:

* ``"report"``: the answer streams as written; the check is only reported.
* ``"flag"``: the answer streams as written; values no tool returned are named in a note at
  its end (:data:`~reactgraph.protocol.prompts.FLAG_NOTE`), so they are never shown as fact.
* ``"enforce"``: with ``grounding_check_first`` (the strict policy) the answer is written in
  full and checked *before* anything of it is sent (a client shows the loop's
  ``answer`` signal — "writing the answer…" — meanwhile, and never sees a draft that is
  withdrawn); without it, it streams, and one that fails is withdrawn with an ``answer``
  ``reset`` event ``{status: "reset", ungrounded, factless}`` before the next is written. It
  stands when it is grounded, not factless and fit to show (:func:`~reactgraph.answer.fitness.answer_problems`: the question's language, no
  code fence, no tool call written out, no line twice — checked when successful observations
  exist to answer from instead, or when no tool ran; and no figure or state tied to a record that
  another record's lines hold, :func:`~reactgraph.answer.claims.misattributed_claims`; and what the
  observation answer would hold: some fact of each part's data of a question of several parts, a
  yes/no question's verdict as the observations decide it, :mod:`reactgraph.answer.written`). Otherwise, with ``grounding_reask``, it is asked for once
  more with the strict prompt; and else the answer is
  :func:`~reactgraph.answer.grounding.observation_answer` with the engine's lead, as the strict
  policy's answer has it (:func:`~reactgraph.answer.lead.choose_lead`: a yes/no question keeps
  its verdict; when no tool ran,
  :func:`~reactgraph.answer.grounding.capabilities_answer`: what the agent can look up). When tools were called and every call
  failed, no synthesis call is made: the answer is what the tools said (grounding
  ``action: "no_data"``).

With ``answer_from_observations`` (the strict policy), a turn where some tool call succeeded
makes no synthesis call at all: the answer is the observation answer (grounding
``action: "observations"``), led — for a yes/no or which/what question — by the sentence the
engine writes from the model's constrained choice of verdict and deciding lines
(:func:`~reactgraph.answer.lead.choose_lead`: one small call whose enums are the observations' lines).

A model that writes its answers (``answer_from_observations`` off, ``grounding="enforce"``)
writes none where every successful result holds no data (``holds_no_data``: "No order found
999999", ``[]``): the observation answer says, in the question's language, that nothing was
found ("n'est pas en cours d'exécution" for an unknown order was a 1.5B's answer to it).

Under ``AgentSettings.synthesis="auto"`` a loop answer that streamed already
(``answer_streamed``, :mod:`reactgraph.answer.loop_answer`) is ended here without a model call:
the ``flag`` note, ``answer`` ``done``, the grounding report; one unfit to show
(:func:`~reactgraph.answer.fitness.answer_problems`) is withdrawn with a ``reset`` event and
written by the synthesis call instead. ``answer_source`` says which call wrote the answer
(``loop``, ``synthesis``, ``observations``).

A run ended by a ``return_direct`` tool makes no model call: the tool's result is sent as
the answer, as it is.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from reactgraph.engine.bindings import Engine
from reactgraph.events import OMIT, AnswerDelta, AnswerDone, AnswerReset, emit
from reactgraph.answer.fitness import answer_problems
from reactgraph.answer.grounding import (
    GroundingReport,
    capabilities_answer,
    check_grounding,
    observation_answer,
)
from reactgraph.engine.history import thread_of
from reactgraph.core.language import phrase, turn_language
from reactgraph.answer.claims import claim_problems
from reactgraph.answer.written import written_problems
from reactgraph.answer.lead import choose_lead
from reactgraph.protocol.prompts import FLAG_NOTE
from reactgraph.engine.state import AgentState
from reactgraph.answer.synthesis import (
    collect_answer,
    emit_answer,
    format_history,
    one_chunk,
    stream_synthesis,
    until_repetition,
)
from reactgraph.core.usage import sum_usage
from reactgraph.tools.approval import may_need_approval
from reactgraph.tools.runner import holds_no_data


class Synthesize:
    """Write the answer and check its grounding (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def _write(self, state: AgentState, config: RunnableConfig, usage: dict[str, int], fallback: str,
                     history: str, *, shown: bool, strict: bool = False, ungrounded: list[str] | None = None,
                     flag: Any = None) -> str:
        """One synthesis call: streamed as ``answer`` events when ``shown`` (with ``flag``'s
        note, if any, before ``done``), else collected unseen for a check."""
        call_usage: dict[str, int] = {}
        # A stalled loop's last answer was forced out of a model that was going in circles.
        draft = (state.get("draft_answer") or "") if state.get("finish_reason") != "stalled" else ""
        chunks = until_repetition(stream_synthesis(
            self.engine.synthesis_model, state.get("query", ""), state.get("steps", []), draft,
            result_chars=self.engine.settings.synthesis_result_chars, config=config, usage_out=call_usage,
            strict=strict, ungrounded=ungrounded or (), history=history, language=turn_language(state),
            parts=state.get("part_questions") or (),
        ))
        text = await (emit_answer(chunks, fallback, epilogue=flag) if shown else collect_answer(chunks, fallback))
        usage.update(sum_usage(usage, call_usage or {"model_calls": 1}))
        return text

    def _check(self, state: AgentState, text: str, history: str) -> GroundingReport:
        settings = self.engine.settings
        return check_grounding(text, state.get("steps", []), state.get("query", ""), settings.grounding_min_facts,
                               derived=bool(settings.grounding_derived), context=history)

    def _flag_note(self, state: AgentState, history: str) -> Any:
        """The ``epilogue`` of a flagged answer: its note naming values no tool returned."""
        language = turn_language(state)

        def note(text: str) -> str:
            ungrounded = self._check(state, text, history).ungrounded
            if not ungrounded:
                return ""
            return FLAG_NOTE.format(note=phrase("flag_note", language, values=", ".join(ungrounded)))

        return note

    async def _observation_answer(self, state: AgentState, config: RunnableConfig, usage: dict[str, int]) -> str:
        """The observation answer of a turn where some tool call succeeded, led by the sentence
        the engine writes from the model's choice (:func:`~reactgraph.answer.lead.choose_lead`;
        its call's usage is added to ``usage``): the strict policy's answer, and the answer
        that stands when a written one is withdrawn, so a yes/no question keeps its verdict."""
        query, steps = state.get("query", ""), state.get("steps", [])
        llm, fallbacks = self.engine.structured_models()
        lead_usage: dict[str, int] = {}
        parts = list(zip(state.get("part_questions") or (), state.get("part_tools") or ()))
        lead = await choose_lead(llm, self.engine.abilities, query, steps, config=config, fallbacks=fallbacks,
                                 usage_out=lead_usage, parts=parts, language=turn_language(state))
        if lead_usage:
            usage.update(sum_usage(usage, lead_usage) if usage else lead_usage)
        shown = self.engine.answering_steps(steps, query, state.get("messages", []), thread_of(config))
        return observation_answer(query, shown, self.engine.settings.synthesis_result_chars,
                                  self.engine.tool_descriptions, language=turn_language(state), lead=lead)

    def _data_parts(self, state: AgentState) -> list[str]:
        """The tools of the question's parts (``part_tools``) whose data a written answer must
        pass on: every part's but a tool that changes something (its confirmation is no data
        the question asked for; :func:`~reactgraph.tools.approval.may_need_approval`)."""
        policy = self.engine.settings.approval
        return [name for name in state.get("part_tools") or ()
                if not may_need_approval(self.engine.tools.get(name), policy)]

    async def _enforced(self, state: AgentState, config: RunnableConfig, usage: dict[str, int],
                        history: str) -> dict[str, Any]:
        """``grounding="enforce"``: the answer that stands, checked before it is sent."""
        settings = self.engine.settings
        query, steps = state.get("query", ""), state.get("steps", [])
        descriptions = self.engine.tool_descriptions
        language = turn_language(state)
        shown = self.engine.answering_steps(steps, query, state.get("messages", []), thread_of(config))
        last_resort = (observation_answer(query, shown, settings.synthesis_result_chars, descriptions, language=language)
                       if steps else capabilities_answer(query, descriptions, language=language))
        if steps and all(step.get("error") for step in steps):
            # Tools were called and none returned data: nothing to ground an answer in, so the
            # answer is what the tools said (an unknown id, an outage), not the model's guess.
            text = await emit_answer(one_chunk(last_resort), "")
            report = self._check(state, text, history)
            return {"synthesis": text, "grounding": report.to_dict(settings.grounding, "no_data")}
        # Fit to show is checked where something else can be shown instead: the observations,
        # or, when no tool ran, what the agent can look up.
        checked = not steps or any(not step.get("error") for step in steps)
        parts = self._data_parts(state)

        def verdict(text: str) -> tuple[GroundingReport, list[str]]:
            problems = (answer_problems(text, query, self.engine.tools, steps) + claim_problems(text, steps, query)
                        + written_problems(text, steps, query, parts, language) if checked else [])
            return self._check(state, text, history), problems

        shown = not settings.grounding_check_first  # else the answer is checked before it is shown
        text = await self._write(state, config, usage, state.get("answer") or "", history, shown=shown)
        (report, problems), action = verdict(text), "kept"
        withdrawn: list[str] = []
        if (report.ungrounded or report.factless or problems) and settings.grounding_reask:
            withdrawn = problems
            if shown:
                emit(AnswerReset(ungrounded=report.ungrounded, factless=report.factless, problems=problems or OMIT))
            text = await self._write(state, config, usage, last_resort, history, shown=shown, strict=True,
                                     ungrounded=report.ungrounded)
            (report, problems), action = verdict(text), "reasked"
        if report.ungrounded or report.factless or problems:
            withdrawn = problems or withdrawn
            if shown:
                emit(AnswerReset(ungrounded=report.ungrounded, factless=report.factless, problems=problems or OMIT))
            # the strict policy's answer, with its lead (a yes/no question keeps its verdict)
            text = await self._observation_answer(state, config, usage) if steps else last_resort
            action = "fallback"
            report = self._check(state, text, history)
        if action == "fallback" or not shown:
            await emit_answer(one_chunk(text), text)
        return {"synthesis": text, "usage": usage,
                "grounding": report.to_dict(settings.grounding, action, problems=withdrawn)}

    async def __call__(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        if not self.engine.synthesizes(config):
            return {}
        if state.get("answer_streamed"):  # synthesis="auto": the loop's answer streamed already
            ended = self._end_loop_answer(state)
            if ended is not None:
                return ended
        update = await self._synthesized(state, config)
        action = (update.get("grounding") or {}).get("action")
        written_by_model = state.get("finish_reason") != "return_direct" and action not in (
            "observations", "no_data", "fallback")
        return {**update, "answer_source": "synthesis" if written_by_model else "observations"}

    def _end_loop_answer(self, state: AgentState) -> dict[str, Any] | None:
        """The end of the loop's streamed answer (``synthesis="auto"``): unless it is unfit
        to show (:func:`~reactgraph.answer.fitness.answer_problems`; then it is withdrawn with an
        ``answer`` ``reset`` event and ``None`` returned, so synthesis writes the answer),
        the ``flag`` note, ``answer`` ``done`` and the grounding report, without a model call."""
        settings = self.engine.settings
        query, text = state.get("query", ""), state.get("answer") or ""
        problems = answer_problems(text, query, self.engine.tools, state.get("steps", []))
        if problems:
            emit(AnswerReset(ungrounded=[], factless=False, problems=problems))
            return None
        history = format_history(state.get("earlier_turns") or [])
        note = self._flag_note(state, history)(text) if settings.grounding == "flag" else ""
        if note:
            emit(AnswerDelta(content=note))
        emit(AnswerDone())
        update: dict[str, Any] = {"synthesis": text + note, "answer_source": "loop"}
        if settings.grounding not in (None, "off"):
            report = self._check(state, text, history)
            action = "flagged" if settings.grounding == "flag" and report.ungrounded else "kept"
            update["grounding"] = report.to_dict(settings.grounding, action)
        return update

    async def _synthesized(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        """The answer written by the synthesis call, or made of the observations (see the
        module docstring)."""
        settings = self.engine.settings
        if state.get("finish_reason") == "return_direct":  # the tool's result is the answer
            return {"synthesis": await emit_answer(one_chunk(state.get("answer") or ""), "")}
        usage: dict[str, int] = {}
        history = format_history(state.get("earlier_turns") or [])
        steps = state.get("steps", [])
        succeeded = [step for step in steps if not step.get("error")]
        # a model that writes under ``enforce`` does not write about nothing: where every result
        # holds no data, the engine's answer says plainly that nothing was found
        found_nothing = settings.grounding == "enforce" and all(
            holds_no_data(str(step.get("observation") or "")) for step in succeeded)
        if (settings.answer_from_observations or found_nothing) and succeeded:
            text = await emit_answer(one_chunk(await self._observation_answer(state, config, usage)), "")
            report = self._check(state, text, history)
            grounding = report.to_dict(settings.grounding or "off", "observations")
            return {"synthesis": text, "grounding": grounding, **({"usage": usage} if usage else {})}
        if settings.grounding == "enforce":
            return await self._enforced(state, config, usage, history)
        flag = self._flag_note(state, history) if settings.grounding == "flag" else None
        text = await self._write(state, config, usage, state.get("answer") or "", history, shown=True, flag=flag)
        if settings.grounding == "off":
            return {"synthesis": text, "usage": usage}
        report = self._check(state, text, history)
        action = "flagged" if settings.grounding == "flag" and report.ungrounded else "kept"
        return {"synthesis": text, "usage": usage, "grounding": report.to_dict(settings.grounding, action)}

