"""A scripted chat model for unit tests: returns exactly the responses a case needs and
checks the provider protocol on every message list it is sent."""

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
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

from reactgraph.prompts import SYNTHESIS_SYSTEM
from reactgraph.protocol import check_protocol

Response = AIMessage | str | BaseException | Callable[[list[BaseMessage]], Any]


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


class ScriptedChatModel(BaseChatModel):
    """Plays ``responses`` in order (the last one repeats when ``repeat_last``).

    A response may be an ``AIMessage``, a string (content), an exception (raised), or a
    callable taking the messages and returning one of those. ``calls`` records every
    message list sent, ``call_kwargs`` the bound kwargs (tools, response_format), and
    ``stream_chunks`` how many chunks each streamed call produced, ``apis`` which model
    API served each call (``generate``, ``agenerate``, ``stream``, ``astream``). Every message list is
    checked with :func:`reactgraph.check_protocol`, so a protocol break fails the test.
    ``synthesis`` is the text (or exception) streamed for answer synthesis calls.
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
    delay: float = 0.0
    usage: dict[str, int] = Field(default_factory=lambda: {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15})
    cursor: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _next(self, messages: list[BaseMessage]) -> AIMessage:
        check_protocol(messages)
        self.calls.append(list(messages))
        if self.cursor < len(self.responses):
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

    def _respond(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> ChatResult:
        self.call_kwargs.append(kwargs)
        return ChatResult(generations=[ChatGeneration(message=self._next(messages))])

    def _generate(self, messages: list[BaseMessage], stop: Any = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        self.apis.append("generate")
        if self.delay:
            time.sleep(self.delay)
        return self._respond(messages, kwargs)

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None,
                         run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        self.apis.append("agenerate")
        if self.delay:
            await asyncio.sleep(self.delay)
        return self._respond(messages, kwargs)

    @staticmethod
    def _is_synthesis(messages: list[BaseMessage]) -> bool:
        return bool(messages) and str(messages[0].content).startswith(SYNTHESIS_SYSTEM)

    def _synthesis_chunks(self, messages: list[BaseMessage]) -> list[str]:
        check_protocol(messages)
        self.calls.append(list(messages))
        text = self.synthesis(messages) if callable(self.synthesis) and not isinstance(self.synthesis, BaseException) else self.synthesis
        if isinstance(text, BaseException):
            raise text
        words = text.split(" ")
        return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]

    def _chunks(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> Iterator[ChatGenerationChunk]:
        """What a streamed call yields, the same for ``stream`` and ``astream``: a loop call
        (streamed because a stream handler is attached) is one chunk; a synthesis call is
        one chunk per word, the last one carrying usage; ``FAIL_MIDWAY`` in the synthesis
        text breaks the stream after two chunks."""
        self.stream_kwargs.append(kwargs)
        if not self._is_synthesis(messages):
            yield ChatGenerationChunk(message=_as_chunk(self._next(messages)))
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
        if self.delay and not self._is_synthesis(messages):
            time.sleep(self.delay)
        yield from self._chunks(messages, kwargs)

    async def _astream(self, messages: list[BaseMessage], stop: Any = None,
                       run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        self.apis.append("astream")
        if self.delay and not self._is_synthesis(messages):
            await asyncio.sleep(self.delay)
        for chunk in self._chunks(messages, kwargs):
            yield chunk
