"""What one provider family needs: ability defaults, request adaptations, response repairs.

A :class:`ProviderProfile` is plain data; each family's module in :mod:`reactgraph.providers`
holds one. The engine asks the profile, never names a provider (SPEC R13.2).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from reactgraph.core.errors import RETRY_LATER_STATUSES, http_failure, is_transient_error

DEFAULT_RETRY_STATUSES = RETRY_LATER_STATUSES
"""HTTP statuses below 500 worth retrying: request timeout, conflict, rate limit."""

DEFAULT_PERMANENT_STATUSES = frozenset({404})
"""Statuses after which a model is given up for the run: no such model."""

DEFAULT_PERMANENT_MARKERS = ("context length", "context_length", "maximum context", "context window",
                             "too many tokens", "model not found", "model_not_found", "does not exist",
                             "no such model")
"""Words of a 4xx error message that mark it permanent for the model."""

ABILITY_DEFAULT_KEYS = ("tool_call", "json_mode", "schema_output")
"""The ``ModelAbilities`` fields a profile may give defaults for."""


@dataclass(frozen=True)
class ProviderProfile:
    """One provider family's knowledge (SPEC R13.2).

    Attributes:
        name: The value of ``REACTGRAPH_PROVIDER`` / ``ModelAbilities.provider`` that forces it.
        title: One line for people ("vLLM", "OpenAI and Azure OpenAI").
        abilities: Ability defaults (``tool_call``, ``json_mode``, ``schema_output``) used
            where the model's LangChain profile says nothing; explicit settings win over both.
        profile_schema_output: ``schema_output`` when the LangChain profile says
            ``structured_output`` (OpenAI: ``"json_schema"``); ``None``: the profile's
            word is not used for it (it describes OpenAI's service, not this server).
        reasoning_field: The assistant-message field a reasoning model's thinking is sent
            back in (``"reasoning_content"``: DeepSeek, vLLM and SGLang reasoning parsers
            need it in a tool loop); ``None`` never sends it (providers that reject
            unknown fields).
        null_content: The server accepts ``content: null`` on an assistant message with
            tool calls; when false it is sent as ``""``.
        max_tokens_field: The request key of the output cap: ``"max_completion_tokens"``
            (today's OpenAI API) or ``"max_tokens"`` (servers that ignore the new name).
        content_tool_calls: Read tool calls the model wrote in its content in native mode
            (:mod:`reactgraph.providers.content_calls`).
        retry_statuses: Statuses below 500 that are worth retrying; every 5xx is.
        schema_refusal_statuses: Statuses that, besides the 4xx ones (but 408, 409, 429),
            mean the server refuses a schema ``response_format`` (older llama.cpp
            servers answer ``json_schema`` with 500).
        permanent_statuses: Statuses that mean this model cannot serve the run at all
            (404: no such model), so a fallback model takes over without retries.
        permanent_markers: Words of a 4xx error's message that mean the same for one
            request shape the model will keep refusing (the context length exceeded, a
            model that does not exist); compared in lower case.
        hosts: Substrings of the base URL's host that identify the family.
        ports: Base URL ports that identify it (only distinctive defaults).
        class_names: LangChain chat model classes that identify it.
        model_markers: Substrings of the model name that identify it when the base URL
            says nothing (e.g. ``":"`` of Ollama's ``llama3.1:8b`` tags).
    """

    name: str
    title: str
    abilities: Mapping[str, Any] = field(default_factory=dict)
    profile_schema_output: Literal["json_schema", "json_object_schema"] | None = None
    reasoning_field: str | None = None
    null_content: bool = True
    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_tokens"
    content_tool_calls: bool = True
    retry_statuses: frozenset[int] = DEFAULT_RETRY_STATUSES
    schema_refusal_statuses: frozenset[int] = frozenset()
    permanent_statuses: frozenset[int] = DEFAULT_PERMANENT_STATUSES
    permanent_markers: tuple[str, ...] = DEFAULT_PERMANENT_MARKERS
    hosts: tuple[str, ...] = ()
    ports: tuple[int, ...] = ()
    class_names: tuple[str, ...] = ()
    model_markers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = set(self.abilities) - set(ABILITY_DEFAULT_KEYS)
        if unknown:
            raise ValueError(f"profile {self.name!r}: abilities may only set {', '.join(ABILITY_DEFAULT_KEYS)}")

    # ------------------------------------------------------------------ choosing

    def matches_url(self, base_url: str | None) -> bool:
        """Whether ``base_url``'s host or port is this family's."""
        if not base_url:
            return False
        parts = urlsplit(base_url if "//" in base_url else f"//{base_url}")
        host = (parts.hostname or "").lower()
        try:
            port = parts.port
        except ValueError:
            port = None
        return any(h in host for h in self.hosts) or (port is not None and port in self.ports)

    # ------------------------------------------------------------------ abilities

    def default_abilities(self, model_profile: Mapping[str, Any]) -> dict[str, Any]:
        """``tool_call``, ``json_mode`` and ``schema_output`` for a model of this family:
        the LangChain profile's ``tool_calling`` / ``structured_output`` where it has them,
        else this profile's :attr:`abilities`, else the safe default (off) (SPEC R2.2)."""
        out: dict[str, Any] = {"tool_call": False, "json_mode": False, "schema_output": "none", **self.abilities}
        if "tool_calling" in model_profile:
            out["tool_call"] = bool(model_profile["tool_calling"])
        if "structured_output" in model_profile:
            structured = bool(model_profile["structured_output"])
            out["json_mode"] = structured
            if self.profile_schema_output is not None:
                out["schema_output"] = self.profile_schema_output if structured else "none"
        return out

    # ------------------------------------------------------------------ requests

    def adapt_request(self, payload: dict[str, Any], reasoning: list[str | None]) -> dict[str, Any]:
        """Adapt a Chat Completions request body for this family, in place.

        Args:
            payload: The body ``ChatOpenAI`` built (``messages`` as dicts).
            reasoning: For each message of ``payload["messages"]``, the reasoning kept on
                it (assistant messages only), else ``None``.

        Returns:
            ``payload``: the output cap under :attr:`max_tokens_field`; reasoning sent back
            in :attr:`reasoning_field` on the assistant messages that kept some (and no
            reasoning field at all when it is ``None``); ``content: null`` as ``""`` when
            :attr:`null_content` is false.
        """
        for key in ("max_tokens", "max_completion_tokens"):
            if key in payload and key != self.max_tokens_field:
                payload[self.max_tokens_field] = payload.pop(key)
        for message, thought in zip(payload.get("messages", []), reasoning, strict=False):
            if message.get("role") != "assistant":
                continue
            for key in ("reasoning_content", "reasoning"):
                message.pop(key, None)
            if self.reasoning_field and thought:
                message[self.reasoning_field] = thought
            if not self.null_content and message.get("content") is None:
                message["content"] = ""
        return payload

    # ------------------------------------------------------------------ failures

    def is_transient(self, exc: BaseException) -> bool:
        """Whether a failed model call is worth retrying (SPEC R2.7): connection errors,
        timeouts, 5xx and :attr:`retry_statuses`. Another 4xx (a rejected request) is not."""
        failure = http_failure(exc)
        if failure is not None:
            return failure.status in self.retry_statuses or failure.status >= 500
        return is_transient_error(exc)  # connection errors and timeouts

    def refuses_schema(self, exc: BaseException) -> bool:
        """Whether a failed schema-constrained request means the server refuses schema
        ``response_format`` requests: a 4xx other than 408, 409 and 429, or
        one of :attr:`schema_refusal_statuses`. Timeouts, rate limits, connection errors
        and a reply cut off at the output cap are not refusals."""
        failure = http_failure(exc)
        return failure is not None and (failure.status in self.schema_refusal_statuses or failure.refused)

    def is_permanent(self, exc: BaseException) -> bool:
        """Whether a failed model call means this model cannot serve the request however
        often it is asked: a status of :attr:`permanent_statuses`, or a 4xx
        whose message holds one of :attr:`permanent_markers` (400 "maximum context length
        exceeded", 404 "model not found"). Retrying it is pointless; a fallback model may
        still serve it."""
        failure = http_failure(exc)
        if failure is None:
            return False
        if failure.status in self.permanent_statuses:
            return True
        text = str(exc).lower()
        return failure.refused and any(marker in text for marker in self.permanent_markers)

    def falls_back(self, exc: BaseException) -> bool:
        """Whether a failed model call hands the request to the next fallback model once
        this model's retries are spent: a transient failure
        (:meth:`is_transient`) or a permanent one (:meth:`is_permanent`). A request the
        model refuses for its shape (a schema, a bad argument) does not: the engine
        already asks again without what was refused."""
        return self.is_transient(exc) or self.is_permanent(exc)
