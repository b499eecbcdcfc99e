"""How the engine runs tools: the LangGraph way.

Every tool call goes through LangGraph's own :class:`~langgraph.prebuilt.ToolNode`, invoked
by ``execute_tools`` with the one call of its ``Send`` task. So a tool behaves here exactly
as under ``create_react_agent``:

- ``interrupt()`` inside a tool pauses the run (``GraphInterrupt`` is never turned into an
  observation); the run is checkpointed and resumed with ``Command(resume=...)``;
- a returned ``Command`` is validated by ToolNode and applied by the graph (its ``update``,
  its ``goto``, ``graph=Command.PARENT`` for handoffs);
- ``InjectedState``, ``InjectedStore``, ``InjectedToolCallId`` and ``ToolRuntime``
  arguments are filled from the graph (state, store, context, stream writer, call id);
- tool output is ToolMessage content as LangGraph makes it (strings kept, content blocks
  kept, anything else JSON).

What the engine adds around that one mechanism: exceptions become observations (SPEC R2.7)
unless the caller chooses otherwise (``handle_tool_errors``), a timeout per call, and tools
returning an :class:`~reactgraph.Artifact` (SPEC R2.9).

Every call passes through ToolNode's ``wrap_tool_call`` / ``awrap_tool_call`` hook
(``ToolRunner._wrap`` / ``_awrap``), which sees the ``ToolCallRequest`` (the call, the graph
state, the ``ToolRuntime``) before the tool runs. That is the one place for steps around a
call, such as asking a human to approve it with ``interrupt()`` (R13.3): an ``interrupt()``
there pauses the run like one inside the tool, and the call can be changed
(``request.override``) or answered without running.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from dataclasses import dataclass
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest, ToolInvocationError
from langgraph.prebuilt.tool_node import _default_handle_tool_errors as LANGGRAPH_DEFAULT_ERRORS
from langgraph.types import Command

from reactgraph.core.language import NOT_FOUND_WORDS
from reactgraph.engine.dualmode import in_sync_run, is_async_only, run_in_daemon_thread
from reactgraph.tools.artifacts import Artifact
from reactgraph.tools.notation import fold
from reactgraph.tools.values import value_tokens

ToolErrorPolicy = bool | str | Callable[..., str] | type[Exception] | tuple[type[Exception], ...]
"""What ``handle_tool_errors`` accepts: the values of LangGraph's ``ToolNode``."""


@dataclass(frozen=True)
class ToolSource:
    """What a caller's ``tools`` argument gives the engine: the tools, the error policy and
    the ``wrap_tool_call`` / ``awrap_tool_call`` hooks of a LangGraph ``ToolNode`` passed in
    their place (:func:`tool_source`)."""

    tools: Sequence[Any]
    handle_tool_errors: ToolErrorPolicy | None = None
    wrap: Callable[..., Any] | None = None
    awrap: Callable[..., Any] | None = None


def tool_source(tools: Sequence[Any] | ToolNode | ToolSource,
                handle_tool_errors: ToolErrorPolicy | None = None) -> ToolSource:
    """The tools of ``tools``, which may be a list or, as LangGraph's prebuilt agent takes it,
    a ``ToolNode``: then its tools, its ``wrap_tool_call`` / ``awrap_tool_call`` hooks (they
    wrap every call, outside the engine's own steps) and its ``handle_tool_errors`` are taken.
    A node left at LangGraph's default error policy gets the engine's (every exception an
    observation, SPEC R2.7); ``handle_tool_errors`` given here wins over the node's.

    Args:
        tools: A sequence of tools (see :func:`prepare_tools`), a ``ToolNode``, or a
            :class:`ToolSource` already made (returned as it is).
        handle_tool_errors: The caller's error policy (``None``: not given).

    Returns:
        :class:`ToolSource`.
    """
    if isinstance(tools, ToolSource):
        return tools
    if not isinstance(tools, ToolNode):
        return ToolSource(list(tools), handle_tool_errors)
    policy = getattr(tools, "_handle_tool_errors", LANGGRAPH_DEFAULT_ERRORS)
    if handle_tool_errors is not None or policy is LANGGRAPH_DEFAULT_ERRORS:
        policy = handle_tool_errors
    return ToolSource(list(tools.tools_by_name.values()), policy,
                      getattr(tools, "_wrap_tool_call", None), getattr(tools, "_awrap_tool_call", None))


def prepare_tools(tools: Sequence[Any]) -> tuple[list[Any], list[dict[str, Any]]]:
    """Split what a caller passes as tools, as ``create_react_agent`` accepts them.

    Args:
        tools: LangChain ``BaseTool`` objects, plain functions (made tools by LangGraph's
            ``ToolNode``, name and schema from the signature and docstring) and provider
            tool dicts (e.g. ``{"type": "web_search_preview"}`` or an OpenAI function
            spec): bound to the model in native mode, run by the provider, never by the
            engine.

    Returns:
        ``(runnable, provider)``: the tools the engine runs (``BaseTool`` or functions), and
        the provider tool dicts.

    Raises:
        TypeError: An item is none of these.
    """
    runnable: list[Any] = []
    provider: list[dict[str, Any]] = []
    for item in tools:
        if isinstance(item, dict):
            provider.append(item)
        elif isinstance(item, BaseTool) or callable(item):
            runnable.append(item)
        else:
            raise TypeError(f"a tool must be a LangChain BaseTool, a function or a provider tool dict, got {type(item).__name__}")
    return runnable, provider


def outcome_digest(observation: Any, error: Any) -> str:
    """A short fingerprint of one tool call's outcome (its error, else its observation), to
    tell whether a repeated call returned the same as the last time without
    carrying the whole text in a ``Send`` payload."""
    text = f"error:{error}" if error else f"ok:{observation if observation is not None else ''}"
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


_EMPTY_RESULTS = frozenset({"", "[]", "{}", "()", "null", "none", '""', "''", "n/a"})
_NOTHING_FOUND = re.compile(
    r"\b(?:not[\s_-]+found|no\s+such\b|nothing\s+(?:was\s+)?(?:found|matche[sd])|does\s*n[o']t\s+exist|do\s*n[o']t\s+exist"
    r"|no\s+(?:\S+\s+){0,3}(?:found|match(?:es|ed|ing)?)\b|no\s+results?\b|0\s+results?\b|not\s+(?:a\s+)?(?:known|recogni[sz]ed)"
    r"|unknown\s+(?!error\b)\w+|(?:could|can)\s*(?:n[o']t|not)\s+(?:be\s+)?(?:find|found|locate[d]?)"
    r"|unable\s+to\s+(?:find|locate))",
    re.IGNORECASE,
)
_WORD_CUES = [cue for cues in NOT_FOUND_WORDS.values() for cue in cues if re.search(r"[A-Za-z\u00c0-\u024f\u0400-\u04ff]", cue)]
_NOT_FOUND_WORDS = re.compile("|".join(rf"(?<!\w){re.escape(fold(cue))}(?!\w)" for cue in _WORD_CUES))
_NOT_FOUND_WRITTEN = re.compile("|".join(  # scripts that join words without spaces: wherever written
    re.escape(cue) for cues in NOT_FOUND_WORDS.values() for cue in cues if cue not in _WORD_CUES))
_NONE_FOR = re.compile(r"(?:no|0|zero)\s+[^\W\d_]+\b", re.IGNORECASE)
_HAS_NONE = re.compile(r"\b(?:has|have|had)\s+(?:no|0|zero)\s+[^\W\d_]+\b", re.IGNORECASE)
_NOT_FOUND_FLAGS = ("found", "exists")
"""Keys of a JSON reply that say whether the record asked for was found: ``{"found": false}``."""
NOTHING_FOUND_MAX_CHARS = 400
"""Longest observation :func:`holds_no_data` reads as a "nothing found" reply: a longer one
holds data beside its miss."""


def holds_no_data(observation: Any) -> bool:
    """Whether a successful tool result holds none of the data asked for (SPEC R13.1): it is
    empty (``""``, ``[]``, ``{}``, ``null``), or it is short (at most
    :data:`NOTHING_FOUND_MAX_CHARS`, three lines) and its first line only says the value
    was not found or is unknown ("No ticket 104233 found.", "Unknown SKU 'AB/999'. Valid
    SKUs: …", "user not found", "We could not locate card M9.", or the same in another language of
    :data:`reactgraph.core.language.NOT_FOUND_WORDS`: "Artikel nicht gefunden", "該当なし"), or it
    is a JSON object flagging the record as not found (``{"found": false}``). Such a result does not cover the question
    (``answer_when_covered``): the model may call again with a corrected argument, and an
    answer made of it says that nothing was found. A result that states an absence as a
    finding ("No alarms between 2026-01-01 and 2026-01-07") holds data; a one-line reply that
    says there is none for exactly one value, not a bare number ("No visits booked on 2026-12-10.", "No tickets
    assigned to a.b@example.org.", "0 articles match 'lamp'.", "Card M00318 has no books on loan.") holds none.

    Args:
        observation: The observation text (or any object; ``None`` is empty).

    Returns:
        True when the result holds no data.
    """
    text = str(observation if observation is not None else "").strip()
    if text.casefold() in _EMPTY_RESULTS:
        return True
    lines = [line for line in text.splitlines() if line.strip()]
    if len(text) > NOTHING_FOUND_MAX_CHARS or len(lines) > 3:
        return False
    if (_NOTHING_FOUND.search(lines[0]) or _NOT_FOUND_WORDS.search(fold(lines[0]))
            or _NOT_FOUND_WRITTEN.search(lines[0]) or _flagged_not_found(text)):
        return True
    # "No visits booked on 2026-12-10." / "0 articles match 'lamp'." / "Card M7 has no books on
    # loan.": none for the one value asked (an id, an e-mail, a date, a quoted text); an absence
    # over a span ("No orders were late between A and B") or under a condition ("No parts below
    # 10%.") is a finding.
    if len(lines) != 1:
        return False
    quoted = re.findall(r"'[^'\n]{1,80}'|\"[^\"\n]{1,80}\"", lines[0])
    lead = _NONE_FOR.match(lines[0])
    if lead is not None:
        tokens = [token for token in value_tokens(lines[0]) if token.start >= lead.end()]
        return len(tokens) + len(quoted) == 1 and (bool(quoted) or tokens[0].kind != "number")
    if _HAS_NONE.search(lines[0]) is None:
        return False
    # the record that has none is named by any word with a digit (an id of no generic shape: M00318)
    named = [word.strip(".,;:!?()") for word in lines[0].split() if any(char.isdigit() for char in word)]
    return len(named) + len(quoted) == 1 and not (named and named[0].replace(".", "").isdigit())


def _flagged_not_found(text: str) -> bool:
    """Whether ``text`` is a JSON object whose flag of :data:`_NOT_FOUND_FLAGS` is ``false``
    (``{"found": false, "isbn": "978-…"}``): the record asked for is not there."""
    if not text.startswith("{"):
        return False
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return isinstance(parsed, dict) and any(parsed.get(key) is False for key in _NOT_FOUND_FLAGS)


SIDE_EFFECTS_KEY = "side_effects"
"""``tool.metadata`` key by which a LangChain tool declares whether it changes anything
(``True``) or only reads (``False``); see :func:`has_side_effects`."""


def has_side_effects(tool: BaseTool | None) -> bool | None:
    """Whether running ``tool`` twice with the same arguments may change something twice
    (SPEC R13.1), as the tool declares it.

    Read from ``tool.metadata``: reactgraph's own ``"side_effects"`` (a bool) wins; else MCP's
    tool annotations, which the MCP loader puts there (``readOnlyHint: true`` or
    ``idempotentHint: true`` → no; ``destructiveHint: true`` or ``readOnlyHint: false`` →
    yes, MCP's defaults for a tool that states nothing else).

    Args:
        tool: The tool (``None`` for an unknown tool).

    Returns:
        ``True`` / ``False`` as declared, ``None`` when the tool declares nothing (the
        caller decides; :func:`reactgraph.nodes.call_checks.mark_repeats` runs an undeclared
        tool's repeat unless the call needs approval).
    """
    metadata = (getattr(tool, "metadata", None) or {}) if tool is not None else {}
    declared = metadata.get(SIDE_EFFECTS_KEY)
    if isinstance(declared, bool):
        return declared
    if metadata.get("readOnlyHint") is True or metadata.get("idempotentHint") is True:
        return False
    if metadata.get("destructiveHint") is True or metadata.get("readOnlyHint") is False:
        return True
    return None


def describe_tool_error(exc: Exception) -> str:
    """The default error policy (SPEC R2.7): every exception a tool raises becomes the
    observation ``Error: <what went wrong>``; arguments that fail the tool's schema are
    listed field by field with the value given (``equipment_id: 'PO-109' is not a valid value —
    Input should be 'PO-101', …``; injected arguments left out), so a model can tell the
    user that the thing it asked about does not exist."""
    if isinstance(exc, ToolInvocationError):
        problems = [
            f"{'.'.join(str(part) for part in error.get('loc', ())) or 'arguments'}: "
            + (f"{error['input']!r} is not a valid value — " if isinstance(error.get("input"), str | int | float) else "")
            + str(error.get("msg"))
            for error in (exc.filtered_errors if exc.filtered_errors is not None else exc.source.errors())
        ]
        return "Error: invalid arguments — " + "; ".join(problems)
    return f"Error: {type(exc).__name__}: {exc}"


def error_of(message: ToolMessage) -> str | None:
    """The error a tool message reports (``status="error"``), without the ``Error: ``
    prefix; ``None`` for a successful result."""
    if message.status != "error":
        return None
    text = message.content if isinstance(message.content, str) else str(message.content)
    return text.removeprefix("Error: ") or "tool reported an error"


class _ArtifactAware(BaseTool):
    """The tool as ``execute_tools`` invokes it: the wrapped tool, with an
    :class:`~reactgraph.Artifact` returned directly turned into a ``ToolMessage`` whose
    content is the artifact's note and whose ``artifact`` is the artifact (SPEC R2.9).
    Injection is unaffected: ToolNode computes it from the registered tool by name."""

    inner: BaseTool

    def _run(self, *args: Any, **kwargs: Any) -> Any:  # every call goes through invoke/ainvoke
        raise NotImplementedError

    @staticmethod
    def _message(output: Any, call: Any) -> Any:
        if isinstance(output, Artifact) and isinstance(call, dict) and call.get("type") == "tool_call":
            return ToolMessage(output.note(), artifact=output, tool_call_id=call["id"], name=call.get("name"))
        return output

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._message(self.inner.invoke(input, config, **kwargs), input)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._message(await self.inner.ainvoke(input, config, **kwargs), input)


class ToolRunner:
    """Runs one tool call through LangGraph's ``ToolNode`` (see the module docstring).

    Args:
        tools: The tools to run (``BaseTool`` objects or functions).
        handle_tool_errors: ``ToolNode``'s error policy. Default
            :func:`describe_tool_error`: every exception becomes an error observation
            (SPEC R2.7). ``False`` lets exceptions fail the run, as LangGraph does.
        wrap, awrap: The caller's ``wrap_tool_call`` / ``awrap_tool_call`` hooks (from a
            ``ToolNode`` passed as the tools, :func:`tool_source`): each call goes through
            them as through that node's, and what they let run goes through the engine's
            step. As in LangGraph, an async run with only ``wrap`` calls it with a sync
            ``execute``.

    Raises:
        ValueError: Two tools share a name.
    """

    def __init__(self, tools: Sequence[Any], handle_tool_errors: ToolErrorPolicy | None = None, *,
                 wrap: Callable[..., Any] | None = None, awrap: Callable[..., Any] | None = None) -> None:
        self.user_wrap, self.user_awrap = wrap, awrap
        self.node = ToolNode(
            list(tools),
            handle_tool_errors=describe_tool_error if handle_tool_errors is None else handle_tool_errors,
            wrap_tool_call=self._wrap,
            awrap_tool_call=self._awrap if awrap is not None or wrap is None else None,
        )
        if len(self.node.tools_by_name) != len(tools):
            names = [getattr(t, "name", getattr(t, "__name__", "")) for t in tools]
            twice = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"two tools are named {', '.join(map(repr, twice))}")
        self.tools: dict[str, BaseTool] = dict(self.node.tools_by_name)
        self._invoked = {
            name: _ArtifactAware(name=tool.name, description=tool.description, args_schema=tool.args_schema,
                                 return_direct=tool.return_direct, inner=tool)
            for name, tool in self.tools.items()
        }

    def _wrap(self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Any]) -> Any:
        def run(call: ToolCallRequest) -> Any:
            return execute(call.override(tool=self._invoked[call.tool_call["name"]]))

        return run(request) if self.user_wrap is None else self.user_wrap(request, run)

    async def _awrap(self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[Any]]) -> Any:
        async def run(call: ToolCallRequest) -> Any:
            return await execute(call.override(tool=self._invoked[call.tool_call["name"]]))

        return await (run(request) if self.user_awrap is None else self.user_awrap(request, run))

    async def run(self, call: dict[str, Any], config: RunnableConfig, timeout: float) -> ToolMessage | Command | list[Any]:
        """Run one tool call inside the current graph task.

        Args:
            call: A ``ToolCall`` dict (``name``, ``args``, ``id``, ``type``) naming a
                registered tool.
            config: The task's config (ToolNode reads the graph state, store and runtime
                through it).
            timeout: Seconds before the call counts as timed out. In a sync run the call
                runs in a worker thread (a tool with only an async implementation on its
                own event loop there).

        Returns:
            A ``ToolMessage`` answering the call, or what the tool returned for the graph
            to apply: a ``Command`` (validated by ToolNode), or a list of ``Command`` and
            ``ToolMessage``.

        Raises:
            GraphBubbleUp: ``interrupt()`` in the tool (``GraphInterrupt``), or a
                ``Command`` for a parent graph; the graph handles both.
            TimeoutError: The call did not finish in ``timeout`` seconds.
            Exception: What the tool raised, when the error policy does not handle it.
        """
        if in_sync_run() and is_async_only(self.tools[call["name"]]):  # its own loop in the worker thread
            output = run_in_daemon_thread(lambda: asyncio.run(self.node.ainvoke([call], config)), timeout)
        elif in_sync_run():
            output = run_in_daemon_thread(lambda: self.node.invoke([call], config), timeout)
        else:
            async with asyncio.timeout(timeout):  # no task of its own, unlike wait_for
                output = await self.node.ainvoke([call], config)
        if isinstance(output, dict):  # no Command: {"messages": [ToolMessage]}
            return output["messages"][0]
        items: list[Any] = []
        for item in output:
            items.extend(item["messages"] if isinstance(item, dict) else [item])
        return items[0] if len(items) == 1 else items
