"""``start_turn``: the entry node. Opens a new turn of the conversation."""

from __future__ import annotations

import time
from typing import Any

from langchain_core.messages import HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from reactgraph.engine.bindings import Engine
from reactgraph.protocol.actions import message_text
from reactgraph.persistence.checkpointing import wait_for_task_checkpoint
from reactgraph.core.language import detect_language
from reactgraph.agents.outcome import answer_shown
from reactgraph.protocol.messages import answer_unfinished_tool_calls
from reactgraph.engine.state import RESET, TURN_ANSWER_CHARS, AgentState


TURN_BOOKKEEPING: dict[str, Any] = {
    "pending_final": None,
    "parse_failures": 0,
    "schema_rejected": False,
    "draft_answer": None,
    "progress_iteration": 0,
    "tool_required": False,
    "answer_streamed": False,
    "answer_source": None,
    "part_tools": None,
    "part_values": None,
    "part_questions": None,
    "chosen_by_values": False,
}
"""The loop's internal per-turn fields (not in the graph's output) and their value at a
turn's start. ``start_turn`` writes one only when the state holds another value: every
reader takes a missing field as this value, and LangGraph does work per superstep for each
channel that holds a value, so a first turn leaves them unwritten until the loop
sets them."""


class StartTurn:
    """Reset the per-turn fields and record the turn's query, its language and the loop mode.

    The query is the text of the last human message (the one the caller just sent);
    the mode is fixed for the whole turn from the model's abilities (SPEC R2.2).
    Earlier turns' messages stay in ``messages`` as history, and the turn before this one
    is added to ``earlier_turns`` (its question and the answer the user saw) for synthesis. The query message is pinned
    (its id added to ``pinned``; the message itself is left as sent), so every context
    compaction keeps it (SPEC R6.2). A history left by a run that was stopped while its tools ran
    (a client that disconnected from the server) gets an error result for each
    unanswered tool call, so the thread stays usable (SPEC R2.5).

    In a run whose savers hold checkpoints (durability ``"sync"`` on the savers of
    :func:`~reactgraph.persistence.checkpointing.open_persistence`), it first waits until the checkpoint
    holding the turn's input is stored, so no event of the turn reaches a client before the
    question is in the thread: a process killed after its first event leaves a thread to
    resume, not an empty one (SPEC R13.5). One commit per turn; none for other checkpointers.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def _language(self, query: str, state: AgentState) -> str | None:
        """The turn's language: the query's own when it tells one; else the thread's (the
        earlier turn's), else the language the tools are described in when they share one — a
        bare id or a one-word question is answered in the conversation's language, not in the
        neutral form; ``None`` when nothing tells."""
        detected = detect_language(query)
        if detected:
            return detected
        if state.get("language"):
            return state["language"]
        languages = self.engine.ranker.languages
        return languages[0] if len(languages) == 1 else None

    async def __call__(self, state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        await wait_for_task_checkpoint(config)
        query = ""
        pinned: list[str] = []
        for message in reversed(state.get("messages", [])):
            if isinstance(message, HumanMessage):
                query = message_text(message)
                pinned = [message.id] if message.id else []
                break
        update: dict[str, Any] = {
            "query": query,
            "language": self._language(query, state),
            "mode": self.engine.mode,
            "iteration": 0,
            "selected_tools": None,
            "steps": RESET,
            "usage": RESET,
            "answer": "",
            "finish_reason": None,
            "limit": None,
            "grounding": None,
            "error": None,
            "synthesis": None,
            "started_at": time.time(),
            "pinned": pinned,
        }
        update.update({key: reset for key, reset in TURN_BOOKKEEPING.items() if state.get(key, reset) != reset})
        if state.get("query"):  # the turn before this one, as the user saw it
            answer = answer_shown(state.get("synthesis"), state.get("answer"))  # as the user saw it
            update["earlier_turns"] = [{"question": state["query"][:TURN_ANSWER_CHARS],
                                        "answer": answer[:TURN_ANSWER_CHARS]}]
        if state.get("model") is not None or state.get("model_usage"):  # fallback models: a new turn
            update.update(model=None, model_usage=RESET)  # starts on the first model its breaker lets through
        repaired = answer_unfinished_tool_calls(state.get("messages", []))
        if repaired is not None:
            update["messages"] = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *repaired]
        return update
