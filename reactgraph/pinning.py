"""Pinned messages (SPEC R6.2, R7.3): messages that every compaction keeps.

The flag lives on the message itself (``additional_kwargs["pinned"] = True``), so it is
stored with the message in every checkpoint and survives serialization.
"""

from __future__ import annotations

from typing import TypeVar

from langchain_core.messages import BaseMessage

PINNED_KEY = "pinned"
"""The ``additional_kwargs`` key that marks a message as pinned."""

M = TypeVar("M", bound=BaseMessage)


def pin(message: M) -> M:
    """Return a copy of ``message`` (same id) with the pinned flag set."""
    return message.model_copy(update={"additional_kwargs": {**message.additional_kwargs, PINNED_KEY: True}})


def is_pinned(message: BaseMessage) -> bool:
    """True when ``message`` carries the pinned flag."""
    return bool(message.additional_kwargs.get(PINNED_KEY))
