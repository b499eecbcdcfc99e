"""Agent settings: the knobs of one agent, in one dataclass."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reactgraph.tools.approval import ApprovalRule, check_rule
from reactgraph.engine.deadlines import ModelDeadline, resolve_deadline
from reactgraph.core.limits import UsageLimits

TOOL_SELECTION_THRESHOLD = 12
"""More registered tools than this triggers one selection call before the loop (SPEC R5.1)."""

TOOL_SELECTION_MAX = 6
"""Most tools a selection keeps (SPEC R5.1); ``reactgraph._TOOL_SELECTION_MAX`` is its public name."""

DURABILITY_MODES = ("sync", "async", "exit")
"""LangGraph's checkpoint durability modes, for :attr:`AgentSettings.durability`."""

OPTIONAL_ARGS = ("all", "named")
"""Which optional tool arguments a model is offered, for :attr:`AgentSettings.optional_args`."""

JSON_ACTIONS = ("single", "tool_first")
"""How a schema-capable model writes a JSON-mode action, for :attr:`AgentSettings.json_action`."""

GROUNDING_MODES = ("off", "report", "flag", "enforce")
"""What to do about numbers and ids in the answer that the trace does not hold (SPEC R13.1),
for :attr:`AgentSettings.grounding`."""

SYNTHESIS_MODES = ("always", "auto")
"""Which call writes the streamed answer, for :attr:`AgentSettings.synthesis`."""

AUTO_SYNTHESIS_STEPS = 4
"""Under ``synthesis="auto"``, a turn whose loop ran this many tool calls or more gets the
synthesis call anyway: a fresh answer written from the whole trace pays once the trace is
long (bench/calls.py: up to three tool calls the loop's own answer costs no more calls than
``create_agent``'s; a longer trace is where the seed's synthesis earns its call)."""

COMPACTION_HINTS = ("react_iteration", "planner_input", "step_dependency", "general")
"""The compaction prompts the context guard can use (SPEC R6.1)."""


def check_at_least(settings: object, **minimums: float) -> None:
    """The one check of a settings class's lower bounds.

    Raises:
        ValueError: ``"<name> must be at least <minimum>, got <value>"`` for the first
            field of ``minimums`` below its minimum.
    """
    for name, minimum in minimums.items():
        value = getattr(settings, name)
        if value < minimum:
            raise ValueError(f"{name} must be at least {minimum}, got {value}")


@dataclass(frozen=True)
class AgentSettings:
    """Settings of a :class:`~reactgraph.ReActAgent` / :func:`~reactgraph.create_react_graph`.

    Fields marked *safeguard* default to ``None``: the model's safeguard policy decides them
    (:mod:`reactgraph.policy.safeguards`: strict for a model whose abilities say ``small``, such as
    the embedded one; permissive for every other), and the agent's ``settings`` hold the values
    in force. Set one to override the policy.

    Attributes:
        max_iterations: Most model calls in the tool loop of one run (SPEC R2.6, default 50).
            Past it the run ends with a fallback answer built from the recorded steps.
        tool_timeout: Seconds one tool call may run before it becomes a timeout
            observation (SPEC R2.7). A synchronous tool keeps running in its worker
            thread after the timeout; only its result is discarded.
        model_attempts: Attempts per loop model call, first one included (SPEC R2.7).
            Only transient failures (connection errors, timeouts, HTTP 429 and 5xx) are retried.
        model_timeout: Seconds one model call may take, a streamed one until its last
            chunk (:mod:`reactgraph.engine.deadlines`; ``math.inf`` for no limit). A call past it
            fails with :class:`~reactgraph.ModelTimeoutError`, a transient failure: retried,
            then handed to a fallback model, counted by the circuit breaker. ``None``:
            ``$REACTGRAPH_MODEL_TIMEOUT``, else 300.
        model_first_token_timeout: Seconds a streamed model call (the answer synthesis)
            may wait for its first chunk. ``None``: ``$REACTGRAPH_MODEL_FIRST_TOKEN_TIMEOUT``,
            else 180.
        parse_retries: Reformat requests after unparseable model output (the one
            bad-output policy): the JSON loop's (SPEC R2.4; once more unparseable, the raw
            content is the answer) and each text level's of
            :func:`~reactgraph.structured_llm_call` run by the graph's nodes (R4.3, R4.4).
            Default 1, the SPEC's count; 0 sends none.
        retry_initial_delay: Seconds before the first retry; doubled on each retry.
        retry_max_delay: Upper bound of one retry delay, in seconds.
        synthesis_result_chars: Characters of each tool result shown to the synthesis
            call (SPEC R3.1, default 2,000).
        refuse_repeated_calls: A tool call with the same name and arguments as a call that
            already succeeded in this turn is not run again *when the tool may have side
            effects* (:func:`reactgraph.tools.runner.has_side_effects`: declared so, or it needs
            approval); the model gets an error observation pointing it to the earlier result.
            A repeat of a tool without side effects (a status, a queue, a clock) runs; when it
            returns the same observation as the last time, the model is told so and the call
            counts towards a stall (``stall_repeats``). Off: every repeat runs.
        refuse_unasked_ids: *Safeguard* (strict: on). When the question names identifiers an
            argument lists (string enum values with a digit: ``PO-103``), a tool call giving
            that argument another of them is not run unless the user or a tool result in the
            thread wrote it; the model gets an error observation naming the ids the question
            asks about (SPEC R13.1: a small model otherwise takes the first id its schema
            lists).
        observation_preview_chars: Characters of an observation put in ``iteration``
            events; the full observation stays in the result's steps.
        system_prompt: Domain instructions put at the top of the loop's system prompt
            (for example the demo plant's assistant persona). ``None`` uses a generic one.
        tool_selection: Run the pre-loop tool selection when more than
            ``tool_selection_threshold`` tools are registered (SPEC §5): ``None`` (the
            default) is the model's policy's (strict ``True``, permissive ``"auto"``:
            :data:`reactgraph.policy.safeguards.POLICY_DEFAULTS`); ``True`` with a
            selection call, ``False`` never, ``"auto"`` with a call only
            where it pays (bench/calls.py, bench/answer_quality.py): for a model marked
            ``small``, which finds the data only among few tools; a model not marked small
            gets every tool, ranked, in native mode when their schemas fit a quarter of the
            context budget, else the lexical ranking alone chooses (no call).
        tool_selection_threshold: Tool count above which selection runs (default
            :data:`TOOL_SELECTION_THRESHOLD`, 12).
        tool_selection_max: *Safeguard* (strict: 1, permissive: :data:`TOOL_SELECTION_MAX`, 6).
            Most tools a selection keeps.
        tool_selection_shortlist: Tools, lexically best first, shown to the selection call
            (SPEC R13.1; default 12; never fewer than ``tool_selection_max``; every tool when
            none shares a word with the question).
        synthesize: Whether the graph runs the streaming answer-synthesis node after
            the loop. ``ReActAgent.run`` always skips it; ``astream_events`` always runs it.
        synthesis: Which call writes the streamed answer, one of :data:`SYNTHESIS_MODES`,
            or ``None`` (the default): the policy decides
            (:data:`reactgraph.policy.safeguards.POLICY_DEFAULTS`: strict — a model marked
            ``small`` — ``"always"``, permissive — any other — ``"auto"``; measured in
            ``docs/costs.md``). ``"always"``: the loop's answer is never shown; one more streamed
            call writes the answer from the whole trace (SPEC §3). ``"auto"``: the loop's own
            final answer is the answer, streamed as it is decoded (native mode: a model call
            that carries no tool call; JSON mode: the ``answer`` field of a ``final_answer``
            action), and the synthesis call runs only where it adds something: after a stall
            or the iteration cap, with a ``response_format``, under ``grounding="enforce"``
            or ``answer_from_observations``, when the loop's answer fails
            :func:`~reactgraph.answer.fitness.answer_problems` — another language, a JSON
            value as the whole answer, an answer that begins mid-sentence… (it is withdrawn with an ``answer``
            ``reset`` event first), or after :data:`AUTO_SYNTHESIS_STEPS` tool calls or more.
            ``done`` and ``AgentResult.answer_source`` say which call wrote the answer.
        max_message_chars: Characters one message may have before the context guard cuts
            it with a ``[Truncated]`` marker (SPEC R6.1, default 50,000).
        context_window: The model's context window in tokens, overriding its abilities and
            profile for the context budget (SPEC R6.3); ``None`` keeps theirs.
        max_output_tokens: Output tokens reserved by the context budget, overriding the
            abilities and profile; ``None`` keeps theirs.
        compaction_hint: The compaction prompt, one of :data:`COMPACTION_HINTS`
            (``react_iteration``, the default, keeps the recent reasoning chain, the goal
            and critical data).
        keep_recent_messages: Recent messages LLM compaction keeps verbatim when they fit
            (default 6; a tool-call message and its results are kept together).
        stall_detection: When the loop is stuck (``stall_repeats`` model calls in a row that
            change nothing, or ``stall_failures`` in a row without a new successful
            observation) the loop ends with ``finish_reason: "stalled"`` instead of burning
            iterations to the cap: straight to synthesis when it runs, else one call that may
            only give the final answer (SPEC R13.1; default on).
        require_tool_data: An answer given before any tool ran this turn is not accepted when
            the question names a value a tool accepts or lists (an id, a line, an enum value, a
            date), or when it shares a word with a tool and the answer states figures or ids
            the question does not: the model is asked once more with a tool call required (SPEC
            R13.1). On for every model (a 1.5B model answered such questions from
            memory, every figure made up).
        stall_repeats: *Safeguard* (strict: 1, permissive: 3). Model calls in a row that
            change nothing — only the same call again with the same observation, the same
            error again, a repeat refused, or no call at all — that make a stall. A call with
            new arguments or another tool is an attempt, not a stall.
        stall_failures: *Safeguard* (strict: 2, permissive: 4). Model calls in a row without a
            new successful observation (attempts that all fail) that make a stall.
        answer_when_covered: *Safeguard* (strict: on). Once a successful observation's call
            passed every id the question names (or, when it names none, once a call succeeded),
            the loop goes straight to the answer instead of asking the model again: a small
            model adds nothing after it but a repeat.
        show_reasoning: *Safeguard* (strict: off). Whether the loop's own text (the model's
            reasoning beside its tool calls) is put in ``thinking`` events; a small model's
            is noise.
        json_action: How a model that takes a JSON schema (``schema_output``) writes a
            JSON-mode action: ``"single"`` (the default: one call constrained to the
            action schema) or ``"tool_first"`` (two small constrained calls: the choice of
            tool or answer as an enum best first, then the arguments or the answer; small
            grammars, the decision made before any free text, SPEC R13.1).
        optional_args: *Safeguard* (strict: ``"named"``, permissive: ``"all"``). Which
            optional tool arguments the model is offered (SPEC R13.1): ``"all"`` or ``"named"`` — only those the question names a value
            for (one of the argument's enum values, or a date for a date argument); the
            tool runs with its defaults for the rest. For small models, which fill every
            optional filter with the first value offered.
        grounding: *Safeguard* (strict: ``"enforce"``, permissive: ``"flag"``). After
            synthesis, check every number and id of the answer against the trace and the
            question (SPEC R13.1): ``"off"``; ``"report"`` (the result goes in ``done`` and
            ``AgentResult.grounding`` only); ``"flag"`` (the answer streams as written; values
            no tool returned are named in a note under it, so they are never shown as fact);
            ``"enforce"`` (an answer that fails is not shown: with ``grounding_check_first`` it
            is written in full and checked before it is shown — a client sees progress, then
            only the answer that stands — else it streams and is withdrawn with an ``answer``
            ``reset`` event; it is asked for once more with ``grounding_reask``, and finally
            replaced by one built from the observations themselves,
            :func:`~reactgraph.answer.grounding.observation_answer`). Under ``"enforce"`` an answer
            also fails when it is not in the question's language, holds a code fence, a tool
            call written out or a line twice.
        grounding_reask: *Safeguard* (strict: off, permissive: on). Under ``"enforce"``, an
            answer that fails the check is asked for once more with a stricter prompt before
            the observation answer replaces it (a small model's second try measured no better
            than the observation answer, at one more call).
        answer_from_observations: *Safeguard* (strict: on, permissive: off). When a tool call
            succeeded, the answer is built from the observations themselves
            (:func:`~reactgraph.answer.grounding.observation_answer`) without a synthesis call: for a
            model whose own answers rarely pass the check, that call only costs time.
        grounding_check_first: *Safeguard* (strict: on, permissive: off). Under
            ``"enforce"``, write the answer in full and check it before anything is shown (a
            client never sees a withdrawn draft); off, the answer streams and one
            that fails is withdrawn with an ``answer`` ``reset`` event and written again.
        grounding_derived: *Safeguard* (strict: off, permissive: on). A number the answer
            derives from two figures of the trace (their difference, sum, ratio or percent
            change, or one of them rounded) counts as grounded.
        lexical_gate: *Safeguard* (strict: on). With tool selection on, a question that shares no word with any
            tool (name, description, arguments, enum values, declared keywords; see
            :class:`~reactgraph.tools.ranking.ToolRanker`) and names no value a tool could take (an
            id, a date, a number) is offered no tools and no selection call is made: the model
            answers directly (SPEC R5.3, R13.1). One that names a value (a question in another
            language than the tools') goes to the selection call: the model chooses. The gate
            holds for any number of tools; with at most ``tool_selection_threshold`` of them
            (no selection call) a question naming values that only some tools take by their
            schemas is offered only those (:func:`reactgraph.nodes.select_tools.tools_taking_values`). For small models,
            which otherwise call some tool for a greeting; off by default, since a big
            model picks well from words the catalog does not contain.
        grounding_min_facts: *Safeguard* (strict: 2, permissive: 1). The facts of the tools' successful observations (ids, dates,
            numbers other than a single digit, not named in the question) an answer must
            pass on; one that passes on fewer (fewer when fewer exist) is *factless*,
            reported and, under ``"enforce"``, withdrawn like an ungrounded one.
        durability: When ``ReActAgent`` runs write checkpoints (with a checkpointer):
            ``"sync"`` (default): no tool starts before the checkpoint it resumes from is
            stored — LangGraph's ``"sync"`` (every superstep's checkpoint stored before the
            next starts) on most checkpointers; on those of ``open_persistence``, the tool
            step waits for its checkpoint and the checkpoint before a model step is
            committed with it (``reactgraph.persistence.checkpointing.run_durability``, one commit per
            iteration); ``"async"`` stores each checkpoint while the next superstep runs
            (a crash can lose the last step and run its tools again); ``"exit"`` only when
            the run ends (a crash loses the whole run). What the savers of
            ``open_persistence`` hold is committed within
            ``reactgraph.persistence.checkpointing.WRITE_HOLD_SECONDS`` (20 ms), when a step or a read
            needs it, or when the run ends, whichever comes first, in every mode but
            ``"exit"``.
        approval: Which tool calls a person must approve before they run (SPEC R13.3,
            :mod:`reactgraph.tools.approval`): tool name (or ``"*"`` for every other tool) →
            ``"always"``, ``"never"`` or a predicate over the call. Tools not listed
            follow their ``metadata["approval"]``, else never. A call that needs approval
            pauses the run with LangGraph's ``interrupt()`` (a checkpointer is needed).
        before_tool: Hooks run before every tool call, in order (:mod:`reactgraph.tools.hooks`):
            they may rewrite the call's arguments or reject it.
        after_tool: Hooks run after every tool call, in order: they may rewrite its result.
        limits: :class:`~reactgraph.UsageLimits` of one turn's loop (model calls, tool
            calls, tokens, cost); ``None`` for none but ``max_iterations``.
        fallbacks: Fallback models, tried in order when the model fails (
            :mod:`reactgraph.engine.fallbacks`): chat models, ``(model, abilities)`` pairs or
            :class:`~reactgraph.FallbackModel`\\ s; the agent's ``fallbacks`` argument adds
            to them.
        fallback_parse_failures: With fallback models, JSON-mode outputs in a row that
            could not be parsed after which the loop is handed to the next model; ``None``
            (the default) never. Counts before ``parse_retries`` ends the loop with the raw
            content, so only values up to ``parse_retries`` take effect.
        breaker_failures: Failed calls of one model within ``breaker_window`` seconds that
            open its circuit breaker (default 3): it is then skipped for
            ``breaker_cooldown`` seconds (default 30), then tried again by one call.
        breaker_window: See ``breaker_failures`` (seconds, default 60).
        breaker_cooldown: See ``breaker_failures``.
    """

    max_iterations: int = 50
    tool_timeout: float = 60.0
    model_attempts: int = 3
    model_timeout: float | None = None
    model_first_token_timeout: float | None = None
    parse_retries: int = 1
    retry_initial_delay: float = 0.5
    retry_max_delay: float = 8.0
    synthesis_result_chars: int = 2000
    observation_preview_chars: int = 4000
    refuse_repeated_calls: bool = True
    refuse_unasked_ids: bool | None = None
    system_prompt: str | None = None
    tool_selection: bool | str | None = None
    tool_selection_threshold: int = TOOL_SELECTION_THRESHOLD
    tool_selection_max: int | None = None
    tool_selection_shortlist: int = 12
    synthesize: bool = True
    synthesis: str | None = None
    max_message_chars: int = 50_000
    context_window: int | None = None
    max_output_tokens: int | None = None
    compaction_hint: str = "react_iteration"
    keep_recent_messages: int = 6
    durability: str = "sync"
    stall_detection: bool = True
    require_tool_data: bool = True
    stall_repeats: int | None = None
    stall_failures: int | None = None
    answer_when_covered: bool | None = None
    show_reasoning: bool | None = None
    json_action: str = "single"
    optional_args: str | None = None
    grounding: str | None = None
    grounding_min_facts: int | None = None
    grounding_derived: bool | None = None
    grounding_reask: bool | None = None
    grounding_check_first: bool | None = None
    answer_from_observations: bool | None = None
    lexical_gate: bool | None = None
    approval: Mapping[str, ApprovalRule] = field(default_factory=dict, hash=False)
    before_tool: Sequence[Callable[..., Any]] = field(default=(), hash=False)
    after_tool: Sequence[Callable[..., Any]] = field(default=(), hash=False)
    limits: UsageLimits | None = field(default=None, hash=False)
    fallbacks: Sequence[Any] = field(default=(), hash=False)
    fallback_parse_failures: int | None = None
    breaker_failures: int = 3
    breaker_window: float = 60.0
    breaker_cooldown: float = 30.0

    def __post_init__(self) -> None:
        check_at_least(self, max_iterations=1, tool_selection_shortlist=1, model_attempts=1,
                       parse_retries=0, max_message_chars=100)
        set_minimums = {"tool_selection_max": 1, "stall_repeats": 1, "stall_failures": 1, "grounding_min_facts": 0}
        check_at_least(self, **{name: low for name, low in set_minimums.items() if getattr(self, name) is not None})
        if self.tool_timeout <= 0:
            raise ValueError(f"tool_timeout must be positive seconds, got {self.tool_timeout}")
        for name in ("context_window", "max_output_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be a positive number of tokens, got {value}")
        if self.compaction_hint not in COMPACTION_HINTS:
            raise ValueError(f"compaction_hint must be one of {', '.join(COMPACTION_HINTS)}, got {self.compaction_hint!r}")
        if self.durability not in DURABILITY_MODES:
            raise ValueError(f"durability must be one of {', '.join(DURABILITY_MODES)}, got {self.durability!r}")
        if self.json_action not in JSON_ACTIONS:
            raise ValueError(f"json_action must be one of {', '.join(JSON_ACTIONS)}, got {self.json_action!r}")
        if self.optional_args is not None and self.optional_args not in OPTIONAL_ARGS:
            raise ValueError(f"optional_args must be one of {', '.join(OPTIONAL_ARGS)}, got {self.optional_args!r}")
        if self.tool_selection not in (None, True, False, "auto"):
            raise ValueError(f"tool_selection must be None (the policy decides), True, False or 'auto', got {self.tool_selection!r}")
        if self.synthesis is not None and self.synthesis not in SYNTHESIS_MODES:
            raise ValueError(f"synthesis must be one of {', '.join(SYNTHESIS_MODES)}, got {self.synthesis!r}")
        if self.grounding is not None and self.grounding not in GROUNDING_MODES:
            raise ValueError(f"grounding must be one of {', '.join(GROUNDING_MODES)}, got {self.grounding!r}")
        for name, rule in self.approval.items():
            check_rule(name, rule)
        for name in ("before_tool", "after_tool"):
            hooks = getattr(self, name)
            hooks = (hooks,) if callable(hooks) else tuple(hooks)
            if not all(callable(hook) for hook in hooks):
                raise ValueError(f"{name} must be a callable or a sequence of callables")
            object.__setattr__(self, name, hooks)
        if self.limits is not None and not isinstance(self.limits, UsageLimits):
            raise ValueError(f"limits must be a UsageLimits, got {type(self.limits).__name__}")
        check_at_least(self, breaker_failures=1, breaker_window=0.0, breaker_cooldown=0.0)
        if self.fallback_parse_failures is not None and self.fallback_parse_failures < 1:
            raise ValueError(f"fallback_parse_failures must be at least 1 or None, got {self.fallback_parse_failures}")
        object.__setattr__(self, "fallbacks", tuple(self.fallbacks))
        if self.keep_recent_messages < 0:
            raise ValueError(f"keep_recent_messages must not be negative, got {self.keep_recent_messages}")
        for name in ("model_timeout", "model_first_token_timeout"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and value > 0):  # NaN fails too
                raise ValueError(f"{name} must be positive seconds (inf for none), got {value!r}")

    @property
    def model_deadline(self) -> ModelDeadline:
        """The deadline of each model call (:mod:`reactgraph.engine.deadlines`): the settings'
        limits, each unset one from the environment, else its default.

        Raises:
            ValueError: An environment variable that is not positive seconds.
        """
        return resolve_deadline(self.model_timeout, self.model_first_token_timeout)

    @property
    def recursion_limit(self) -> int:
        """LangGraph supersteps allowed for one run, derived so that ``max_iterations`` is
        always reached first (SPEC R2.6): an iteration takes two supersteps (model node,
        tools), four when the context guard runs; five are allowed per iteration, plus the
        entry and exit nodes."""
        return self.max_iterations * 5 + 20
