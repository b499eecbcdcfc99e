"""The context guard's cost per loop iteration, by history size, with and without the
per-message token cache (SPEC R6.3).

Each history is a tool loop: a user query, then assistant tool calls each answered by a
tool result of about 2,000 characters of mixed English and Korean plant data, until the
history holds 10k, 100k or 1M characters. Each timed iteration appends one tool call and
its result (as the loop does) and runs ``ContextGuard.aguard`` on the whole history with a
budget it fits in, so what is measured is what every iteration pays: the per-message
truncation check and the token count. With the cache, the history before the new
iteration was counted already (as the previous iteration would have); without it, every
iteration tokenizes the whole history again.

Run: ``.venv/bin/python bench/guard_cost.py [--iterations N]``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from reactgraph import ContextGuard, TokenCounter

SIZES = (10_000, 100_000, 1_000_000)
RESULT_LINE = "CNC-{n:03d} spindle 온도 {t:.1f}°C, vibration {v:.1f} mm/s, 상태 정상, alarm W-1105 진동 증가 확인. "


def tool_round(n: int) -> list[BaseMessage]:
    """One iteration's messages: an assistant tool call and a ~2,000-character result."""
    call_id = f"call_{n}"
    text = "".join(RESULT_LINE.format(n=n % 1000, t=60 + (n * 7 + i) % 30, v=(n + i) % 9 + 0.5) for i in range(24))
    return [
        AIMessage("", tool_calls=[{"name": "get_status", "args": {"equipment_id": f"CNC-{n:03d}"}, "id": call_id, "type": "tool_call"}]),
        ToolMessage(text, tool_call_id=call_id, name="get_status"),
    ]


def history_of(chars: int) -> list[BaseMessage]:
    """A loop history of at least ``chars`` characters of message text."""
    messages: list[BaseMessage] = [HumanMessage("CNC 설비 전체 상태 확인해줘")]
    n = 0
    while sum(len(str(m.content)) for m in messages) < chars:
        messages += tool_round(n)
        n += 1
    return messages


async def per_iteration(history: list[BaseMessage], cache: bool, iterations: int) -> tuple[float, int]:
    """Median milliseconds of one guard pass over a history that grows by one round per
    iteration, and the tokens of the last pass."""
    guard = ContextGuard(None, budget=10**9, counter=TokenCounter(cache=cache))
    messages = list(history)
    await guard.aguard(messages)  # the previous iteration's pass (fills the cache when on)
    times = []
    tokens = 0
    for i in range(iterations):
        messages += tool_round(100_000 + i)
        started = time.perf_counter()
        result = await guard.aguard(messages)
        times.append((time.perf_counter() - started) * 1000)
        tokens = result.tokens_after
    return statistics.median(times), tokens


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5, help="timed iterations per size and mode")
    args = parser.parse_args()
    print(f"tokenizer: {TokenCounter().encoding_name}; median of {args.iterations} iterations")
    print(f"{'history chars':>14} {'messages':>9} {'tokens':>9} {'no cache ms':>12} {'cache ms':>9} {'speed-up':>9}")
    for size in SIZES:
        history = history_of(size)
        chars = sum(len(str(m.content)) for m in history)
        uncached, tokens = await per_iteration(history, False, args.iterations)
        cached, _ = await per_iteration(history, True, args.iterations)
        print(f"{chars:14,d} {len(history):9,d} {tokens:9,d} {uncached:12.2f} {cached:9.2f} {uncached / cached:8.1f}x")


if __name__ == "__main__":
    asyncio.run(main())
