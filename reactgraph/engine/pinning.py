"""Pinned messages (SPEC R6.2, R7.3): messages that every compaction keeps.

Pinned-ness is engine bookkeeping, so it lives in the graph state, not on the messages:
``AgentState.pinned`` holds the ids of the pinned messages (the query of each turn, each
injected follow-up). The user's messages come back exactly as they were sent,
and the ids are checkpointed with the rest of the state.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from langchain_core.messages import BaseMessage


def merge_pinned(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Reducer of ``AgentState.pinned``: adds new ids, keeping the order of first pinning.
    Several tasks may pin in one superstep."""
    merged = list(left or [])
    for message_id in right or []:
        if message_id not in merged:
            merged.append(message_id)
    return merged


def pinned_ids(state: Mapping[str, Any]) -> frozenset[str]:
    """The ids of the pinned messages of ``state``."""
    return frozenset(state.get("pinned") or ())


def is_pinned(message: BaseMessage, pinned: Collection[str]) -> bool:
    """True when ``message`` is one of the ``pinned`` ids."""
    return message.id is not None and message.id in pinned
