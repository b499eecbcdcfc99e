"""Strict fake OpenAI-compatible servers, one per provider profile.

Each :class:`FakeProvider` serves ``POST /v1/chat/completions`` over real loopback HTTP
(uvicorn, :func:`tests.serving.running_server`) and behaves like its provider family:

* it **enforces** the family's request rules, answering a request that breaks one with the
  family's error status and a message (tool messages right after their call, unknown
  message fields, ``content: null``, reasoning replay required, response formats refused);
* it **writes** the family's typical quirky output (tool calls in the content in the
  family's format, empty or repeated call ids, reasoning fields, empty content, usage only
  in the last streamed chunk, tool calls streamed in pieces).

What it answers is scripted by a plan: the loop's n-th call (n = assistant messages in the
request) gets ``plan[n]``, a list of ``(tool, args)`` calls or the final answer text.
Structured calls (a forced function, a response format, or the structured instruction) get
``structured`` as JSON; the synthesis call (its system prompt) streams ``synthesis``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from langchain_core.tools import tool

from reactgraph.protocol.prompts import SYNTHESIS_SYSTEM
from reactgraph.protocol.structured import STRUCTURED_INSTRUCTION
from tests.serving import running_server

STATUS = {"CNC-001": "CNC-001: normal, 71% utilization", "CNC-003": "CNC-003: warning, W-1105 vibration rising"}


@tool
def get_equipment_status(equipment_id: str) -> str:
    """The state, utilization and alarms of one machine."""
    return STATUS.get(equipment_id, f"unknown equipment {equipment_id}")


@tool
def list_alarms() -> str:
    """Active alarms of the plant."""
    return "W-1105 on CNC-003: vibration rising"


PLANT_TOOLS = [get_equipment_status, list_alarms]
"""The two tools the plans of the tests call (the demo plant's in small)."""

Step = list[tuple[str, dict[str, Any]]] | str
Rule = Callable[[dict[str, Any]], str | None]

_STRUCTURED_MARK = STRUCTURED_INSTRUCTION.split("{")[0]
_OPENAI_MESSAGE_KEYS = {
    "system": {"role", "content", "name"},
    "developer": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"},
    "tool": {"role", "content", "tool_call_id"},
}


# ---------------------------------------------------------------------------- request rules


def protocol_rule(body: dict[str, Any]) -> str | None:
    """Every provider: each assistant tool call is answered by a tool message right after
    it, with its id, string content, nothing between; ids are non-empty and unique; no tool
    message without a call."""
    messages = body.get("messages", [])
    seen: set[str] = set()
    i = 0
    while i < len(messages):
        message = messages[i]
        if message.get("role") == "tool":
            return f"messages[{i}]: a tool message must follow an assistant message with tool_calls"
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        i += 1
        if not calls:
            continue
        for call in calls:
            call_id = call.get("id")
            if not call_id or call_id in seen:
                return f"messages[{i - 1}]: tool call id {call_id!r} is empty or used twice"
            seen.add(call_id)
            if i >= len(messages) or messages[i].get("role") != "tool" or messages[i].get("tool_call_id") != call_id:
                return f"messages[{i}]: expected the tool message answering {call_id!r}"
            if not isinstance(messages[i].get("content"), str):
                return f"messages[{i}]: tool message content must be a string"
            i += 1
    return None


def known_fields_rule(body: dict[str, Any]) -> str | None:
    """OpenAI: a message field the API does not know is refused."""
    for i, message in enumerate(body.get("messages", [])):
        extra = set(message) - _OPENAI_MESSAGE_KEYS.get(message.get("role"), set())
        if extra:
            return f"messages[{i}]: Unrecognized request argument supplied: {', '.join(sorted(extra))}"
    return None


def reasoning_replay_rule(body: dict[str, Any]) -> str | None:
    """DeepSeek thinking mode: every assistant message of a tool loop carries its reasoning back."""
    for i, message in enumerate(body.get("messages", [])):
        if message.get("role") == "assistant" and message.get("tool_calls") and not message.get("reasoning_content"):
            return f"Missing `reasoning_content` field in the assistant message at message index {i}"
    return None


def no_null_content_rule(body: dict[str, Any]) -> str | None:
    """Ollama and llama.cpp (older servers): ``content: null`` is refused."""
    for i, message in enumerate(body.get("messages", [])):
        if "content" in message and message["content"] is None:
            return f"messages[{i}]: invalid message content type: <nil>"
    return None


def refuse_format(kind: str) -> Rule:
    """A response format the server does not take: ``json_object``, ``json_schema`` or
    ``json_object_schema`` (``json_object`` with a ``schema``)."""

    def rule(body: dict[str, Any]) -> str | None:
        fmt = body.get("response_format") or {}
        shape = "json_object_schema" if fmt.get("type") == "json_object" and "schema" in fmt else fmt.get("type")
        return f"response_format {shape!r} is not supported" if shape == kind else None

    return rule


# ---------------------------------------------------------------------------- writing calls


def _args_text(args: dict[str, Any]) -> str:
    return json.dumps(args, ensure_ascii=False)


def write_calls(style: str, calls: list[tuple[str, dict[str, Any]]]) -> str:
    """Tool calls as a model writes them in its content, in one family's format."""
    if style == "tool_call_tag":
        return "\n".join(f'<tool_call>{{"name": "{n}", "arguments": {_args_text(a)}}}</tool_call>' for n, a in calls)
    if style == "bare_json":
        items = [{"name": n, "arguments": a} for n, a in calls]
        return json.dumps(items[0] if len(items) == 1 else items)
    if style == "mistral":
        return "[TOOL_CALLS]" + json.dumps([{"name": n, "arguments": a} for n, a in calls])
    if style == "python_tag":
        return "<|python_tag|>" + "; ".join(json.dumps({"name": n, "parameters": a}) for n, a in calls) + "<|eom_id|>"
    if style == "function_tag":
        return "".join(f"<function={n}>{_args_text(a)}</function>" for n, a in calls)
    raise ValueError(style)


@dataclass
class FakeProvider:
    """One provider family's strict fake server (see the module docstring).

    Attributes:
        profile: The reactgraph profile name this server stands for.
        rules: Request rules; the first that fails answers ``status`` with its message.
        status: The HTTP status of a refused request (llama.cpp: 500 for a format).
        format_status: The status of a refused response format.
        content_calls: The format tool calls are written in the content on the loop's
            first tool step (``None``: real ``tool_calls``); later steps use ``tool_calls``.
        ids: ``"unique"``, ``"empty"`` (``""``) or ``"repeat"`` (``call_0`` in every reply).
        reasoning_field: The reply field carrying reasoning, ``None`` for none.
        empty_final: The loop's final answer comes back with empty content.
        plan, structured, synthesis: What the model "says" (module docstring).
        fail: How the server fails from its ``fail_from``-th request on (1-based, every
            request after too: a dead provider): ``"503"``, ``"429"``,
            ``"context"`` (a 400 "maximum context length" error), ``"reset"`` (the
            connection is cut after the response started), ``"hang"`` (the request is
            accepted and never answered), ``"stall"`` (a stream's headers are sent, then
            nothing); ``None`` never.
        fail_from: See ``fail``.
        requests: Every request body received, in order (refused ones too).
        refused: The error messages sent, in order.
    """

    profile: str
    rules: list[Rule] = field(default_factory=list)
    status: int = 400
    format_status: int = 400
    content_calls: str | None = None
    ids: str = "unique"
    reasoning_field: str | None = None
    empty_final: bool = False
    plan: list[Step] = field(default_factory=list)
    structured: dict[str, Any] = field(default_factory=dict)
    synthesis: str = "Synthesized answer."
    requests: list[dict[str, Any]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    fail: str | None = None
    fail_from: int = 1
    _counter: int = 0

    # ------------------------------------------------------------------ the model

    def _id(self, index: int) -> str:
        if self.ids == "empty":
            return ""
        if self.ids == "repeat":
            return f"call_{index}"
        self._counter += 1
        return f"call_{self.profile}_{self._counter}"

    def _reply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The assistant message for one request: ``content``, ``tool_calls``, reasoning."""
        messages = body.get("messages", [])
        system = next((m.get("content") or "" for m in messages if m.get("role") in ("system", "developer")), "")
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        thought = {self.reasoning_field: f"thinking about call {turn + 1}"} if self.reasoning_field else {}
        if system == SYNTHESIS_SYSTEM:
            return {"content": self.synthesis, **thought}
        choice = body.get("tool_choice")
        if isinstance(choice, dict):  # structured level 1: a forced function
            name = choice["function"]["name"]
            call = {"id": self._id(0), "type": "function",
                    "function": {"name": name, "arguments": json.dumps(self.structured)}}
            return {"content": None, "tool_calls": [call], **thought}
        last_user = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
        json_loop = '"type": "tool_call"' in system
        if (body.get("response_format") and not json_loop) or _STRUCTURED_MARK in str(last_user):
            return {"content": json.dumps(self.structured), **thought}
        step = self.plan[min(turn, len(self.plan) - 1)]
        if isinstance(step, str):
            if json_loop:
                return {"content": json.dumps({"type": "final_answer", "reasoning": "done", "answer": step}), **thought}
            return {"content": "" if self.empty_final else step, **thought}
        if json_loop:  # one tool per iteration
            name, args = step[0]
            action = {"type": "tool_call", "reasoning": "need data", "tool_name": name, "tool_args": args}
            return {"content": json.dumps(action), **thought}
        first_tool_step = not any(m.get("role") == "tool" for m in messages)
        if self.content_calls and first_tool_step and body.get("tools"):
            return {"content": write_calls(self.content_calls, step), **thought}
        calls = [{"id": self._id(i), "type": "function", "function": {"name": n, "arguments": _args_text(a)}}
                 for i, (n, a) in enumerate(step)]
        return {"content": None, "tool_calls": calls, **thought}

    # ------------------------------------------------------------------ the wire

    @staticmethod
    def _usage() -> dict[str, int]:
        return {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27}

    def _completion(self, body: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
        finish = "tool_calls" if reply.get("tool_calls") else "stop"
        return {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 0,
                "model": body.get("model", "fake"),
                "choices": [{"index": 0, "message": {"role": "assistant", **reply}, "finish_reason": finish}],
                "usage": self._usage()}

    def _chunks(self, body: dict[str, Any], reply: dict[str, Any]) -> list[dict[str, Any]]:
        """The reply streamed: reasoning deltas, content in pieces, each tool call's id and
        name then its arguments in pieces, the finish reason, then usage alone (last)."""
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        if self.reasoning_field and reply.get(self.reasoning_field):
            text = reply[self.reasoning_field]
            deltas += [{self.reasoning_field: text[i:i + 6]} for i in range(0, len(text), 6)]
        content = reply.get("content") or ""
        deltas += [{"content": content[i:i + 5]} for i in range(0, len(content), 5)]
        for index, call in enumerate(reply.get("tool_calls") or []):
            deltas.append({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                           "function": {"name": call["function"]["name"], "arguments": ""}}]})
            args = call["function"]["arguments"]
            deltas += [{"tool_calls": [{"index": index, "function": {"arguments": args[i:i + 7]}}]}
                       for i in range(0, len(args), 7)]
        base = {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion.chunk", "created": 0,
                "model": body.get("model", "fake")}
        chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
        finish = "tool_calls" if reply.get("tool_calls") else "stop"
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        chunks.append({**base, "choices": [], "usage": self._usage()})  # usage only in the last chunk
        return chunks

    def app(self) -> FastAPI:
        """The FastAPI app serving ``/v1/chat/completions``."""
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def completions(request: Request) -> Any:
            body = await request.json()
            self.requests.append(body)
            if self.fail is not None and len(self.requests) >= self.fail_from:
                if self.fail == "hang":  # until the client gives up
                    while not await request.is_disconnected():
                        await asyncio.sleep(0.05)
                    return JSONResponse({}, status_code=499)
                return self._failure()
            for rule in [protocol_rule, *self.rules]:
                problem = rule(body)
                if problem:
                    self.refused.append(problem)
                    status = self.format_status if "response_format" in problem else self.status
                    return JSONResponse({"error": {"message": problem, "type": "invalid_request_error"}},
                                        status_code=status)
            reply = self._reply(body)
            if not body.get("stream"):
                return JSONResponse(self._completion(body, reply))

            async def events() -> AsyncIterator[str]:
                for chunk in self._chunks(body, reply):
                    yield f"data: {json.dumps(chunk)}\n\n"
                yield "data: [DONE]\n\n"

            return StreamingResponse(events(), media_type="text/event-stream")

        return app

    def _failure(self) -> Any:
        """The response of a failing server (``fail``)."""
        if self.fail == "stall":
            async def silence() -> AsyncIterator[bytes]:
                await asyncio.Event().wait()  # cancelled when the client goes
                yield b""

            return StreamingResponse(silence(), media_type="text/event-stream")
        if self.fail == "reset":
            async def cut() -> AsyncIterator[bytes]:
                yield b'{"id": "chatcmpl-cut", '
                raise ConnectionResetError("the fake provider cut the connection")

            return StreamingResponse(cut(), media_type="application/json")
        status, message, code = {
            "503": (503, "Service Unavailable: the model is overloaded", "server_error"),
            "429": (429, "Rate limit reached for requests", "rate_limit_exceeded"),
            "context": (400, "This model's maximum context length is 8192 tokens. However, your messages resulted "
                             "in 9000 tokens.", "context_length_exceeded"),
        }[str(self.fail)]
        return JSONResponse({"error": {"message": message, "type": "invalid_request_error", "code": code}},
                            status_code=status)

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """Serve for the block; yields the OpenAI base URL (``http://127.0.0.1:PORT/v1``)."""
        async with running_server(self.app()) as url:
            yield f"{url}/v1"


def fake_provider(profile: str, **script: Any) -> FakeProvider:
    """The strict fake server of one provider family, with ``script`` (plan, structured,
    synthesis) set."""
    families: dict[str, dict[str, Any]] = {
        "openai": {"rules": [known_fields_rule, refuse_format("json_object_schema")]},
        "deepseek": {"rules": [reasoning_replay_rule, refuse_format("json_schema"),
                               refuse_format("json_object_schema")],
                     "reasoning_field": "reasoning_content"},
        "vllm": {"content_calls": "tool_call_tag", "reasoning_field": "reasoning"},
        "ollama": {"rules": [no_null_content_rule], "content_calls": "python_tag"},
        "lmstudio": {"rules": [refuse_format("json_object"), refuse_format("json_object_schema")],
                     "content_calls": "mistral"},
        "llamacpp": {"rules": [no_null_content_rule, refuse_format("json_schema")], "format_status": 500,
                     "content_calls": "function_tag", "ids": "empty"},
        "openai_compatible": {"content_calls": "bare_json", "ids": "repeat", "empty_final": True,
                              "rules": [no_null_content_rule]},
    }
    return FakeProvider(profile=profile, **families[profile], **script)
