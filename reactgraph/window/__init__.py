"""The model's context window (SPEC §6): token counting (:mod:`.tokens`), the input token
budget (:mod:`.budget`) and the context guard with its compaction (:mod:`.guard`).

Named *window*, not *context*, so it is not taken for LangGraph's runtime context
(``context_schema``)."""

from reactgraph.window.budget import DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS, MIN_BUDGET, context_budget
from reactgraph.window.guard import (
    DROPPED_NOTE,
    SUMMARY_HEADER,
    TRUNCATION_MARKER,
    ContextGuard,
    GuardResult,
    clip_text,
)
from reactgraph.window.tokens import OFFLINE_ENCODING, TokenCounter, estimate_tokens, load_encoding, model_name_of

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "DROPPED_NOTE",
    "MIN_BUDGET",
    "OFFLINE_ENCODING",
    "SUMMARY_HEADER",
    "TRUNCATION_MARKER",
    "ContextGuard",
    "GuardResult",
    "TokenCounter",
    "clip_text",
    "context_budget",
    "estimate_tokens",
    "load_encoding",
    "model_name_of",
]
