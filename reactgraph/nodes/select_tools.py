"""``select_tools``: pre-loop tool selection for large hubs (SPEC §5), hybrid (SPEC R13.1).

When more than ``tool_selection_threshold`` (12) tools are registered, the tools are first
ranked against the question lexically (:class:`~reactgraph.tools.ranking.ToolRanker`, BM25). The
``tool_selection_shortlist`` best go, best first, into one ``structured_llm_call`` that shows
the model a compact catalog — each tool's name and the first line of its description, about
80 characters, no parameter schemas — and asks for at most ``tool_selection_max`` (6) names
with the schema ``{"tools": [...]}`` (an enum in ranked order). Unknown names are dropped.
A clear lexical winner is added when the model left it out (and kept when the pick is cut
to the limit); the selection
is stored best first in ``selected_tools``, which drives both the prompt/binding of the loop
nodes and execution (a call to any other tool is an "unknown tool" observation).

With ``AgentSettings.tool_selection="auto"`` the selection call is made only for a model
marked ``small`` (measured to pay there: bench/README.md); any other model gets every tool
(ranked per question, :meth:`~reactgraph.engine.bindings.Engine.tools_for`) in native mode when their
schemas fit :data:`TOOLS_SHARE_OF_BUDGET` of the context budget, else the lexical ranking
alone chooses (:func:`hybrid_selection` with no pick).

The lexical gate (``AgentSettings.lexical_gate``, :func:`gate_closes`) offers no tool to a
question that shares no word with any tool but the common words of its language and names no
value a tool could take (a greeting, a question no tool serves, in any language; a bare year).
A question that shares no word but names a value words cannot place (an id, a number, a date:
"注文4411の状況は？" to English tools) is not decided by words: the model chooses among all
the tools (the shortlist is ranked by words, so it is every tool when none shares one).

Under the lexical gate (the strict policy) a hub of at most ``tool_selection_threshold`` tools
gets no selection call, but the gate still closes, and when the question names values that
only some tools take by their schemas (an e-mail, a UUID, a SKU of a tool's pattern, a date,
an enum word: :func:`tools_taking_values`) only those tools are offered — one of them when the
question's words tell none of them apart (:func:`words_choose_nothing`: "What's up with member
M00042?" goes to the tool the record is the subject of, not the loans list) — else, for a quoted
name, the tools that take free text (:func:`tools_taking_text`), else a clear lexical
winner alone when the selection keeps one tool (:func:`settled_without_model`): a small model given
every tool picks by the order it sees them, and a question in another language than the
tools' shares no word with any of them. Under ``require_tool_data`` the first loop call is
then required to call one of them (an answer before would be refused and asked again).

Selection never fails a run (R5.3): when the model's pick is empty, unparseable or the call
failed, the lexical top ``tool_selection_max`` tools are kept — every tool only when no tool
shares a word with the question.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from reactgraph.engine.bindings import RUN_NAME_SELECTION, Engine
from reactgraph.providers.abilities import ModelAbilities
from reactgraph.events import SelectingTools, emit
from reactgraph.answer.grounding import informative
from reactgraph.core.language import turn_language
from reactgraph.policy.parts import names_record, part_values, question_parts
from reactgraph.protocol.prompts import SELECTION_SYSTEM, SELECTION_USER
from reactgraph.tools.ranking import ToolRanker, catalog_line, tokenize
from reactgraph.tools.approval import changes_something
from reactgraph.tools.values import ValueReader, value_tokens, without_values
from reactgraph.engine.state import AgentState
from reactgraph.protocol.structured import structured_llm_call
from reactgraph.core.usage import sum_usage
from reactgraph.window.budget import context_budget
from reactgraph.window.tokens import estimate_tokens

logger = logging.getLogger(__name__)


def selection_schema(names: Sequence[str], limit: int) -> dict[str, Any]:
    """The selection schema: ``{"tools": [name, ...]}`` with the names as an enum, so a
    provider that constrains output to a schema can only write real names."""
    return {
        "title": "select_tools",
        "description": "Tools needed for the request.",
        "type": "object",
        "properties": {"tools": {"type": "array", "items": {"type": "string", "enum": list(names)}, "maxItems": limit}},
        "required": ["tools"],
    }


async def select_tool_names(
    llm: BaseChatModel,
    abilities: ModelAbilities,
    query: str,
    tools: Sequence[BaseTool],
    limit: int,
    config: RunnableConfig | None = None,
    reformat_retries: int = 1,
    fallbacks: Sequence[Any] = (),
) -> tuple[list[str] | None, dict[str, int]]:
    """Ask the model which tools the query needs (SPEC R5.1–R5.3).

    Args:
        llm: The agent's model.
        abilities: Its abilities (they decide the structured-output levels).
        query: The user's request.
        tools: The tools to choose from (the lexical shortlist), best first.
        limit: Most names to keep.
        config: RunnableConfig for the model calls.
        reformat_retries: Reformat requests per level after unparseable output
            (``AgentSettings.parse_retries``).
        fallbacks: Fallback models, as :func:`structured_llm_call` takes them.

    Returns:
        ``(names, usage)``: the valid, distinct names in the model's order, at most
        ``limit``, or ``None`` for "all tools" when the selection failed or named no known
        tool; and the token usage of the calls. Never raises.
    """
    names = [tool.name for tool in tools]
    catalog = "\n".join(catalog_line(tool) for tool in tools)
    messages = [
        SystemMessage(SELECTION_SYSTEM.format(limit=limit)),
        HumanMessage(SELECTION_USER.format(query=query, catalog=catalog)),
    ]
    usage: dict[str, int] = {}
    try:
        result = await structured_llm_call(
            llm, messages, selection_schema(names, limit), abilities=abilities, default_value=None, config=config,
            reformat_retries=reformat_retries, fallbacks=fallbacks,
        )
    except Exception as exc:  # R5.3: selection never fails a run
        logger.warning("tool selection failed, offering every tool: %s", exc)
        return None, usage
    usage = result.usage
    picked = result.value.get("tools") if isinstance(result.value, dict) else None
    if not isinstance(picked, list):
        return None, usage
    known = set(names)
    chosen: list[str] = []
    for name in picked:
        if isinstance(name, str) and name.strip() in known and name.strip() not in chosen:
            chosen.append(name.strip())
    return (chosen[:limit] or None), usage


TOOLS_SHARE_OF_BUDGET = 0.25
"""Under ``tool_selection="auto"`` a native model not marked small gets every tool when their
schemas take at most this share of the context budget (:func:`tools_fit`)."""


def tools_fit(tools: Sequence[BaseTool], budget: int, share: float = TOOLS_SHARE_OF_BUDGET) -> bool:
    """Whether the schemas of ``tools`` (as bound in native mode, estimated without a
    tokenizer: :func:`~reactgraph.window.tokens.estimate_tokens`) take at most ``share`` of
    ``budget`` tokens."""
    used = sum(estimate_tokens(json.dumps(convert_to_openai_tool(tool), ensure_ascii=False)) for tool in tools)
    return used <= budget * share


RELEVANT_SHARE = 0.5
"""A tool kept from the lexical ranking alone must score at least this share of the best
tool's score (words every tool shares, like a machine id in every enum, score a little)."""


def hybrid_selection(picked: list[str] | None, ranked: list[tuple[str, float]], limit: int) -> list[str] | None:
    """Merge the model's pick with the lexical ranking (SPEC R5.3, R13.1).

    Args:
        picked: The model's valid names (:func:`select_tool_names`), ``None`` for none.
        ranked: Every tool as ``(name, BM25 score)``, best first.
        limit: Most names to keep.

    Returns:
        The model's pick plus the lexically best tool when it scores strictly above every
        other, best first by lexical rank, cut to ``limit`` (so a clear lexical winner is
        always kept); when the model picked nothing, the lexical top ``limit`` tools scoring at least
        :data:`RELEVANT_SHARE` of the best score; ``None`` (every tool) when nothing
        was picked and no tool shares a word with the question.
    """
    best = ranked[0][1] if ranked else 0.0
    matching = [name for name, score in ranked if score > 0 and score >= best * RELEVANT_SHARE]
    if not picked:
        return matching[:limit] or None
    chosen = list(dict.fromkeys(picked))
    clear_best = matching and (len(ranked) == 1 or ranked[0][1] > ranked[1][1])
    if clear_best and matching[0] not in chosen:
        chosen.append(matching[0])
    position = {name: index for index, (name, _) in enumerate(ranked)}
    return sorted(chosen, key=lambda name: position.get(name, len(position)))[:limit]


def settled_without_model(ranked: list[tuple[str, float]], limit: int) -> list[str] | None:
    """The selection when no pick of the model can change it (a call that adds
    nothing is not made), else ``None``.

    With ``limit`` 1 and a clear lexical winner (it scores above 0 and strictly above every
    other tool), :func:`hybrid_selection` keeps that winner whatever the model picks, so the
    selection call is skipped (the strict policy's ``tool_selection_max`` is 1).
    """
    if limit == 1 and ranked and ranked[0][1] > 0 and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
        return [ranked[0][0]]
    return None


YEAR = re.compile(r"[12]\d{3}")
"""A bare number read as a year (1000–2999): it says when, not how much, so by itself it
chooses no tool that takes numbers ("Who won the world cup in 2014?")."""


def gate_closes(ranker: ToolRanker, query: str, language: str | None = None) -> bool:
    """Whether the lexical gate offers no tool to ``query`` (SPEC R13.1): nothing of the
    question is any tool's. The gate stays open when the question

    * names a value some tool's schema takes (:meth:`~reactgraph.tools.values.ValueReader.find`:
      an enum word, an e-mail, a UUID, a date for a date argument, a value of a pattern's or an
      example's shape; a quoted name when a tool takes free text), or an id, e-mail address or
      UUID whatever the schemas;
    * shares a word that can name its subject with a tool
      (:meth:`~reactgraph.tools.ranking.ToolRanker.shared_subjects`: not one of the common words
      of its language or the tools', unless the tool's name or keywords carry it): "Find a
      picnic spot in Miami" does not open it for "Find information about local fauna". A tool
      that cannot be called without a number (a required ``integer``/``number`` argument with
      no default: :meth:`~reactgraph.tools.values.ValueReader.needs_number`) shares none with a
      question that writes no number: "How to increase the population of deer?" does not open
      it for a growth model taking a birth rate;
    * names a number (not a single digit) that words cannot place: the question is in none of
      the tools' languages (or its language is unknown), so its words cannot match theirs
      ("注文4411の状況は？" to English tools: the model chooses); or some tool takes a number
      (an ``integer``/``number`` argument) and it is not a bare year (:data:`YEAR`). A date
      counts the same way as such a number.

    The rule reads no language of its own: the common words come from the language lists
    (:func:`~reactgraph.core.language.common_words`); a greeting in any language closes the gate.

    Args:
        ranker: The agent's ranker (its tools' documents, languages and values).
        query: The question.
        language: The question's language (``None``: unknown).

    Returns:
        True when the question is to be answered without tools.
    """
    values = ranker.values
    for found in values.find(query):
        if found.kind == "quoted" or any(values.takes(name, found.value) for name in ranker.names):
            return False
    tokens = value_tokens(query)
    written = any(token.kind in ("number", "date") for token in tokens)
    if any(words and (written or not values.needs_number(name))
           for name, words in ranker.shared_subjects(query, language).items()):
        return False
    unplaced = language is None or language not in ranker.languages
    numbers = any(values.takes_numbers(name) for name in ranker.names)
    for token in tokens:
        if not informative(token.value):
            continue
        if token.kind in ("id", "email", "uuid", "uri") or unplaced:
            return False
        if numbers and not YEAR.fullmatch(token.value):
            return False
    return True


def tools_taking_values(values: ValueReader, ranked: Sequence[tuple[str, float]], query: str) -> list[str] | None:
    """The tools chosen by the values ``query`` names, read from the tools' own schemas
    (:meth:`~reactgraph.tools.values.ValueReader.find`: a format, pattern, enum or examples'
    shape), whatever language the question is written in: the tools that take the most of its
    identifiers (an e-mail, a UUID, a SKU: :attr:`~reactgraph.tools.values.Found.identifier`),
    else of its other values (an enum word, a date), in ``ranked`` order. A quoted name
    chooses nothing (any free-text argument takes one).

    Args:
        values: What the tools' arguments take.
        ranked: Every tool as ``(name, score)``, best first.
        query: The question.

    Returns:
        The names, best first, when the values single out some of the tools but not all;
        ``None`` when they choose nothing (no value, or every tool takes as many).
    """
    names = [name for name, _ in ranked]
    found = [item for item in values.find(query) if item.kind != "quoted"]
    for group in ([item for item in found if item.identifier], [item for item in found if not item.identifier]):
        counts = {name: sum(values.takes(name, item.value) for item in group) for name in names}
        best = max(counts.values(), default=0)
        if best:
            chosen = [name for name in names if counts[name] == best]
            return chosen if len(chosen) < len(names) else None
    return None


def tools_taking_text(values: ValueReader, ranked: Sequence[tuple[str, float]], query: str) -> list[str] | None:
    """The tools that can take a quoted name the question writes (« Le Jardin d'hiver »,
    "Solaris"): those with an argument of free text (:attr:`~reactgraph.tools.values.ArgumentValues.free`),
    in ``ranked`` order, when only some tools have one — a tool whose every argument has a
    shape (an ISBN's pattern, an enum) cannot take a title, and a small model offered it makes
    one up.

    Args:
        values: What the tools' arguments take.
        ranked: Every tool as ``(name, score)``, best first.
        query: The question.

    Returns:
        The names, best first; ``None`` when the question quotes nothing, or every tool or
        none takes free text.
    """
    if not any(item.kind == "quoted" for item in values.find(query)):
        return None
    names = [name for name, _ in ranked
             if any(argument.free for argument in values.arguments.get(name, ()))]
    return names if 0 < len(names) < len(ranked) else None


class SelectTools:
    """Choose the tools of this turn (see the module docstring). Emits the ``phase`` event
    ``{phase: "selecting_tools", total_tools}`` when it runs a selection call; none is made
    when its outcome is settled without it (:func:`settled_without_model`)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        settings = self.engine.settings
        tools = list(self.engine.tools.values())
        few = len(tools) <= settings.tool_selection_threshold
        if not settings.tool_selection or (few and not settings.lexical_gate):
            return {}
        query = state.get("query", "")
        language = turn_language(state)
        ranked = self.engine.ranker.rank(query, language)
        if settings.lexical_gate and gate_closes(self.engine.ranker, query, language):
            return {"selected_tools": []}  # nothing of the question is any tool's: answer directly
        if few:  # no selection call; the values the question names may still single tools out
            chosen = tools_taking_values(self.engine.values, ranked, query)
            if not chosen:  # else a quoted name's tools, or a clear lexical winner as the selection would keep it
                settled = (tools_taking_text(self.engine.values, ranked, query)
                           or settled_without_model(ranked, settings.tool_selection_max))
                return {"selected_tools": settled} if settled else {}
            if len(chosen) > 1:  # several take the record: its words, or else the record's subject, choose
                chosen = self._record_only_choice(query, language) or self._reads_unless_named(chosen, query, language)
            # Whatever an answer says about a value a tool takes is that tool's data
            # (``require_tool_data``): the first loop call is asked for a call at once.
            return {"selected_tools": chosen, "chosen_by_values": True,
                    **({"tool_required": True} if settings.require_tool_data else {})}
        rank = lambda text: self.engine.ranker.rank(text, language)  # noqa: E731
        parts = question_parts(query, rank)
        if len(parts) > settings.tool_selection_max:
            return await self._by_part(parts, rank, config, language)
        settled = settled_without_model(ranked, settings.tool_selection_max)
        if settled is not None or self.engine.abilities.small:  # the ranking or a small model would decide
            record_only = self._record_only_choice(query, language)
            if record_only:
                return {"selected_tools": record_only}
        if settled is not None:
            return {"selected_tools": settled}
        if settings.tool_selection == "auto" and not self.engine.abilities.small:  # no call where none pays
            if self.engine.mode == "native" and tools_fit(tools, context_budget(self.engine.abilities, settings)):
                return {}
            return {"selected_tools": hybrid_selection(None, ranked, settings.tool_selection_max)}
        names, usage = await self._choose(query, ranked, settings.tool_selection_max, config)
        return {"selected_tools": names, "usage": usage} if usage else {"selected_tools": names}

    async def _choose(self, text: str, ranked: list[tuple[str, float]], limit: int,
                      config: RunnableConfig) -> tuple[list[str] | None, dict[str, int]]:
        """The tools for ``text`` (the question or one of its parts): settled by the ranking
        alone when it can be, else the model's pick merged with the ranking."""
        settings = self.engine.settings
        settled = settled_without_model(ranked, limit)
        if settled is not None:
            return settled, {}
        # Words rank the shortlist; when no tool shares one (a question in another language than
        # the tools'), they cannot, and the model is shown every tool.
        size = max(settings.tool_selection_shortlist, limit) if ranked and ranked[0][1] > 0 else len(ranked)
        shortlist = [self.engine.tools[name] for name, _ in ranked[:size]]
        emit(SelectingTools(total_tools=len(self.engine.tools)))
        llm, fallbacks = self.engine.structured_models()
        names, usage = await select_tool_names(
            llm, self.engine.abilities, text, shortlist, limit,
            {**config, "run_name": RUN_NAME_SELECTION}, reformat_retries=settings.parse_retries, fallbacks=fallbacks,
        )
        return hybrid_selection(names, ranked, limit), usage

    async def _by_part(self, parts: list[str], rank: Any, config: RunnableConfig,
                       language: str | None = None) -> dict[str, Any]:
        """A question that asks more things than ``tool_selection_max`` tools may answer: each
        part (:func:`~reactgraph.policy.parts.question_parts`) gets its own choice of the limit's
        number of tools, ranked on the part's own words and values (a part that refers back
        to the one before is ranked with that part's values too:
        :func:`~reactgraph.policy.parts.part_values`), so every part gets data (the strict
        policy's limit is one tool). A part whose words choose no tool for the record it names
        (:func:`words_choose_nothing`: "What's wrong with P-2") is chosen last, among the
        tools taking that record that no other part chose (:meth:`_unplaced_choice`).
        ``part_tools`` records each part's first tool, ``part_values`` the values that part
        is about and ``part_questions`` its text: the loop calls each part's tool with its own
        values and counts the question covered only when each of them brought data
        (:func:`~reactgraph.nodes.llm_call.pending_parts`); the answer's lead answers each part
        (:func:`~reactgraph.answer.lead.choose_lead`)."""
        usage: dict[str, int] = {}
        limit = self.engine.settings.tool_selection_max
        valued = list(zip(parts, part_values(parts, self.engine.named_values, language), strict=True))
        picks: list[list[str] | None] = [None] * len(parts)
        unplaced: list[int] = []

        async def ranked_choice(part: str, values: Sequence[str]) -> list[str] | None:
            """The part's tools, ranked on its words and the values it takes from the part before."""
            nonlocal usage
            inherited = [value for value in values if value not in self.engine.named_values(part)]
            text = " ".join([part, *inherited])
            names, part_usage = await self._choose(text, rank(text), limit, config)
            usage = sum_usage(usage, part_usage) if part_usage else usage
            return names

        for index, (part, values) in enumerate(valued):
            if words_choose_nothing(self.engine.ranker, part, values, language):
                unplaced.append(index)
            else:
                picks[index] = await ranked_choice(part, values)
        for index in unplaced:
            part, values = valued[index]
            picks[index] = self._unplaced_choice(values, {names[0] for names in picks if names})
            if picks[index] is None:  # no tool left: ranked as any other part
                picks[index] = await ranked_choice(part, values)
        chosen: list[str] = []
        firsts: dict[str, list[str]] = {}  # each part's first tool → the values of its parts
        texts: dict[str, list[str]] = {}  # … and the parts' texts
        for names, (part, values) in zip(picks, valued, strict=True):
            if names:
                chosen.extend(names)
                merged = firsts.setdefault(names[0], [])
                merged.extend(value for value in values if value not in merged)
                texts.setdefault(names[0], []).append(part)
        chosen = list(dict.fromkeys(chosen))
        update: dict[str, Any] = {"selected_tools": chosen or None, **({"usage": usage} if usage else {})}
        if len(firsts) > 1:
            update["part_tools"] = list(firsts)
            update["part_values"] = list(firsts.values())
            update["part_questions"] = [" ".join(joined) for joined in texts.values()]
        return update

    def _record_only_choice(self, query: str, language: str | None) -> list[str] | None:
        """The tool of a one-part question, written in a language the tools are described in,
        whose words choose none for the record it names (:func:`words_choose_nothing`: "What's
        wrong with air compressor P-2", "How is R-1 doing?"): the question is vague, and it is
        chosen as a multi-part question's such part is (:meth:`_unplaced_choice`), so neither a
        tie of the lexical ranking nor a small model's pick among the tools taking that record
        decides. ``None`` when the words do choose, no tool takes the record, or the question is
        in another language than the tools' — its words could not have chosen ("M00042さんが今
        借りている本は？" asks for the loans in words no English document holds), so the model
        chooses among the tools taking its record.

        Measured on the demo plant's tools (24, eight taking a machine id): such questions
        went by the ranking to the parts list or the comparison tool; on the bench domains'
        questions where the rule applies, it picks the expected tool in each.

        Args:
            query: The turn's question (one part).
            language: Its language (``None``: unknown).

        Returns:
            One tool name, or ``None``.
        """
        if language is not None and language not in self.engine.ranker.languages:
            return None  # its words cannot tell the tools apart in any case: the model chooses
        values = self.engine.named_values(query)
        if not words_choose_nothing(self.engine.ranker, query, values, language):
            return None
        return self._unplaced_choice(values, set())

    def _reads_unless_named(self, names: list[str], query: str, language: str | None) -> list[str]:
        """``names`` less the tools that change something
        (:func:`~reactgraph.tools.approval.changes_something`: a booking, a cancellation) whose
        words the question does not share, the values it names aside
        (:meth:`~reactgraph.tools.ranking.ToolRanker.shared_subjects`: a doctor's name is the
        booking tool's enum word and the free slots' too): a question that only
        names a record a booking tool also takes ("Em que ano nasceu a paciente P-91-2207?") asks
        to read it, and a small model offered the booking tool beside the reads calls it by its
        place in the list. All of ``names`` when that would leave none.

        Args:
            names: The tools the question's values chose, best first.
            query: The question.
            language: Its language (``None``: unknown).

        Returns:
            The tools to offer, best first."""
        ranker = self.engine.ranker
        named = {token for value in self.engine.named_values(query)
                 for tongue in {language, *ranker.languages} for token in tokenize(value, tongue)}
        shared = {name: words - named for name, words in ranker.shared_subjects(query, language).items()}
        policy = self.engine.settings.approval
        kept = [name for name in names if shared.get(name) or not changes_something(self.engine.tools.get(name), policy)]
        return kept or names

    def _unplaced_choice(self, values: Sequence[str], taken: set[str]) -> list[str] | None:
        """The tool of a part whose words choose none (:func:`words_choose_nothing`), without a
        model call: among the tools that take a record the part is about
        (:func:`~reactgraph.policy.parts.names_record`), that no other part chose first
        (``taken``: that part's data is already asked for) and that only read (a tool that changes
        something, :func:`~reactgraph.tools.approval.changes_something`, is never a default), a tool the record is the
        subject of (a required argument taking one value takes it) before one it only filters
        or lists, then registration order. ``None`` when no tool is left.

        Measured (bench/README.md, answer_quality, 2026-12-06): SmolLM2-135M asked to pick
        among the eight tools taking a machine id for "What's wrong with …" picked the
        comparison tool, passing the id twice."""
        records = [value for value in values if names_record(value)]
        policy = self.engine.settings.approval
        ranked: list[tuple[int, int, str]] = []
        for index, (name, tool) in enumerate(self.engine.tools.items()):
            if name in taken or changes_something(tool, policy):
                continue
            arguments = [argument for argument in self.engine.values.arguments.get(name, ())
                         if any(argument.fits(value) for value in records)]
            if not arguments:
                continue
            schema = self.engine.args_schema(name)
            required, properties = set(schema.get("required") or ()), schema.get("properties") or {}
            subject = any(argument.argument in required
                          and (properties.get(argument.argument) or {}).get("type") != "array" for argument in arguments)
            ranked.append((0 if subject else 1, index, name))
        return [min(ranked)[2]] if ranked else None


def words_choose_nothing(ranker: ToolRanker, part: str, values: Sequence[str], language: str | None) -> bool:
    """Whether the words of ``part`` (a part of a question, its values left out) choose no tool
    for the record it is about: it is about a record (one of ``values`` names one, an id or a
    date: :func:`~reactgraph.policy.parts.names_record`) and none of its words tells the tools
    taking such a record apart — each word is shared (a BM25 score above 0,
    :meth:`~reactgraph.tools.ranking.ToolRanker.scores`) by all of them or by none.
    "What's wrong with air compressor P-2" shares "compressor" only with a tool listing
    machines by kind, which takes no machine id; "What's going on with shipment S-4" shares
    "shipment" with every tool taking a shipment id. Ranked on the id, such tools tie but for
    what the id's letters and the documents' lengths make of it, so the part's tool is not
    chosen by its words.

    Args:
        ranker: The agent's ranker.
        part: The part's text.
        values: The values the part is about (its own and those it takes from the part before).
        language: The question's language (``None``: unknown).

    Returns:
        True when the part's tool is to be chosen by its record alone.
    """
    records = [value for value in values if names_record(value)]
    if not records:
        return False
    taking = [name for name in ranker.names if any(ranker.values.takes(name, value) for value in records)]
    for word in without_values(part).split():
        scores = ranker.scores(word, language)
        shared = sum(1 for name in taking if scores[name] > 0)
        if 0 < shared < len(taking):
            return False
    return True
