"""What a question costs: model calls, tokens and time to the first answer token.

A scripted chat model with a latency and a streaming speed (default 300 ms to the first token,
50 tokens/s; ``--first-token-ms``, ``--tokens-per-s``) answers every peer alike. It reads the
script off the messages it is sent, so it keeps no state between calls: while the
conversation holds fewer tool results than the question needs it asks for the next tool
(``lookup_<topic>``, one per call, in the question's order, :data:`NEEDS`), then it answers in text (about 40 tokens); a call with no
tools bound (reactgraph's synthesis) answers in text; a tool selection call (one bound tool,
``select_tools``) names the tools the question needs. A call that is streamed yields one
token at a time; one that is not returns after the whole output's time.

Peers, one question at a time, in the same run, on the same tools:

* ``create_agent``  ``langchain.agents.create_agent``, streamed with ``stream_mode="messages"``
  (its answer's tokens are the first text chunks of its last model call);
* ``always``        ``ReActAgent(..., settings=AgentSettings(synthesis="always"))``, the seed's
  two phases: the loop's calls, then the streamed synthesis call;
* ``auto``          ``AgentSettings(synthesis="auto", tool_selection="auto")``: the loop's own
  final answer streams, and no selection call for this (not small, native) model.

For 0, 1, 2 and 3 tool calls and for 5 and 24 tools (above 12 tools reactgraph's
``tool_selection=True`` makes a selection call), it reports per question: model calls, input
tokens (each call's messages and bound tool schemas, :func:`~reactgraph.window.tokens.estimate_tokens`),
*new* input tokens (those past the longest prefix the call shares with an earlier call of the
same peer, in any run of any question with that many tools: what a provider's or llama.cpp's
prefix cache would still have to process; the questions run in the order given, so a
question's first run meets the earlier questions' prompts), output tokens, and the time to the first answer token (from the start of the run to
the first ``answer`` delta / text chunk; the median of ``--repeats`` runs). Then the ratios of
``always`` and ``auto`` to ``create_agent`` against the goals (calls ≤ 1×, input tokens ≤ 1.1×,
time to the first answer token ≤ 1.05×). Nothing is asserted.

Run:  .venv/bin/python bench/calls.py [--repeats 3] [--first-token-ms 300] [--tokens-per-s 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from reactgraph import AgentSettings, ModelAbilities, ReActAgent
from reactgraph.window.tokens import estimate_tokens

TOPICS = ["weather", "flights", "hotels", "trains", "museums", "restaurants", "currency", "visas", "events",
          "parking", "ferries", "buses", "bikes", "taxis", "pharmacies", "libraries", "parks", "beaches",
          "markets", "theaters", "stadiums", "zoos", "hospitals", "embassies"]
ANSWER = ("Here is what I found: the details you asked for are listed above in the tool results, and the short "
          "version is that everything looks fine for your trip to Lisbon next week.")
SYSTEM = "You are a travel desk assistant. Use the tools to look things up; answer briefly."


class Key(BaseModel):
    city: str = Field(description="City name.")


def make_tools(count: int) -> list[BaseTool]:
    """``lookup_<topic>`` tools with a one-argument schema each."""
    def maker(topic: str) -> StructuredTool:
        async def run(city: str) -> str:
            return f"{topic} in {city}: 3 results, the first at 10:30, rated 4.5"
        return StructuredTool.from_function(coroutine=run, name=f"lookup_{topic}", args_schema=Key,
                                            description=f"Look up {topic} in a city: times, prices and ratings.")
    return [maker(topic) for topic in TOPICS[:count]]


NEEDS = {0: [], 1: [3], 2: [2, 0], 3: [4, 1, 3]}
"""The topics (positions in :data:`TOPICS`, within the first five) each question needs, in the
order the model calls them: not the tools' order, so a per-question tool order would show."""


def question(needed: int) -> str:
    if needed == 0:
        return "Hello! What can you do?"
    return "For Lisbon, look up " + " and ".join(TOPICS[i] for i in NEEDS[needed]) + "."


def tokens_of(messages: list[BaseMessage], tools: list[Any]) -> str:
    """The text a provider is sent: the tool schemas, then the messages."""
    parts = [json.dumps(tool, sort_keys=True) for tool in tools]
    for message in messages:
        calls = json.dumps(getattr(message, "tool_calls", None) or [], sort_keys=True)
        parts.append(f"<{message.type}>{message.content if isinstance(message.content, str) else message.content!r}"
                     f"{calls if calls != '[]' else ''}")
    return "\n".join(parts)


@dataclass
class Ledger:
    """What one peer's model was asked, across all its runs (for the prefix cache)."""

    prompts: list[str] = field(default_factory=list)
    calls: int = 0
    input_tokens: int = 0
    new_input_tokens: int = 0
    output_tokens: int = 0

    def record(self, prompt: str, output_tokens: int) -> None:
        best = 0
        for earlier in self.prompts:
            n = 0
            for a, b in zip(earlier, prompt):
                if a != b:
                    break
                n += 1
            best = max(best, n)
        self.prompts.append(prompt)
        self.calls += 1
        self.input_tokens += estimate_tokens(prompt)
        self.new_input_tokens += estimate_tokens(prompt[best:])
        self.output_tokens += output_tokens


class PacedModel(BaseChatModel):
    """The scripted model of the module docstring."""

    needed: int = 0
    first_token_s: float = 0.3
    tokens_per_s: float = 50.0
    ledger: Any = None

    @property
    def _llm_type(self) -> str:
        return "bench-paced"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        tools = kwargs.get("tools") or []
        names = [tool["function"]["name"] for tool in tools]
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if names == ["select_tools"]:
            picked = [f"lookup_{TOPICS[i]}" for i in NEEDS[self.needed]] or ["lookup_weather"]
            reply = AIMessage("", tool_calls=[{"name": "select_tools", "args": {"tools": picked}, "id": "sel",
                                               "type": "tool_call"}])
        elif names and done < self.needed:
            reply = AIMessage("", tool_calls=[{"name": f"lookup_{TOPICS[NEEDS[self.needed][done]]}", "args": {"city": "Lisbon"},
                                               "id": f"call_{done}", "type": "tool_call"}])
        else:
            reply = AIMessage(ANSWER)
        out = estimate_tokens(reply.content if isinstance(reply.content, str) else "") + 20 * len(reply.tool_calls)
        self.ledger.record(tokens_of(messages, tools), out)
        return reply.model_copy(update={"usage_metadata": {"input_tokens": 0, "output_tokens": out,
                                                           "total_tokens": out}})

    def _pieces(self, reply: AIMessage) -> Iterator[AIMessageChunk]:
        if reply.tool_calls:
            yield AIMessageChunk(content="", tool_call_chunks=[
                {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i, "type": "tool_call_chunk"}
                for i, c in enumerate(reply.tool_calls)])
            return
        words = str(reply.content).split(" ")
        for i, word in enumerate(words):
            yield AIMessageChunk(content=word + (" " if i < len(words) - 1 else ""))

    def _output_seconds(self, reply: AIMessage) -> float:
        return (reply.usage_metadata or {}).get("output_tokens", 0) / self.tokens_per_s

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        reply = self._reply(messages, kwargs)
        time.sleep(self.first_token_s + self._output_seconds(reply))
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                         **kwargs: Any) -> ChatResult:
        reply = self._reply(messages, kwargs)
        await asyncio.sleep(self.first_token_s + self._output_seconds(reply))
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _astream(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                       **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        reply = self._reply(messages, kwargs)
        await asyncio.sleep(self.first_token_s)
        pieces = list(self._pieces(reply))
        per_piece = self._output_seconds(reply) / max(len(pieces), 1)
        for i, piece in enumerate(pieces):
            if i:
                await asyncio.sleep(per_piece)
            if run_manager is not None and isinstance(piece.content, str) and piece.content:
                await run_manager.on_llm_new_token(piece.content, chunk=ChatGenerationChunk(message=piece))
            yield ChatGenerationChunk(message=piece)


@dataclass
class Row:
    calls: float
    input_tokens: float
    new_input_tokens: float
    output_tokens: float
    ttft: float


async def time_create_agent(model: PacedModel, tools: list[BaseTool], query: str) -> float:
    agent = create_agent(model, tools, system_prompt=SYSTEM)
    start = time.perf_counter()
    first = None
    async for chunk, _meta in agent.astream({"messages": [{"role": "user", "content": query}]},
                                            stream_mode="messages"):
        if first is None and isinstance(chunk, AIMessageChunk) and isinstance(chunk.content, str) and chunk.content:
            first = time.perf_counter() - start
    return first if first is not None else float("nan")


async def time_reactgraph(model: PacedModel, tools: list[BaseTool], query: str, settings: AgentSettings) -> float:
    agent = ReActAgent(model, tools, abilities=ModelAbilities(tool_call=True, context_window=128_000),
                       settings=settings)
    start = time.perf_counter()
    first = None
    async for event in agent.astream_events(query):
        if first is None and event.channel == "answer" and event.data.get("status") == "delta":
            first = time.perf_counter() - start
    return first if first is not None else float("nan")


PEERS = {
    "create_agent": None,
    "always": AgentSettings(system_prompt=SYSTEM, synthesis="always"),
    "auto": AgentSettings(system_prompt=SYSTEM, synthesis="auto", tool_selection="auto"),
}


async def measure(needed: int, tool_count: int, repeats: int, first_token_s: float, tps: float,
                  ledgers: dict[str, Ledger]) -> dict[str, Row]:
    """One question's rows; ``ledgers`` (one per peer) hold every earlier call of the peer,
    so the prefix cache spans the questions of one tool count, as it spans an agent's runs."""
    tools = make_tools(tool_count)
    query = question(needed)
    rows: dict[str, Row] = {}
    before = {name: (ledger.calls, ledger.input_tokens, ledger.new_input_tokens, ledger.output_tokens)
              for name, ledger in ledgers.items()}
    times: dict[str, list[float]] = {name: [] for name in PEERS}
    for _ in range(repeats):
        for name, settings in PEERS.items():  # peers take turns
            model = PacedModel(needed=needed, first_token_s=first_token_s, tokens_per_s=tps, ledger=ledgers[name])
            if settings is None:
                times[name].append(await time_create_agent(model, tools, query))
            else:
                times[name].append(await time_reactgraph(model, tools, query, settings))
    for name, ledger in ledgers.items():
        calls, tokens, new, output = (now - then for now, then in zip(
            (ledger.calls, ledger.input_tokens, ledger.new_input_tokens, ledger.output_tokens), before[name]))
        rows[name] = Row(calls / repeats, tokens / repeats, new / repeats, output / repeats,
                         statistics.median(times[name]))
    return rows


def verdict(ratio: float, goal: float) -> str:
    return "ok" if ratio <= goal + 1e-9 else "OVER"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--first-token-ms", type=float, default=300.0)
    parser.add_argument("--tokens-per-s", type=float, default=50.0)
    parser.add_argument("--tool-calls", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--tools", type=int, nargs="+", default=[5, 24])
    args = parser.parse_args()
    print(f"scripted model: {args.first_token_ms:.0f} ms to the first token, {args.tokens_per_s:.0f} tokens/s; "
          f"median of {args.repeats} runs\n")
    print("| tools | tool calls | peer | calls | input tok | new input tok | output tok | first answer token s | "
          "calls × | input × | new input × | TTFT × |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    summary = []
    for tool_count in args.tools:
        ledgers = {name: Ledger() for name in PEERS}
        for needed in args.tool_calls:
            rows = await measure(needed, tool_count, args.repeats, args.first_token_ms / 1000, args.tokens_per_s,
                                 ledgers)
            base = rows["create_agent"]
            for name, row in rows.items():
                ratios = (row.calls / base.calls, row.input_tokens / base.input_tokens,
                          row.new_input_tokens / base.new_input_tokens, row.ttft / base.ttft)
                print(f"| {tool_count} | {needed} | {name} | {row.calls:.0f} | {row.input_tokens:.0f} | "
                      f"{row.new_input_tokens:.0f} | {row.output_tokens:.0f} | {row.ttft:.2f} | "
                      + " | ".join(f"{r:.2f}" for r in ratios) + " |", flush=True)
                if name == "auto":
                    summary.append((tool_count, needed, ratios))
    print("\ngoals under auto (calls ≤ 1×, input tokens ≤ 1.1×, time to the first answer token ≤ 1.05×):")
    for tool_count, needed, (calls, tokens, _new, ttft) in summary:
        print(f"  {tool_count} tools, {needed} tool calls: calls {calls:.2f} {verdict(calls, 1.0)}, "
              f"input {tokens:.2f} {verdict(tokens, 1.1)}, TTFT {ttft:.2f} {verdict(ttft, 1.05)}")


if __name__ == "__main__":
    asyncio.run(main())
