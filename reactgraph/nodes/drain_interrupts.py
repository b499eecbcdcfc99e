"""``drain_interrupts``: where follow-up messages join a running loop (SPEC §7).

The node takes every follow-up queued for the run's thread (``config["configurable"]
["thread_id"]``) from the engine's :class:`~reactgraph.interrupts.InterruptQueue` and
appends them as one pinned ``[USER INTERRUPT] …`` user message (R7.3), emitting one
``inject`` event ``{type: "inject", content}`` per follow-up.

Where it runs (R7.2), always at a point where a user message keeps the provider protocol
valid:

- at the start of every run, after tool selection, so a follow-up queued before the first
  model call (or left from the thread's previous run) reaches that call;
- JSON mode: right after each assistant message, before its final answer is accepted;
- native mode: after the assistant message's tool results are all in (the superstep
  barrier after the ``execute_tools`` fan-out), and after a final answer; never between a
  tool-call message and its results;
- JSON mode also after each tool result, so a follow-up sent while a tool ran reaches the
  next model call.

When follow-ups arrive while a final answer is pending, the answer is suppressed
(``pending_final``, ``answer`` and ``finish_reason`` cleared) and the loop goes on so the
model answers them (R7.4); the assistant message that held the answer stays in the
conversation. The follow-ups are added to the turn's ``query`` too, so answer synthesis
answers them as well. A drain that finds the loop at ``max_iterations`` takes nothing:
no model call is left to answer, so the follow-ups stay queued for the thread's next run
and the loop ends as it would have. A graph invoked without a ``thread_id`` has no queue
to drain.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig

from reactgraph.engine import Engine
from reactgraph.events import emit
from reactgraph.interrupts import format_interrupt
from reactgraph.pinning import pin
from reactgraph.state import AgentState


class DrainInterrupts:
    """Drain the thread's follow-ups into the conversation (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        thread_id = (config.get("configurable") or {}).get("thread_id")
        if thread_id is None or state.get("iteration", 0) >= self.engine.settings.max_iterations:
            return {}
        texts = await self.engine.interrupts.take(str(thread_id))
        if not texts:
            return {}
        for text in texts:
            emit("inject", type="inject", content=text)
        content = format_interrupt(texts)
        update: dict[str, Any] = {
            "messages": [pin(HumanMessage(content))],
            "query": f"{state.get('query', '')}\n\n{content}".lstrip(),
            "progress_iteration": state.get("iteration", 0),  # a new request is progress (SPEC R13.1)
        }
        if state.get("pending_final") is not None:
            update.update(pending_final=None, answer="", finish_reason=None, parse_failures=0)
        return update
