"""The graph state: what a run carries between nodes. Every field is JSON-friendly
(messages, dicts, lists, numbers, strings) so any LangGraph checkpointer can store it."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from langchain_core.messages import AnyMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph.message import _messages_delta_reducer
from langgraph.managed import RemainingSteps
from typing_extensions import NotRequired, TypedDict

from reactgraph.engine.pinning import merge_pinned
from reactgraph.core.limits import LimitReason
from reactgraph.core.usage import sum_usage

LoopFinishReason = Literal["final_answer", "stalled", "covered", "raw_content", "return_direct", "max_iterations",
                           "model_error", "storage_error", LimitReason]
"""How a turn's loop ended: the model's final answer; the loop stalled (SPEC R13.1); the
observations covered the question (``AgentSettings.answer_when_covered``); unparseable content
twice (R2.4); a ``return_direct`` tool; the iteration cap (R2.6); a model that kept failing
(R2.7); a checkpointer or store that failed; a usage limit (R13.3, :mod:`reactgraph.core.limits`).
A run's complete finish reason (paused, cancelled, failed) is :data:`reactgraph.agents.outcome.FinishReason`."""

class StepRecord(TypedDict):
    """One tool call of a turn as the graph state stores it (``AgentState.steps``; a DAG step's
    ``tool_steps``): a plain JSON-friendly dict, so every checkpoint, old or new, loads as one.
    :class:`reactgraph.Step` is its public form (:meth:`reactgraph.Step.from_record`), the
    ``step`` ``done`` event is made from it. Records written before a field existed lack it:
    readers use ``get`` for the ``NotRequired`` fields."""

    iteration: int
    """The loop iteration (1-based model call) that asked for the call."""
    tool_call_id: str
    """The call's id (generated in JSON mode)."""
    tool_name: str
    """The tool the model asked for."""
    tool_args: Any
    """The arguments it gave, as given (even when invalid)."""
    observation: str
    """What the model was shown."""
    error: str | None
    """Why the call failed; ``None`` when it succeeded."""
    elapsed: float
    """Seconds the call took."""
    refused: NotRequired[str | None]
    """Why the engine refused the call without running it (a repeat, an id nobody asked for …)."""
    ran: NotRequired[bool]
    """Whether the tool ran (a refused or answered-again call did not; the usage limits count runs)."""
    unchanged: NotRequired[bool]
    """A repeated call that returned what the same call returned last time."""
    approval: NotRequired[str | None]
    """``approved``, ``edited`` or ``rejected`` when a person decided on the call."""
    artifact: NotRequired[dict[str, Any] | None]
    """A rich artifact the tool returned (:class:`reactgraph.Artifact` as a dict)."""
    return_direct: NotRequired[bool]
    """The tool's result is the turn's answer (a ``return_direct`` tool that succeeded)."""
    model: NotRequired[str]
    """The model that asked for the call (only with fallback models)."""
    requested_args: NotRequired[Any]
    """What the model asked for when a person edited the arguments (a repeat of it is this call)."""
    repeat_of_decided: NotRequired[str]
    """The call id of the earlier decided call this repeat was answered from."""


RESET: dict[str, Any] = {"__reset__": True}
"""Write this to ``steps`` or ``usage`` to clear them at the start of a turn."""


def append_steps(left: list[StepRecord] | None, writes: Any) -> list[StepRecord]:
    """Reducer of ``steps`` (a ``DeltaChannel``'s: ``writes`` is a batch of writes, oldest
    first): each write's step records are appended; a :data:`RESET` write clears the list.
    Parallel tool tasks each write their records in the same superstep. Folding batches one
    by one or at once gives the same list, as ``DeltaChannel`` requires."""
    steps = list(left or [])
    for write in writes:
        if write == RESET:
            steps = []
        else:
            steps.extend(write or [])
    return steps


KEPT_TURNS = 20
"""Earlier turns :attr:`AgentState.earlier_turns` keeps."""

TURN_ANSWER_CHARS = 1200
"""Characters of an earlier turn's answer kept in :attr:`AgentState.earlier_turns`."""


def add_turns(left: list[dict[str, str]] | None, right: Any) -> list[dict[str, str]]:
    """Reducer of :attr:`AgentState.earlier_turns`: appends, keeping the last :data:`KEPT_TURNS`."""
    turns = [*(left or []), *(right if isinstance(right, list) else [right])]
    return turns[-KEPT_TURNS:]


def add_usage(left: dict[str, int] | None, right: Any) -> dict[str, int]:
    """Reducer of ``usage``: sums token counts key by key; :data:`RESET` zeroes them."""
    return sum_usage() if right == RESET else sum_usage(left, right)


def add_model_usage(left: dict[str, dict[str, int]] | None, right: Any) -> dict[str, dict[str, int]]:
    """Reducer of ``model_usage``: each model's usage summed key by key (models in the
    order they first answered); :data:`RESET` empties it."""
    if right == RESET:
        return {}
    merged = dict(left or {})
    for model, usage in (right or {}).items():
        merged[model] = sum_usage(merged.get(model), usage)
    return merged


class InputState(TypedDict):
    """What a caller passes in, the same shape as LangGraph's prebuilt agent:
    ``{"messages": [...]}``. The last human message is the turn's query."""

    messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer)]
    """The conversation, merged as ``add_messages`` merges it (by id; ``RemoveMessage``,
    ``REMOVE_ALL_MESSAGES``). Kept in LangGraph's ``DeltaChannel`` (beta in LangGraph 1.2):
    a checkpoint stores the messages written since the last one, not the whole history
    (docs/checkpoints.md); LangGraph gives new messages their ids before they are
    saved, so a replayed state has the same ids."""
    pinned: NotRequired[Annotated[list[str], merge_pinned]]
    """Ids of messages (of this input or earlier) that every context compaction must keep
    (SPEC R6.2); the turn's query is pinned without being listed."""


class ToolCallRequest(TypedDict):
    """One tool call to run, as routed to ``execute_tools`` by ``Send``. The model node
    makes them from the assistant message and sends them at once; they are not state
    (the checkpoint holds the ``Send``s until the tool tasks end)."""

    id: str
    name: str
    args: Any
    """Arguments as the model gave them; a non-dict becomes an error observation."""
    error: NotRequired[str | None]
    """Set when the call is unusable before it runs (e.g. arguments that are not valid JSON)."""
    refused: NotRequired[str | None]
    """Why the engine refused to run the call (``"repeat"``: it repeated a successful call, or
    one a person already decided (R13.3);
    ``"unasked"``: it passed an id the question does not ask about, or a value no one wrote;
    ``"limit"``: a tool-call limit)."""
    note: NotRequired[str | None]
    """Added to the observation the model sees (a value no one wrote, under the permissive
    policy: :data:`~reactgraph.protocol.prompts.UNWRITTEN_NOTE`)."""
    repeat_of: NotRequired[dict[str, Any] | None]
    """For a repeat that runs: ``{"iteration", "digest"}`` of the same call's last
    outcome (:func:`~reactgraph.tools.runner.outcome_digest`); the tool node tells the model when
    the new outcome is the same."""


class AgentState(InputState, total=False):
    """The full state of one ReAct thread.

    ``messages`` is the conversation without the system prompt (the loop nodes prepend
    it on every model call, built from the tools of the current turn). The other fields
    describe the current turn and are reset when a new turn starts; the loop's internal ones
    (:data:`~reactgraph.nodes.start_turn.TURN_BOOKKEEPING`) are missing until the loop
    first sets them, which means their reset value.
    """

    query: str
    """The user's question of the current turn (the last human message when it started)."""
    language: str | None
    """The language of ``query`` (ISO 639-1), detected once when the turn starts
    (:func:`~reactgraph.core.language.detect_language`); ``None`` when it cannot be told. Every
    sentence the engine writes itself this turn is in it (:func:`~reactgraph.core.language.phrase`)."""
    mode: Literal["native", "json"]
    """Loop protocol, chosen from the model's abilities (SPEC R2.2)."""
    iteration: int
    """Model calls made by the tool loop in this turn."""
    selected_tools: list[str] | None
    """Names of the tools offered this turn; ``None`` means all (SPEC R5.2)."""
    pending_final: str | None
    """A final answer the model gave that has not been accepted yet (an injected
    follow-up may still suppress it, SPEC R7.4)."""
    parse_failures: int
    """Consecutive JSON-mode outputs that could not be parsed (SPEC R2.4)."""
    schema_rejected: bool
    """The provider refused a schema-constrained JSON-mode request in this turn; the rest of
    the turn's loop calls are sent without the action schema."""
    steps: Annotated[list[StepRecord], DeltaChannel(append_steps)]
    """Tool trace of this turn: one :class:`StepRecord` per tool call.
    A ``DeltaChannel`` like ``messages``: a checkpoint stores the records written since the
    last one, not the whole trace."""
    answer: str
    """The loop's brief answer (SPEC R2.10)."""
    finish_reason: LoopFinishReason | None
    """How the loop ended (see :data:`LoopFinishReason`)."""
    progress_iteration: int
    """The model call after which the loop last took in something new other than a tool
    result (a follow-up); stall detection counts from it (SPEC R13.1)."""
    tool_required: bool
    """The model answered with figures before any tool ran and was asked for a tool call:
the next loop call requires one, and it is asked only once a turn."""
    part_tools: list[str] | None
    """The tool chosen for each part of a question that asks several things
    (:func:`~reactgraph.policy.parts.question_parts`), when selection chose per part; the loop
    counts the question covered only when each brought data. ``None``: one part."""
    part_values: list[list[str]] | None
    """The values each part of ``part_tools`` is about, in the same order
    (:func:`~reactgraph.policy.parts.part_values`: those it names, or the previous part's when
    it refers back): that part's call is offered these (:func:`~reactgraph.nodes.llm_call.current_part`).
    ``None`` with ``part_tools``."""
    part_questions: list[str] | None
    """The text of each part of ``part_tools``, in the same order (the parts one tool answers
    joined): the answer's lead answers each part on its own
    (:func:`~reactgraph.answer.lead.choose_lead`). ``None`` with ``part_tools``."""
    chosen_by_values: bool
    """``selected_tools`` holds the tools the question's values chose
    (:func:`~reactgraph.nodes.select_tools.tools_taking_values`): they are offered for the
    turn's first call only; once a tool ran, every tool is (a result may name the value
    another tool takes: a job id to poll, an order to look up)."""
    draft_answer: str | None
    """The model's own final answer, when it gave one (``None`` when the loop ended at the
    cap, on a model error, with raw content, or empty): the only draft synthesis sees."""
    grounding: dict[str, Any] | None
    """The grounding check of the synthesized answer (SPEC R13.1): ``mode``, ``checked``
    (values checked), ``ungrounded`` (values found nowhere in the trace or question) and
    ``action`` (``kept``, ``reasked``, ``fallback``, or ``no_data`` under enforce when
    every tool call failed); ``None`` when off or not run."""
    error: str | None
    """Why the loop failed, when it did."""
    limit: dict[str, Any] | None
    """The usage limit that ended the loop (R13.3): ``reason``, ``limit``, ``max``,
    ``used``, ``tool`` and the turn's ``figures``; ``None`` when none did."""
    synthesis: str | None
    """The streamed, user-facing answer written by ``synthesize`` (SPEC R3.1); ``None``
    when synthesis was skipped."""
    answer_streamed: bool
    """Under ``AgentSettings.synthesis="auto"``: the loop's final answer was streamed as
    ``answer`` deltas as the model wrote it (no ``done`` yet); ``synthesize`` ends it."""
    answer_source: str | None
    """Which call wrote the answer shown: ``"loop"`` (the loop's own final answer, under
    ``synthesis="auto"``), ``"synthesis"`` (the synthesis call) or ``"observations"`` (made
    of the tools' results without a model call); ``None`` when no answer was streamed."""
    usage: Annotated[dict[str, int], add_usage]
    """Tokens summed over every model call of this turn, and the number of calls."""
    model: str | None
    """The model serving the turn's loop (its name): the agent's model, or the
    fallback model the loop was handed to; ``None`` before the first loop call."""
    model_usage: Annotated[dict[str, dict[str, int]], add_model_usage]
    """``usage`` per model (by name), each call counted under the model that answered it.
"""
    started_at: float
    """Wall-clock start of the turn (seconds since the epoch), for ``elapsed``."""
    structured_response: Any
    """The answer as an object of the caller's ``response_format``; only
    written when the graph was built with one."""
    earlier_turns: Annotated[list[dict[str, str]], add_turns]
    """The thread's earlier turns, oldest first, each ``{"question", "answer"}`` (the answer
    as the user saw it, cut to :data:`TURN_ANSWER_CHARS`); the last :data:`KEPT_TURNS` are
    kept. Synthesis sees them within its budget, so a follow-up's "that machine" is answered
    about the right thing."""
    pinned: Annotated[list[str], merge_pinned]
    """Ids of the pinned messages (each turn's query, injected follow-ups, ids the caller
    passed) that every compaction keeps (SPEC R6.2); kept here so the messages themselves
    stay as sent."""
    remaining_steps: RemainingSteps
    """Graph steps left before the run's ``recursion_limit`` (LangGraph's managed value,
    not stored); the loop ends gracefully before reaching it (SPEC R2.6)."""


class OutputState(TypedDict, total=False):
    """What the graph returns from ``invoke``/``ainvoke``: the conversation, the answers
    of both phases and the trace. The loop's internal bookkeeping (pending tool calls, the
    pending final answer, parse failures, the start time) stays in the checkpointed state
    only. Field meanings as in :class:`AgentState`."""

    messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer)]
    query: str
    mode: Literal["native", "json"]
    selected_tools: list[str] | None
    steps: Annotated[list[StepRecord], DeltaChannel(append_steps)]
    answer: str
    finish_reason: LoopFinishReason | None
    error: str | None
    limit: dict[str, Any] | None
    synthesis: str | None
    answer_source: str | None
    grounding: dict[str, Any] | None
    usage: Annotated[dict[str, int], add_usage]
    model: str | None
    model_usage: Annotated[dict[str, dict[str, int]], add_model_usage]
    iteration: int
    structured_response: Any


def selection_in_force(state: Any) -> list[str] | None:
    """The tool names a loop call of ``state`` may offer and run: the turn's ``selected_tools``
    (``None``: every tool), except that the tools the question's values chose
    (``chosen_by_values``) hold for the turn's first call only: once a tool ran, every tool
    may run (a result may name the value another tool takes)."""
    if state.get("chosen_by_values") and state.get("steps"):
        return None
    return state.get("selected_tools")
