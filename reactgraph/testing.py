"""Test helpers for users' own tests (and the project's): a scripted chat model that
returns exactly the replies a case needs and checks the provider protocol on every message
list it is sent, and :func:`check_protocol` itself.

The model tells the kinds of call apart by how the engine makes them, not by prompt text
(:data:`CALL_KINDS`): inside a graph by the node that makes the call, outside one by
LangGraph's ``nostream`` tag (every call but answer synthesis carries it, SPEC R3.3). So a test keeps working when a prompt's wording changes.

Example::

    model = ScriptedChatModel(responses=[AIMessage("", tool_calls=[tool_call("get_status", {"id": "PO-103"})]),
                                         "PO-103 is normal."],
                              synthesis="**PO-103** is normal.")
    result = await ReActAgent(model, [get_status]).run("PO-103?")
    assert model.kinds == ["tool_loop", "tool_loop"]
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

from reactgraph.protocol.messages import check_protocol
from reactgraph.engine.calls import CALL_KINDS, call_kind_of

__all__ = ["CALL_KINDS", "ScriptedChatModel", "call_kind", "call_kind_of", "check_protocol", "tool_call"]

Response = AIMessage | str | BaseException | Callable[[list[BaseMessage]], Any]


def call_kind(run_manager: Any = None) -> str:
    """The kind of a model call (one of :data:`CALL_KINDS`), from how the engine makes it.

    Inside a graph the node that makes the call decides (its ``langgraph_node`` metadata,
    read from ``run_manager`` or, for a call LangChain streams on its own because a stream
    handler listens and which gets no run manager, from the current runnable config).
    Outside a graph (``stream_answer``, a direct ``structured_llm_call``): a call tagged
    ``nostream`` is a structured call, any other is synthesis.
    """
    metadata = getattr(run_manager, "metadata", None)
    if metadata is None:
        metadata = (var_child_runnable_config.get() or {}).get("metadata")
    return call_kind_of(metadata, getattr(run_manager, "tags", None))


def tool_call(name: str, args: Any, call_id: str | None = None) -> dict[str, Any]:
    """A native tool call dict for scripting."""
    return {"name": name, "args": args, "id": call_id or f"call_{name}_{abs(hash(str(args))) % 10**8}", "type": "tool_call"}


def _as_chunk(message: AIMessage) -> AIMessageChunk:
    return AIMessageChunk(
        content=message.content,
        tool_call_chunks=[
            {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i, "type": "tool_call_chunk"}
            for i, c in enumerate(message.tool_calls)
        ],
        additional_kwargs=message.additional_kwargs,
        usage_metadata=message.usage_metadata,
    )


def _word_pieces(text: str) -> list[str]:
    """``text`` cut after each space (a streamed reply's pieces, joined back as it was)."""
    words = text.split(" ")
    return [word + (" " if i < len(words) - 1 else "") for i, word in enumerate(words)]


def _loop_chunks(message: AIMessage) -> list[AIMessageChunk]:
    """A streamed loop reply: its tool calls in the first chunk, a string content one word
    per chunk, the usage on the last one (added up, the chunks are ``message``)."""
    whole = _as_chunk(message)
    if not isinstance(message.content, str) or " " not in message.content:
        return [whole]
    pieces = _word_pieces(message.content)
    return [AIMessageChunk(content=piece, tool_call_chunks=whole.tool_call_chunks if i == 0 else [],
                           additional_kwargs=message.additional_kwargs if i == 0 else {},
                           usage_metadata=message.usage_metadata if i == len(pieces) - 1 else None)
            for i, piece in enumerate(pieces)]


class ScriptedChatModel(BaseChatModel):
    """Plays ``responses`` in order (the last one repeats when ``repeat_last``).

    A response may be an ``AIMessage``, a string (content), an exception (raised), or a
    callable taking the messages and returning one of those. ``calls`` records every
    message list sent, ``kinds`` the kind of each call (:data:`CALL_KINDS`),
    ``call_kwargs`` the bound kwargs (tools, response_format), and
    ``stream_chunks`` how many chunks each streamed call produced, ``apis`` which model
    API served each call (``generate``, ``agenerate``, ``stream``, ``astream``). Every message list is
    checked with :func:`reactgraph.check_protocol`, so a protocol break fails the test.
    ``synthesis`` is the text (or exception, or callable) streamed for answer synthesis
    calls. ``by_kind`` maps a kind to its own replies, played in order before ``responses``
    for calls of that kind (e.g. ``{"selection": [...]}``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    responses: list[Any] = Field(default_factory=list)
    synthesis: Any = "Synthesized answer."
    repeat_last: bool = False
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    call_kwargs: list[dict[str, Any]] = Field(default_factory=list)
    stream_chunks: list[int] = Field(default_factory=list)
    stream_kwargs: list[dict[str, Any]] = Field(default_factory=list)
    apis: list[str] = Field(default_factory=list)
    kinds: list[str] = Field(default_factory=list)
    by_kind: dict[str, list[Any]] = Field(default_factory=dict)
    delay: float = 0.0
    usage: dict[str, int] = Field(default_factory=lambda: {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15})
    cursor: int = 0

    def calls_except(self, kind: str) -> list[list[BaseMessage]]:
        """The message lists of the calls not of ``kind`` (e.g. every call but synthesis), in order."""
        return [messages for messages, made in zip(self.calls, self.kinds) if made != kind]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _next(self, messages: list[BaseMessage], kind: str) -> AIMessage:
        check_protocol(messages)
        self.calls.append(list(messages))
        self.kinds.append(kind)
        if self.by_kind.get(kind):
            response = self.by_kind[kind].pop(0)
        elif self.cursor < len(self.responses):
            response = self.responses[self.cursor]
            self.cursor += 1
        elif self.repeat_last and self.responses:
            response = self.responses[-1]
        else:
            raise AssertionError(f"scripted model ran out of responses after {self.cursor} calls")
        if callable(response) and not isinstance(response, BaseException):
            response = response(messages)
        if isinstance(response, BaseException):
            raise response
        if isinstance(response, str):
            response = AIMessage(content=response)
        if response.usage_metadata is None:
            response = response.model_copy(update={"usage_metadata": dict(self.usage)})
        return response

    def _respond(self, messages: list[BaseMessage], kwargs: dict[str, Any], run_manager: Any) -> ChatResult:
        self.call_kwargs.append(kwargs)
        return ChatResult(generations=[ChatGeneration(message=self._next(messages, call_kind(run_manager)))])

    def _generate(self, messages: list[BaseMessage], stop: Any = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        self.apis.append("generate")
        if self.delay:
            time.sleep(self.delay)
        return self._respond(messages, kwargs, run_manager)

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None,
                         run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        self.apis.append("agenerate")
        if self.delay:
            await asyncio.sleep(self.delay)
        return self._respond(messages, kwargs, run_manager)

    def _synthesis_chunks(self, messages: list[BaseMessage]) -> list[str]:
        check_protocol(messages)
        self.calls.append(list(messages))
        self.kinds.append("synthesis")
        text = self.synthesis(messages) if callable(self.synthesis) and not isinstance(self.synthesis, BaseException) else self.synthesis
        if isinstance(text, BaseException):
            raise text
        return _word_pieces(text)

    def _chunks(self, messages: list[BaseMessage], kwargs: dict[str, Any], kind: str) -> Iterator[ChatGenerationChunk]:
        """What a streamed call yields, the same for ``stream`` and ``astream``: a loop call
        (streamed by ``synthesis="auto"``, or because a stream handler is attached) is its
        tool calls and then one chunk per word of its content; a synthesis call is
        one chunk per word, the last one carrying usage; ``FAIL_MIDWAY`` in the synthesis
        text breaks the stream after two chunks."""
        self.stream_kwargs.append(kwargs)
        if kind != "synthesis":
            for piece in _loop_chunks(self._next(messages, kind)):
                yield ChatGenerationChunk(message=piece)
            return
        chunks = self._synthesis_chunks(messages)
        self.stream_chunks.append(len(chunks))
        for i, piece in enumerate(chunks):
            if isinstance(self.synthesis, str) and "FAIL_MIDWAY" in self.synthesis and i == 2:
                raise ConnectionError("stream broke")
            last = i == len(chunks) - 1
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece, usage_metadata=dict(self.usage) if last else None))

    def _stream(self, messages: list[BaseMessage], stop: Any = None,
                run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        self.apis.append("stream")
        kind = call_kind(run_manager)
        if self.delay and kind != "synthesis":
            time.sleep(self.delay)
        yield from self._chunks(messages, kwargs, kind)

    async def _astream(self, messages: list[BaseMessage], stop: Any = None,
                       run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        self.apis.append("astream")
        kind = call_kind(run_manager)
        if self.delay and kind != "synthesis":
            await asyncio.sleep(self.delay)
        for chunk in self._chunks(messages, kwargs, kind):
            yield chunk
