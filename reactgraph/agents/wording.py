"""How a run's codes read to a person: the terminal's banner and footer say what happened in
plain words, while the codes themselves (``finish_reason``, the safeguard policy's name, the
tool-call protocol) stay in the API, the events and the page's details view.

The web page carries the same table (``FINISH_WORDS`` in ``reactgraph/server/static/app.js``);
``tests/unit/answer/test_wording.py`` checks that both name every finish reason of
:data:`reactgraph.agents.outcome.FinishReason`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

FINISH_WORDS: Mapping[str, str] = MappingProxyType({
    "final_answer": "Answered",
    "covered": "Answered from the tool results",
    "return_direct": "A tool's result is the answer",
    "raw_content": "Answered with the model's reply as written (it was not a tool call)",
    "stalled": "The agent was going in circles, so it answered with what it had",
    "max_iterations": "Stopped at the step limit and answered with what it had",
    "model_call_limit": "Stopped at the limit on model calls and answered with what it had",
    "tool_call_limit": "Stopped at the limit on tool calls and answered with what it had",
    "token_limit": "Stopped at the token limit and answered with what it had",
    "cost_limit": "Stopped at the cost limit and answered with what it had",
    "model_error": "The model failed",
    "storage_error": "The conversation could not be saved",
    "waiting": "Waiting for your decision",
    "cancelled": "Stopped before its end",
    "error": "The run failed",
    "achieved": "The plan reached its goal",
    "not_achieved": "The plan did not fully reach its goal",
    "max_rounds": "Stopped after the most planning rounds and answered with what it had",
    "plan_failed": "No workable plan could be made",
})
"""Each ``finish_reason`` → a sentence saying how the run ended."""

POLICY_WORDS: Mapping[str, str] = MappingProxyType({
    "strict": "extra checks for a small model (answers must come from the tool results)",
    "permissive": "standard checks",
})
"""Each safeguard policy's name (:mod:`reactgraph.policy.safeguards`) → what it means for the user."""

PROTOCOL_WORDS: Mapping[str, str] = MappingProxyType({
    "native": "calls tools through its tool-calling API",
    "json": "writes its tool calls as JSON in its replies",
})
"""Each tool-call protocol (``ReActAgent.mode``, SPEC R2.2) → how the model calls tools."""


ANSWER_SOURCE_WORDS: Mapping[str, str] = MappingProxyType({
    "loop": "the answer is the model's reply in the tool loop",
    "synthesis": "the answer was written by a separate call",
    "observations": "the answer is the tool results as they came",
})
"""Each ``answer_source`` of ``done`` (``AgentSettings.synthesis="auto"``) → which call wrote the answer."""


def answer_source_words(source: str) -> str:
    """Which call wrote the answer, for an ``answer_source`` code (unknown: ``"answer: <code>"``)."""
    return ANSWER_SOURCE_WORDS.get(source, f"answer: {source}")


def finish_words(reason: str | None) -> str:
    """How a run that ended with ``reason`` reads (an unknown code: ``"Ended (<code>)"``)."""
    if not reason:
        return "Ended"
    return FINISH_WORDS.get(reason, f"Ended ({reason})")


def policy_words(name: str) -> str:
    """What the safeguard policy ``name`` means for the user (unknown: the name itself)."""
    return POLICY_WORDS.get(name, f"{name} checks")


def protocol_words(mode: str) -> str:
    """How a model on the tool-call protocol ``mode`` calls tools (unknown: the code itself)."""
    return PROTOCOL_WORDS.get(mode, f"calls tools as {mode}")


def verdict_words(achieved: bool, confidence: float, replan: bool) -> str:
    """The DAG analyzer's verdict on a round as a sentence, e.g. ``"The goal looks reached
    (fairly sure)."`` or ``"The goal is not reached yet (unsure), so the agent plans again."``.

    Args:
        achieved: The analyzer judged the goal reached.
        confidence: Its confidence, 0 to 1.
        replan: Another round follows.
    """
    sure = "sure" if confidence >= 0.8 else "fairly sure" if confidence >= 0.5 else "unsure"
    said = f"The goal looks reached ({sure})" if achieved else f"The goal is not reached yet ({sure})"
    return said + (", so the agent plans again." if replan else ".")
