"""Prompt tokens llama.cpp processes per question, and what its prefix cache serves.

llama.cpp's server reports, with every completion, ``timings.prompt_n`` (prompt tokens it
processed) and ``timings.cache_n`` (prompt tokens its prefix cache served: the longest prefix
the request shares with what the slot held). This bench starts an embedded model of the
catalogue (default: ``qwen2.5-coder-1.5b``, the quality option, on 1 thread), reads those two
figures of every model call from the server's responses (an HTTP transport on the model's
client tees each response and keeps its ``timings``; the chat model's own metadata does not
carry them), and runs ``answer_quality.py``'s plant questions through the demo agent under
each safeguard policy, one policy after the other:

* ``strict``: the model as the catalogue marks it (``small``): tools ranked for the question,
  hybrid selection keeping one tool, the strict safeguards (SPEC R13.1);
* ``permissive``: the same server with ``small`` off, the policy of every other model: one
  prompt prefix for every question (``Engine.stable_prompt``), the permissive safeguards.

Per question it prints the calls (``sel`` selection, ``loop``, ``syn`` synthesis), the prompt
tokens processed and served from the cache, the seconds, and whether the right tool ran
(:func:`answer_quality.score_run`); per policy the totals over the questions after the first
(the first fills the cache) and the median seconds.

Usage::

    python bench/prompt_cache.py --questions 6
    python bench/prompt_cache.py --local-model smollm2-135m --policies strict --questions 3 --verbose
    python bench/prompt_cache.py --questions 8 --synthesis auto --json-out pc.json
    python bench/prompt_cache.py --policies permissive --tool-selection off   # every tool: one prefix
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import answer_quality as aq  # noqa: E402  (the plant questions, the runner and the scoring)

from reactgraph.protocol.prompts import SELECTION_SYSTEM, SYNTHESIS_USER  # noqa: E402

# --------------------------------------------------------------------------- recording


@dataclass
class CallTiming:
    """One model call as llama.cpp reported it.

    Attributes:
        kind: ``sel`` (tool selection), ``syn`` (answer synthesis) or ``loop`` (any other
            call), read from the request's last user message.
        prompt_n: Prompt tokens the server processed.
        cache_n: Prompt tokens its prefix cache served.
        predicted_n: Tokens it wrote.
        prompt_ms, predicted_ms: Time reading the prompt and writing, ms.
    """

    kind: str
    prompt_n: int = 0
    cache_n: int = 0
    predicted_n: int = 0
    prompt_ms: float = 0.0
    predicted_ms: float = 0.0


def call_kind(body: bytes) -> str:
    """``sel``, ``syn`` or ``loop`` for a chat-completions request body: by the fixed opening
    of the selection's system prompt and the synthesis's user message (any message of the
    request); ``loop`` for any other call or a body that cannot be read."""
    try:
        messages = json.loads(body).get("messages") or []
    except (ValueError, AttributeError):
        return "loop"
    texts = [m.get("content") for m in messages if isinstance(m, dict) and isinstance(m.get("content"), str)]
    if any(text.startswith(SELECTION_SYSTEM.split("{", 1)[0]) for text in texts):
        return "sel"
    if any(text.startswith(SYNTHESIS_USER.split("{", 1)[0]) and "Work log:" in text for text in texts):
        return "syn"
    return "loop"


def read_timings(body: bytes) -> dict[str, Any] | None:
    """The last ``timings`` object of a response body: a JSON completion, or a stream of
    ``data:`` lines (llama.cpp puts it on the last chunk). ``None`` when there is none."""
    found = None
    for line in body.decode("utf-8", "replace").splitlines() or [""]:
        text = line.removeprefix("data:").strip()
        if '"timings"' not in text:
            continue
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("timings"), dict):
            found = value["timings"]
    return found


class TimingsRecorder:
    """Keeps the :class:`CallTiming` of every completion made through its transports.

    Give :meth:`async_transport` / :meth:`sync_transport` to the model's HTTP clients; each
    response body is passed through unchanged and read once it is closed.
    """

    def __init__(self) -> None:
        self.calls: list[CallTiming] = []

    def _record(self, kind: str, body: bytes) -> None:
        timings = read_timings(body)
        if timings is None:
            return
        self.calls.append(CallTiming(kind, int(timings.get("prompt_n") or 0), int(timings.get("cache_n") or 0),
                                     int(timings.get("predicted_n") or 0), float(timings.get("prompt_ms") or 0.0),
                                     float(timings.get("predicted_ms") or 0.0)))

    def async_transport(self, inner: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncBaseTransport:
        """An async transport that sends through ``inner`` (default: plain HTTP, no proxy) and
        records every response's timings."""
        return _AsyncRecording(inner or httpx.AsyncHTTPTransport(), self)

    def sync_transport(self, inner: httpx.BaseTransport | None = None) -> httpx.BaseTransport:
        """The synchronous counterpart of :meth:`async_transport`."""
        return _SyncRecording(inner or httpx.HTTPTransport(), self)


class _AsyncTee(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, done: Callable[[bytes], None]) -> None:
        self.inner, self.done, self.buffer = inner, done, bytearray()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.buffer += chunk
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()
        self.done(bytes(self.buffer))


class _SyncTee(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, done: Callable[[bytes], None]) -> None:
        self.inner, self.done, self.buffer = inner, done, bytearray()

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            self.buffer += chunk
            yield chunk

    def close(self) -> None:
        self.inner.close()
        self.done(bytes(self.buffer))


class _AsyncRecording(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport, recorder: TimingsRecorder) -> None:
        self.inner, self.recorder = inner, recorder

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        kind = call_kind(request.content)
        response = await self.inner.handle_async_request(request)
        stream = _AsyncTee(response.stream, lambda body: self.recorder._record(kind, body))  # type: ignore[arg-type]
        return httpx.Response(response.status_code, headers=response.headers, stream=stream,
                              extensions=response.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _SyncRecording(httpx.BaseTransport):
    def __init__(self, inner: httpx.BaseTransport, recorder: TimingsRecorder) -> None:
        self.inner, self.recorder = inner, recorder

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        kind = call_kind(request.content)
        response = self.inner.handle_request(request)
        stream = _SyncTee(response.stream, lambda body: self.recorder._record(kind, body))  # type: ignore[arg-type]
        return httpx.Response(response.status_code, headers=response.headers, stream=stream,
                              extensions=response.extensions)

    def close(self) -> None:
        self.inner.close()


# --------------------------------------------------------------------------- running


@dataclass
class QuestionCost:
    """One question under one policy."""

    policy: str
    question: str
    calls: list[CallTiming]
    seconds: float
    right_tool: bool
    grounded: bool
    answer: str = ""
    finish_reason: str | None = None
    tools: list[str] = field(default_factory=list)

    @property
    def prompt_n(self) -> int:
        """Prompt tokens processed over the question's calls."""
        return sum(c.prompt_n for c in self.calls)

    @property
    def cache_n(self) -> int:
        """Prompt tokens served from the cache over the question's calls."""
        return sum(c.cache_n for c in self.calls)


def summary(costs: list[QuestionCost]) -> dict[str, Any]:
    """A policy's totals: over the questions after the first, the mean prompt tokens processed
    and served per question and the share served; the median and mean seconds of every
    question and of those after the first; the right-tool and grounded counts."""
    later = costs[1:] or costs
    processed = sum(c.prompt_n for c in later)
    served = sum(c.cache_n for c in later)
    return {
        "questions": len(costs),
        "prompt_n_per_question_after_first": processed / len(later),
        "cache_n_per_question_after_first": served / len(later),
        "cached_share_after_first": served / (processed + served) if processed + served else 0.0,
        "calls_per_question": statistics.fmean(len(c.calls) for c in costs),
        "median_s": statistics.median(c.seconds for c in costs),
        "median_s_after_first": statistics.median(c.seconds for c in later),
        "mean_s": statistics.fmean(c.seconds for c in costs),
        "right_tool": sum(c.right_tool for c in costs),
        "grounded": sum(c.grounded for c in costs),
    }


TOOL_SELECTION = {"on": True, "auto": "auto", "off": False}
"""``--tool-selection`` → ``AgentSettings.tool_selection``."""


async def run_policy(llm: Any, abilities: Any, hub: list[Any], policy: str, questions: list[aq.Question],
                     recorder: TimingsRecorder, synthesis: str | None, tool_selection: str, max_iterations: int,
                     verbose: bool) -> list[QuestionCost]:
    """Run ``questions`` in order through the demo agent under ``policy`` and read each one's calls."""
    from reactgraph import ReActAgent
    from reactgraph.demo.agent import demo_settings

    settings = dataclasses.replace(demo_settings(max_iterations=max_iterations, synthesis=synthesis),
                                   tool_selection=TOOL_SELECTION[tool_selection])
    agent = ReActAgent(llm, hub, use_native_tools=False, abilities=abilities, settings=settings)
    tools = {tool.name: tool for tool in hub}
    costs = []
    for number, question in enumerate(questions, 1):
        first = len(recorder.calls)
        began = time.perf_counter()
        record = await aq.run_reactgraph(agent, policy, question.text)
        seconds = time.perf_counter() - began
        score = aq.score_run(question, record.calls, record.answer, aq.ground_truth(question, tools), tools)
        cost = QuestionCost(policy, question.text, recorder.calls[first:], seconds, score.right_tool, score.grounded,
                            record.answer, record.finish_reason, [c.tool for c in record.calls])
        costs.append(cost)
        kinds = " ".join(f"{c.kind}:{c.prompt_n}/{c.cache_n}" for c in cost.calls)
        print(f"  [{number}/{len(questions)}] {policy} | {question.text} | {cost.prompt_n} processed, {cost.cache_n} "
              f"cached ({kinds}) | {seconds:.1f} s | right {score.right_tool:d} grounded {score.grounded:d}",
              file=sys.stderr, flush=True)
        if verbose:
            print(f"      tools {cost.tools} · {record.finish_reason} · answer: {' '.join(record.answer.split())[:300]}",
                  file=sys.stderr, flush=True)
    return costs


def table(results: dict[str, list[QuestionCost]]) -> str:
    """Markdown: one line per question and policy, then one line of totals per policy."""
    lines = ["| policy | # | question | calls (processed/cached) | processed | cached | s | right tool |",
             "|---|---|---|---|---|---|---|---|"]
    for policy, costs in results.items():
        for number, c in enumerate(costs, 1):
            kinds = " ".join(f"{k.kind} {k.prompt_n}/{k.cache_n}" for k in c.calls)
            lines.append(f"| {policy} | {number} | {c.question} | {kinds} | {c.prompt_n} | {c.cache_n} | "
                         f"{c.seconds:.1f} | {'yes' if c.right_tool else 'no'} |")
    lines += ["", "| policy | questions | processed/question after the first | cached/question after the first | "
              "cached share | calls/question | median s | median s after the first | right tool | grounded |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for policy, costs in results.items():
        s = summary(costs)
        lines.append(f"| {policy} | {s['questions']} | {s['prompt_n_per_question_after_first']:.0f} | "
                     f"{s['cache_n_per_question_after_first']:.0f} | {100 * s['cached_share_after_first']:.0f}% | "
                     f"{s['calls_per_question']:.1f} | {s['median_s']:.1f} | {s['median_s_after_first']:.1f} | "
                     f"{s['right_tool']}/{s['questions']} | {s['grounded']}/{s['questions']} |")
    return "\n".join(lines)


async def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, start the model, run each policy over the questions, print the tables.

    Returns:
        The exit status (0).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--local-model", default="qwen2.5-coder-1.5b", help="catalogue model (default: the 1.5B)")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (default: 1)")
    parser.add_argument("--questions", type=int, default=6, help="the first N single-part plant questions (default: 6)")
    parser.add_argument("--policies", nargs="+", choices=("strict", "permissive"), default=["strict", "permissive"])
    parser.add_argument("--synthesis", choices=("always", "auto"), default=None,
                        help="AgentSettings.synthesis (default: $REACTGRAPH_SYNTHESIS, else the policy decides: "
                             "strict always, permissive auto)")
    parser.add_argument("--tool-selection", choices=tuple(TOOL_SELECTION), default="on",
                        help="AgentSettings.tool_selection: on (True, the default), auto, or off (every tool offered: "
                             "the permissive policy's stable prompt)")
    parser.add_argument("--max-iterations", type=int, default=6)
    parser.add_argument("--json-out", help="write every call's timings and the totals to this JSON file")
    parser.add_argument("--verbose", action="store_true", help="print each run's tools, finish reason and answer")
    args = parser.parse_args(argv)
    if args.questions < 1 or args.threads < 1:
        parser.error("--questions and --threads must be at least 1")

    from reactgraph.demo.factory import build_factory_hub
    from reactgraph.models.local import LocalModelServer

    questions = list(aq.QUESTIONS[: args.questions])
    recorder = TimingsRecorder()
    results: dict[str, list[QuestionCost]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        hub = build_factory_hub(Path(tmp) / "factory.db")
        async with LocalModelServer(model=args.local_model, n_threads=args.threads) as server:
            llm = server.chat_model(http_client=httpx.Client(transport=recorder.sync_transport()),
                                    http_async_client=httpx.AsyncClient(transport=recorder.async_transport()))
            print(f"model: {server.description} · {server.n_threads} thread(s) · {len(questions)} questions · "
                  f"{len(hub)} tools · tool_selection {args.tool_selection} · synthesis {args.synthesis or 'default'}",
                  file=sys.stderr, flush=True)
            for policy in args.policies:
                abilities = server.abilities if policy == "strict" else dataclasses.replace(server.abilities, small=False)
                results[policy] = await run_policy(llm, abilities, hub, policy, questions, recorder, args.synthesis,
                                                   args.tool_selection, args.max_iterations, args.verbose)
            description = server.description
    print(f"\n{description}, {args.threads} thread(s), {len(questions)} questions, tool_selection "
          f"{args.tool_selection}, synthesis {args.synthesis or 'default'}, {date.today().isoformat()}\n")
    print(table(results))
    if args.json_out:
        payload = {"model": description, "threads": args.threads, "date": date.today().isoformat(),
                   "tool_selection": args.tool_selection, "synthesis": args.synthesis,
                   "totals": {policy: summary(costs) for policy, costs in results.items()},
                   "questions": [{**asdict(c), "prompt_n": c.prompt_n, "cache_n": c.cache_n}
                                 for costs in results.values() for c in costs]}
        Path(args.json_out).write_text(json.dumps(payload, ensure_ascii=False, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
