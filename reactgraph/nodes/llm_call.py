"""``llm_call_native`` and ``llm_call_json``: one non-streaming model call of the tool loop.

Native mode (SPEC R2.5): tools go through ``bind_tools``; a response may ask for several
tool calls; a response without tool calls is the final answer — unless its content is a
tool-call format naming an offered tool (``<tool_call>{...}</tool_call>``, Mistral's
``[TOOL_CALLS]``, ...), which the provider profile has read as real tool calls
(:mod:`reactgraph.providers.content_calls`, SPEC R13.2). JSON mode reads those formats too
when the content is not the JSON action.

JSON mode (SPEC R2.3, R2.4): the system prompt carries the tools and the reply protocol;
the content is parsed with :func:`~reactgraph.protocol.actions.parse_action`; unparseable content
gets one reformat request, and a second failure makes the raw content the answer. When the
model can take a schema (``abilities.schema_output``), each call carries the action schema
of the offered tools; a provider that refuses it is asked again without it in
the same iteration, and the run stays unconstrained from then on (``schema_rejected``).
With ``AgentSettings.json_action="tool_first"`` such a model is asked in two small
constrained calls instead of one: the choice (a tool name or the answer, best first), then
the tool's arguments or the answer (:meth:`LLMCallJSON._tool_first`, SPEC R13.1).

Both nodes offer the tools most relevant to the question first, with the enum values it
names first (SPEC R13.1, :mod:`reactgraph.tools.ranking`), emit ``thinking`` start/done events
and the ``answer`` signal, and return the tool calls to run under ``pending_tool_calls`` (the
model node sends them; they are not state). A failing model call raises; the node's retry
policy retries transient failures (SPEC R2.7).

Stall detection (SPEC R13.1): stalls are judged by progress, not by success
(:func:`~reactgraph.nodes.stall.detect_stall`, :mod:`reactgraph.nodes.stall`). A call with new arguments or another tool is an attempt; a model call
that only repeats a call with the same outcome (the same observation, the same error), or
whose repeat was refused, changes nothing. ``AgentSettings.stall_repeats`` such calls in a
row, or ``stall_failures`` calls in a row without a new successful observation, make a stall:
after a ``stall`` event the turn ends with ``finish_reason: "stalled"`` — straight to
synthesis when it runs (a stalled loop's last answer is never shown to it), else one call
asked for the final answer only (native mode with no tools bound, JSON mode with only the
``final_answer`` branch). Off with ``AgentSettings.stall_detection=False``.

Repeats (:func:`mark_repeats`): a repeated call of a tool that may change something
(:meth:`Engine.repeat_changes_something`) is refused; any other repeat runs, and when its
observation is the one the same call gave last time, the model is told so.

Two more rules decide when the loop answers: with
``AgentSettings.answer_when_covered`` the loop answers as soon as a successful observation
covers every value the question names (:func:`covered`) and every part of a question that
asks several things has data (:func:`pending_parts`: until then each call offers the tool of
the first part without data, with that part's own values, and requires a call:
:func:`current_part`), and every value a question lists for one argument of a tool that ran
("in Boston and in San Francisco") was passed by some call of it (:func:`next_value_set`:
until then each call offers that tool, requires a call and is asked for the question
rewritten for the next value); and an answer given before any
tool ran this turn to a question that names a value a tool takes, or one that states figures
or ids to a question about what the tools hold, is not accepted: the model is asked once more
with a tool call required (:func:`needs_tool_call`; native mode:
``tool_choice="any"``, JSON mode: the tool branches only). Off with
``AgentSettings.require_tool_data=False``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from reactgraph.engine.dualmode import call_model
from reactgraph.engine.bindings import Engine
from reactgraph.protocol.action_schema import ANSWER_CHOICE, choice_schema, schema_response_format
from reactgraph.protocol.actions import message_text, parse_action
from reactgraph.events import AnswerSignalled, ThinkingDone, ThinkingStarted, emit
from reactgraph.answer.grounding import extract_values, informative, observation_answer
from reactgraph.engine.history import HistoryFold, thread_of
from reactgraph.protocol.jsonparse import extract_json, safe_json
from reactgraph.core.language import phrase, turn_language
from reactgraph.answer.loop_answer import LoopAnswer, json_text, loop_writes_answer, native_text, settle, stream_loop_call
from reactgraph.protocol.prompts import (
    ANSWER_REQUEST, FINAL_ONLY_REQUEST, REFORMAT_REQUEST, TOOL_ARGS_REQUEST, TOOL_REQUIRED_REQUEST, VALUE_SET_REQUEST,
)
from reactgraph.providers.content_calls import recover_content_tool_calls
from reactgraph.providers.reasoning import REASONING_KEY, separate_reasoning
from reactgraph.engine.state import AgentState, ToolCallRequest
from reactgraph.engine.state import LoopFinishReason, StepRecord, selection_in_force
from reactgraph.answer.synthesis import summarize_steps
from reactgraph.tools.runner import holds_no_data
from reactgraph.core.usage import sum_usage, usage_of
from reactgraph.nodes.stall import (  # noqa: F401 (detect_stall re-exported: its home before)
    StepOutcomes, brought_observation, detect_stall, stall_check, step_outcomes_fold,
)
from reactgraph.policy.parts import names_record
from reactgraph.policy.value_sets import next_request
from reactgraph.nodes.call_checks import (
    action_from_content_call, mark_repeats, mark_schema_echoes, mark_unasked, new_call_id, normalize_tool_calls,
)

logger = logging.getLogger(__name__)


def _final_update(engine: Engine, state: AgentState, text: str, reason: LoopFinishReason,
                  signalled: bool = False) -> dict[str, Any]:
    """State update for an answer the loop is ready to give; an empty answer is replaced
    by an answer made of the successful observations (or, when there are none, the step
    summary), so a run never ends with nothing to say. ``draft_answer`` keeps only the
    model's own words (``None`` for none), which is all synthesis is shown. The ``answer``
    signal is sent unless ``signalled`` (an answer that streamed sent it before it started)."""
    draft = text if text.strip() and reason != "raw_content" else None
    if not text.strip():
        steps = state.get("steps", [])
        language = turn_language(state)
        shown = engine.answering_steps(steps, state.get("query", ""), state.get("messages", []))
        text = (observation_answer(state.get("query", ""), shown, descriptions=engine.tool_descriptions,
                                   language=language)
                if any(not step.get("error") for step in steps)
                else summarize_steps(steps, phrase("empty_answer", language), language))
    if not signalled:
        emit(AnswerSignalled())
    return {"pending_final": text, "answer": text, "finish_reason": reason, "draft_answer": draft}


def covered(steps: list[StepRecord], named: tuple[str, ...],
            takes: Callable[[str], Collection[str]] | None = None,
            answers: Callable[[StepRecord], bool] | None = None) -> bool:
    """Whether the turn's successful observations cover the question: some call
    succeeded with data (:func:`~reactgraph.tools.runner.holds_no_data`: a "not found" or empty
    result covers nothing), and every value the question names (:meth:`Engine.named_values`:
    ids, enum values, e-mails, dates) was passed in the arguments of such a call — except a
    word value (no digit: ``low``, ``fail``) that none of those calls' tools takes (``takes``:
    tool name → its argument enum values): it says what kind of data is asked for, and a tool
    without that filter ("Which spare parts are low on stock?" → the low-stock list) answers it.

    With ``answers`` (:meth:`Engine.answers_question`), a call that passes an enum value no
    one gave ("high" for a question that writes "高") answers no question: the value may stand
    for another, so the loop goes on to the model instead of showing that call's result as
    the answer (SPEC R13.12)."""
    done = [step for step in steps if not step.get("error") and not holds_no_data(step.get("observation"))
            and (answers is None or answers(step))]
    passed = [safe_json(step.get("tool_args")) for step in done]
    if not passed:
        return False
    offered = {value for step in done for value in takes(str(step.get("tool_name") or ""))} if takes else None

    def needed(value: str) -> bool:
        return offered is None or any(char.isdigit() for char in value) or value in offered

    def passed_in(value: str, args: str) -> bool:  # a date without a year ("--03-05") is any year's
        return (value[1:] if value.startswith("--") else value) in args

    return all(any(passed_in(value, args) for args in passed) for value in named if needed(value))


def pending_parts(state: AgentState) -> list[str]:
    """The tools of a question's parts (``part_tools``, chosen per part by selection) that
    have not brought data this turn: a part without data keeps the question uncovered, and
    the next loop call offers the first of them and requires a call (:func:`offered_tools`)."""
    parts = state.get("part_tools")
    if not parts:  # one part (the usual question): nothing to read the turn's steps for
        return []
    done = {step.get("tool_name") for step in state.get("steps", []) if not step.get("error")}
    return [name for name in parts if name not in done]


def current_part(state: AgentState) -> tuple[str, tuple[str, ...]] | None:
    """The part of a question of several parts that the next loop call answers: the first
    whose tool (``part_tools``) has not brought data, as ``(tool name, the values that part is
    about)`` (``part_values``: those it names, or the previous part's when it refers back;
    empty when it is about none); ``None`` when the question has one part or every part has
    data."""
    pending = pending_parts(state)
    if not pending:
        return None
    tools = list(state.get("part_tools") or ())
    values = list(state.get("part_values") or ())
    index = tools.index(pending[0])
    return pending[0], tuple(values[index]) if index < len(values) else ()


def next_value_set(engine: Engine, state: AgentState) -> tuple[str, str] | None:
    """The next call a question that lists several values for one tool's argument needs
    (:mod:`reactgraph.policy.value_sets`: "the weather in Boston and in San Francisco", "for
    10, 20 and 30 years"): ``(tool name, the question rewritten for the first value no call
    passed)``, read from the turn's successful calls with data. ``None`` when
    ``AgentSettings.answer_when_covered`` is off, the question was cut into parts of
    different tools (``part_tools``), no call ran yet, or every listed value was passed."""
    if not engine.settings.answer_when_covered or state.get("part_tools"):
        return None
    calls = [(str(step.get("tool_name") or ""), step.get("tool_args"))
             for step in state.get("steps", []) if not step.get("error") and not holds_no_data(step.get("observation"))]
    if not calls:
        return None
    found = next_request(state.get("query", ""), calls)
    return found if found is not None and found[0] in engine.tools else None


def value_set_request(engine: Engine, state: AgentState) -> HumanMessage | None:
    """The request that goes with a loop call for the next value set (:func:`next_value_set`):
    the question rewritten for that value, so that a model that writes the first value it
    reads writes the one still missing; ``None`` when no such call is due."""
    found = next_value_set(engine, state)
    return None if found is None else HumanMessage(VALUE_SET_REQUEST.format(tool_name=found[0], request=found[1]))


def part_seen(state: AgentState, seen: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The ids besides its own values a loop call may pass (``seen``, from
    :meth:`~reactgraph.engine.query_values.QueryValues.seen_ids`): none when the call answers a
    part of the question that names a record of its own (or takes the previous part's:
    :func:`current_part`, :func:`~reactgraph.policy.parts.names_record`) — "are CNC-3's parts
    low?" is about CNC-3, not about a machine an earlier call's result listed; else ``seen``."""
    part = current_part(state)
    if seen is not None and part is not None and any(names_record(value) for value in part[1]):
        return ()
    return seen


def required_values(engine: Engine, tool_name: str, named: tuple[str, ...]) -> tuple[str, ...]:
    """The values of ``named`` that a required argument of ``tool_name`` takes (its schema's
    ``required``, :meth:`~reactgraph.tools.values.ArgumentValues.fits`), in order: what a call
    for a part of a question that names no value of its own may be offered first."""
    required = set(engine.args_schema(tool_name).get("required") or ())
    arguments = [argument for argument in engine.values.arguments.get(tool_name, ()) if argument.argument in required]
    return tuple(value for value in named if any(argument.fits(value) for argument in arguments))


def offered_tools(engine: Engine, state: AgentState, stalled: bool) -> tuple[list[Any], bool, tuple[str, ...]]:
    """The tools a loop call offers, whether it requires a call of one of them, and the values
    their arguments are offered first (and, under ``refuse_unasked_ids``, only):

    * none when the loop is stalled (answer only);
    * for a question of several parts, the tool of the first part still without data
      (:func:`current_part`), a call required, with that part's values (when the part is about
      none, the question's values its tool cannot go without: :func:`required_values`, so no
      other part's value fills an optional filter): every part of the question gets its own
      data, each call the values of its own part;
    * for a question that lists several values for one argument of a tool that ran, while
      one of them was not passed (:func:`next_value_set`), that tool, a call required, with
      the values of the question rewritten for it (the call also gets
      :func:`value_set_request`);
    * else the turn's selected tools (every tool once some tool ran when the question's
      values chose them, ``chosen_by_values``), a call required when the model was asked
      for one (``tool_required``) and none ran yet, with the question's values.
    """
    query = state.get("query", "")
    named = engine.named_values(query)
    if stalled:
        return [], False, named
    part = current_part(state)
    if part is not None:
        name, values = part
        return engine.tools_for([name], query), True, values or required_values(engine, name, named)
    value_set = next_value_set(engine, state)
    if value_set is not None:
        name, request = value_set
        return engine.tools_for([name], query), True, engine.named_values(request)
    return (engine.tools_for(selection_in_force(state), query),
            bool(state.get("tool_required")) and not state.get("steps"), named)


def _shortcut(engine: Engine, state: AgentState, config: RunnableConfig, iteration: int,
              fold: HistoryFold[StepOutcomes, StepRecord] | None = None) -> dict[str, Any] | None:
    """The loop's answer without a model call, or ``None`` to call the model:

    * ``AgentSettings.answer_when_covered`` and the last model call's tool calls made the
      observations :func:`covered` (no follow-up taken in since): ``finish_reason: "covered"``;
    * the loop is stalled and synthesis runs: ``"stalled"`` at once (the answer-only call's
      text would never reach synthesis).
    """
    steps = state.get("steps", [])
    previous = iteration - 1
    fresh = bool(steps) and steps[-1].get("iteration") == previous and state.get("progress_iteration", 0) < previous
    query = state.get("query", "")

    def answers(step: StepRecord) -> bool:
        return engine.answers_question(step, query, state["messages"], thread_of(config), steps)

    if engine.settings.answer_when_covered and fresh and not pending_parts(state) and covered(
            steps, engine.named_values(query), engine.tool_values, answers) and next_value_set(engine, state) is None:
        return {**_final_update(engine, state, "", "covered"), "pending_tool_calls": []}
    if engine.synthesizes(config) and stall_check(engine, state, iteration, fold, thread_of(config)):
        return {**_final_update(engine, state, "", "stalled"), "pending_tool_calls": []}
    return None


def needs_tool_call(engine: Engine, state: AgentState, answer: str, tools: list[Any]) -> bool:
    """Whether a final answer must not be accepted before a tool runs (SPEC R13.1):
    ``AgentSettings.require_tool_data`` is on, tools are offered, none ran this turn and the
    model was not asked already; and either the question names a value a tool accepts or lists
    (an id, a line, an enum value, a date: whatever the answer says about it is the tools'
    data), or some tool shares a word with the question and the answer states an id, date or
    number (other than a single digit) the question does not."""
    if not engine.settings.require_tool_data or not tools or state.get("steps") or state.get("tool_required"):
        return False
    query = state.get("query", "")
    if engine.named_values(query):
        return True
    if not any(score > 0 for _, score in engine.ranker.rank(query)):
        return False
    asked = set(extract_values(query))
    return any(informative(value) and value not in asked for value in extract_values(answer, skip_list_markers=True))


def may_need_tool_call(engine: Engine, state: AgentState, tools: list[Any]) -> bool:
    """Whether :func:`needs_tool_call` may refuse the answer of the call about to be made,
    whatever it says: the parts of its rule known before the call."""
    if not engine.settings.require_tool_data or not tools or state.get("steps") or state.get("tool_required"):
        return False
    query = state.get("query", "")
    return bool(engine.named_values(query)) or any(score > 0 for _, score in engine.ranker.rank(query))


def loop_answer(engine: Engine, state: AgentState, config: RunnableConfig, structured: bool,
                tools: list[Any]) -> LoopAnswer | None:
    """Where the answer of the loop call about to be made streams, under
    ``synthesis="auto"`` when the loop writes the answer (:mod:`reactgraph.answer.loop_answer`);
    ``None`` for a call made whole, as under ``"always"``."""
    if not loop_writes_answer(engine.settings, state, engine.synthesizes(config), structured):
        return None
    return LoopAnswer(hold=may_need_tool_call(engine, state, tools))


class LLMCallNative:
    """The native-mode loop call (see the module docstring). ``structured``: the graph has
    a ``response_format`` (synthesis always writes its answer)."""

    def __init__(self, engine: Engine, structured: bool = False) -> None:
        self.engine = engine
        self.structured = structured
        self.outcomes = step_outcomes_fold()

    async def __call__(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        iteration = state.get("iteration", 0) + 1
        shortcut = _shortcut(self.engine, state, config, iteration, self.outcomes)
        if shortcut is not None:
            return shortcut
        stalled = stall_check(self.engine, state, iteration, self.outcomes, thread_of(config))
        emit(ThinkingStarted(iteration=iteration))
        query = state.get("query", "")
        tools, forced, named = offered_tools(self.engine, state, bool(stalled))
        messages = await self.engine.loop_input(state, config)
        if stalled:
            messages.append(HumanMessage(FINAL_ONLY_REQUEST))
        elif forced and (request := value_set_request(self.engine, state)) is not None:
            messages.append(request)
        thread = thread_of(config)
        seen = part_seen(state, self.engine.seen_ids(query, state["messages"], thread))
        model = self.engine.native_model(tools, named, final_only=bool(stalled), seen=seen, tool_required=forced)
        answer = None if stalled or forced else loop_answer(self.engine, state, config, self.structured, tools)
        try:
            response = await (call_model(model, messages, config) if answer is None
                              else stream_loop_call(model, messages, config, answer, native_text))
        except Exception as exc:
            if not forced:
                raise
            # A provider that refuses the forced choice (llama.cpp answers 400 to some values) is
            # asked again without it: the request message still asks for a tool call.
            logger.warning("the forced tool call was refused, asking without forcing it: %s", exc)
            model = self.engine.native_model(tools, named, seen=seen)
            response = await call_model(model, messages, config)
        if not isinstance(response, AIMessage):
            response = AIMessage(content=message_text(response))
        if self.engine.profile.content_tool_calls and tools:  # calls written in the content
            response = recover_content_tool_calls(response, {tool.name for tool in tools}, new_call_id)
        response, requests = normalize_tool_calls(response, self.engine.call_ids(state["messages"], thread))
        if self.engine.message_name:
            response.name = self.engine.message_name
        requests = mark_schema_echoes(requests, self.engine)
        requests = mark_repeats(mark_unasked(requests, self.engine, query, seen, state["messages"], thread),
                                state.get("steps", []),
                                self.engine.settings.refuse_repeated_calls, self.engine.repeat_changes_something)
        reasoning = separate_reasoning(response) or (message_text(response) if requests else "")
        emit(ThinkingDone(iteration=iteration, reasoning=reasoning if self.engine.settings.show_reasoning else ""))
        update: dict[str, Any] = {
            "messages": [response],
            "iteration": iteration,
            "usage": usage_of(response),
            "pending_tool_calls": requests,
        }
        if stalled:  # final answer only: whatever came back ends the loop, tool calls dropped
            update["pending_tool_calls"] = []
            if requests:
                update["messages"] = [AIMessage(content=message_text(response), id=response.id,
                                                response_metadata=response.response_metadata)]
            update.update(_final_update(self.engine, state, "" if requests else message_text(response), "stalled"))
        elif not requests and needs_tool_call(self.engine, state, message_text(response), tools):
            update["messages"] = [response, HumanMessage(TOOL_REQUIRED_REQUEST)]
            update["tool_required"] = True
        elif not requests:
            update.update(_final_update(self.engine, state, message_text(response), "final_answer",
                                        signalled=answer is not None and answer.started))
        return settle(answer, update)


class LLMCallJSON:
    """The JSON-mode loop call (see the module docstring). ``structured``: the graph has
    a ``response_format`` (synthesis always writes its answer)."""

    def __init__(self, engine: Engine, structured: bool = False) -> None:
        self.engine = engine
        self.structured = structured
        self.outcomes = step_outcomes_fold()

    @staticmethod
    async def _call(model: Any, messages: list[BaseMessage], config: RunnableConfig,
                    answer: LoopAnswer | None) -> AIMessage:
        """One call: whole, or streamed with a final answer's text sent as it is decoded."""
        if answer is None:
            return await call_model(model, messages, config)
        return await stream_loop_call(model, messages, config, answer, json_text)

    async def _invoke(self, messages: list[BaseMessage], config: RunnableConfig,
                      answer: LoopAnswer | None = None) -> AIMessage:
        if self.engine.abilities.json_mode:
            try:
                return await self._call(self.engine.json_model(json_format=True), messages, config, answer)
            except Exception:  # provider refused response_format: ask again without it
                pass
        return await self._call(self.engine.json_model(json_format=False), messages, config, answer)

    async def _invoke_constrained(
        self, messages: list[BaseMessage], config: RunnableConfig, action_format: dict[str, Any],
        answer: LoopAnswer | None = None,
    ) -> tuple[AIMessage, bool]:
        """The call with the action schema; when it fails, the plain call. Returns the
        response and whether the provider refused the schema
        (:meth:`~reactgraph.providers.ProviderProfile.refuses_schema`)."""
        try:
            response = await self._call(
                self.engine.json_model(json_format=True, response_format=action_format), messages, config, answer
            )
            return response, False
        except Exception as exc:  # refused, or cut off at the output cap: ask again unconstrained
            rejected = self.engine.profile.refuses_schema(exc)
            if rejected:
                logger.warning("the provider refused the action schema, plain JSON mode for the rest of the run: %s", exc)
        return await self._invoke(messages, config, answer), rejected

    async def _tool_first(
        self, messages: list[BaseMessage], config: RunnableConfig, tools: list[Any], named: tuple[str, ...],
        answer_first: bool, seen: tuple[str, ...] | None = None,
    ) -> tuple[str, dict[str, int], AIMessage]:
        """The action in two constrained calls (``json_action="tool_first"``, SPEC R13.1):
        first the choice alone — a tool name or ``final_answer``, as an enum best first
        (the answer first when the last call brought a new observation) — then that
        tool's arguments (named values first; ids as :meth:`Engine.seen_ids` allows) or
        the answer text.

        Returns:
            The action as the one-call wire format (JSON text), the summed usage, and
            the last response (for its id and metadata).

        Raises:
            Whatever a model call raises (the caller falls back to one unconstrained call).
        """
        kind = self.engine.abilities.schema_output
        choices = [tool.name for tool in tools]
        choices = [ANSWER_CHOICE, *choices] if answer_first else [*choices, ANSWER_CHOICE]
        usage: dict[str, int] = {}

        async def ask(prompt: list[BaseMessage], schema: dict[str, Any]) -> tuple[dict[str, Any], AIMessage]:
            response_format = schema_response_format(kind, schema, name="react_action_step")
            response = await call_model(self.engine.json_model(json_format=True, response_format=response_format),
                                        prompt, config)
            usage.update(sum_usage(usage, usage_of(response)))
            return extract_json(message_text(response)) or {}, response

        choice = ANSWER_CHOICE
        if len(choices) > 1:
            picked, response = await ask(messages, choice_schema(choices))
            choice = str(picked.get("next", ANSWER_CHOICE))
        if choice in self.engine.tools:
            tool = self.engine.tools[choice]
            args_schema = self.engine.offered_args(tool, named, seen)
            args, response = await ask([*messages, HumanMessage(TOOL_ARGS_REQUEST.format(tool_name=choice))], args_schema)
            action = {"type": "tool_call", "reasoning": "", "tool_name": choice, "tool_args": args}
        else:
            cap = self.engine.abilities.max_output_tokens
            answer_schema = {"type": "object", "properties": {"answer": {"type": "string", **(
                {"maxLength": cap * 3 // 4} if cap else {})}}, "required": ["answer"]}
            written, response = await ask([*messages, HumanMessage(ANSWER_REQUEST)], answer_schema)
            action = {"type": "final_answer", "reasoning": "", "answer": str(written.get("answer", ""))}
        return safe_json(action), usage, response

    async def __call__(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        iteration = state.get("iteration", 0) + 1
        shortcut = _shortcut(self.engine, state, config, iteration, self.outcomes)
        if shortcut is not None:
            return shortcut
        stalled = stall_check(self.engine, state, iteration, self.outcomes, thread_of(config))
        emit(ThinkingStarted(iteration=iteration))
        query = state.get("query", "")
        thread = thread_of(config)
        seen = part_seen(state, self.engine.seen_ids(query, state["messages"], thread))
        tools, forced, named = offered_tools(self.engine, state, bool(stalled))
        messages = await self.engine.loop_input(
            state, config, lambda base: self.engine.json_system_prompt(tools, base, named, seen)
        )
        if stalled:
            messages.append(HumanMessage(FINAL_ONLY_REQUEST))
        elif forced and (request := value_set_request(self.engine, state)) is not None:
            messages.append(request)
        action_format = None if state.get("schema_rejected") else self.engine.action_format(tools, named, seen,
                                                                                           tools_only=forced)
        rejected = False
        usage: dict[str, int] | None = None
        raw: str | None = None
        streamed = None if stalled or forced else loop_answer(self.engine, state, config, self.structured, tools)
        if action_format is not None and self.engine.settings.json_action == "tool_first" and not forced:
            answer_first = brought_observation(state.get("steps", []), iteration - 1)
            try:
                raw, usage, response = await self._tool_first(messages, config, tools, named, answer_first, seen)
            except Exception as exc:  # refused or failed: one unconstrained call instead
                rejected = self.engine.profile.refuses_schema(exc)
                logger.warning("tool-first action failed, asking in one unconstrained call: %s", exc)
                response = await self._invoke(messages, config, streamed)
        elif action_format is None:
            response = await self._invoke(messages, config, streamed)
        else:
            response, rejected = await self._invoke_constrained(messages, config, action_format, streamed)
        raw = raw if raw is not None else message_text(response)
        thought = separate_reasoning(response)
        action = parse_action(raw, separate_reasoning_text=thought)
        if action.parse_failed:  # a native call format written instead of the JSON action
            action = action_from_content_call(raw, tools, thought) or action
        # Stored without provider tool calls: in JSON mode the content is the action. The
        # reasoning stays on it, for profiles that send it back.
        kept = {REASONING_KEY: response.additional_kwargs[REASONING_KEY]} if response.additional_kwargs.get(
            REASONING_KEY) else {}
        stored = AIMessage(content=raw, id=response.id, response_metadata=response.response_metadata,
                           name=self.engine.message_name, additional_kwargs=kept)
        update: dict[str, Any] = {
            "messages": [stored],
            "iteration": iteration,
            "usage": usage if usage is not None else usage_of(response),
            "pending_tool_calls": [],
        }
        if rejected:
            update["schema_rejected"] = True
        shown = action.reasoning if self.engine.settings.show_reasoning else ""
        if stalled:  # final answer only: whatever came back ends the loop
            emit(ThinkingDone(iteration=iteration, reasoning=shown))
            answer = action.answer if action.type == "final_answer" and not action.parse_failed else ""
            update.update(_final_update(self.engine, state, answer, "stalled"))
            return update
        if action.parse_failed:
            emit(ThinkingDone(iteration=iteration, reasoning=shown))
            failures = state.get("parse_failures", 0) + 1
            update["parse_failures"] = failures
            if failures > self.engine.settings.parse_retries:  # the reformat retries failed too: the raw content is the answer (R2.4)
                update.update(_final_update(self.engine, state, raw, "raw_content"))
            else:
                update["messages"] = [stored, HumanMessage(REFORMAT_REQUEST)]
            return settle(streamed, update)
        emit(ThinkingDone(iteration=iteration, reasoning=shown))
        if state.get("parse_failures"):  # a parsed action ends a run of failures
            update["parse_failures"] = 0
        if action.type == "tool_call":
            request: ToolCallRequest = {"id": new_call_id(), "name": action.tool_name or "", "args": action.tool_args}
            update["pending_tool_calls"] = mark_repeats(
                mark_unasked(mark_schema_echoes([request], self.engine), self.engine, query, seen, state["messages"],
                             thread), state.get("steps", []),
                self.engine.settings.refuse_repeated_calls, self.engine.repeat_changes_something,
            )
        elif needs_tool_call(self.engine, state, action.answer or "", tools):
            update["messages"] = [stored, HumanMessage(TOOL_REQUIRED_REQUEST)]
            update["tool_required"] = True
        else:
            update.update(_final_update(self.engine, state, action.answer, "final_answer",
                                        signalled=streamed is not None and streamed.started))
        return settle(streamed, update)

