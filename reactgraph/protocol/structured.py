"""``structured_llm_call``: the one entry point for schema-shaped model output (SPEC §4).

Three levels, tried in order as the model's abilities allow:

1. native function calling — one function whose parameters are the schema, forced with
   ``tool_choice``; its arguments are the value (``tool_call`` ability; 1 call);
2. JSON mode — ``response_format={"type": "json_object"}``; one reformat retry on a
   parse failure (``json_mode`` ability; at most 2 calls). A model that can take a schema
   (``schema_output`` ability) is sent the caller's schema in its request shape
   instead; if it refuses that request, the level's second call is plain JSON mode (or,
   without ``json_mode``, the level ends);
3. plain text — ``extract_json`` on the reply, then ``regex_fallback``; one reformat
   retry (always; at most 2 calls).

So at most 5 calls with both abilities, 4 with JSON mode only, 2 with plain text only
(R4.5). A provider that rejects a request format (an HTTP error for ``tool_choice`` or
``response_format``) drops to the next level instead of failing.

With ``fallbacks``, a call that fails as the fallback policy says (a transient
or permanent failure, :meth:`~reactgraph.providers.ProviderProfile.falls_back`) ends that
model's levels, and the next model starts over at its own first level.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.constants import TAG_NOSTREAM
from pydantic import BaseModel, ValidationError

from reactgraph.engine.dualmode import call_model
from reactgraph.providers.abilities import ModelAbilities, resolve_abilities
from reactgraph.protocol.action_schema import schema_response_format
from reactgraph.protocol.actions import message_text
from reactgraph.core.errors import StructuredOutputError
from reactgraph.engine.fallbacks import FallbackModel, answered, as_fallback, switch
from reactgraph.protocol.jsonparse import extract_json, safe_json
from reactgraph.protocol.prompts import STRUCTURED_INSTRUCTION, reformat_request
from reactgraph.providers import adapt_model, select_profile
from reactgraph.core.usage import sum_usage, usage_of

_UNSET: Any = object()



@dataclass
class StructuredCallResult:
    """What :func:`structured_llm_call` produced.

    Attributes:
        value: The parsed value (a dict, or a validated pydantic object when the schema is a
            model class), after ``parse_fn``; ``default_value`` when every level failed.
        level: The level that succeeded (1, 2 or 3), ``None`` when it fell to the default.
        calls: Model calls made (at most 5, R4.5).
        raw: The last raw text (or tool-call arguments as JSON) the model returned.
        error: Why the last attempt failed, ``None`` on success.
        usage: Tokens summed over the calls (``input_tokens``, ``output_tokens``,
            ``total_tokens``) and ``model_calls``.
    """

    value: Any = None
    level: int | None = None
    calls: int = 0
    raw: str = ""
    error: str | None = None
    usage: dict[str, int] = field(default_factory=sum_usage)


class _LevelFailed(Exception):
    pass


class _ModelFailed(Exception):
    """A model call failed as the fallback policy says: the next model takes over."""


def _schema_dict(schema: dict[str, Any] | type[BaseModel]) -> tuple[dict[str, Any], str, str]:
    """JSON schema, function name and description for ``schema``."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        json_schema = schema.model_json_schema()
        name = schema.__name__
        description = (schema.__doc__ or "").strip().splitlines()[0] if schema.__doc__ else f"Return a {name}."
    elif isinstance(schema, dict):
        json_schema = dict(schema)
        name = str(json_schema.get("title") or "respond")
        description = str(json_schema.get("description") or "Return the requested data.")
    else:
        raise TypeError(f"schema must be a JSON schema dict or a pydantic model class, got {type(schema).__name__}")
    safe_name = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in name)[:64] or "respond"
    return json_schema, safe_name, description


def _check_against(schema: dict[str, Any] | type[BaseModel], data: Any) -> Any:
    """Validate ``data``: a pydantic model class validates fully; a dict schema checks the
    object type and its required keys. Raises ValueError when it does not match."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        try:
            return schema.model_validate(data)
        except ValidationError as exc:
            raise ValueError(str(exc).replace("\n", " ")) from exc
    missing = [key for key in schema.get("required", []) if key not in data]
    if missing:
        raise ValueError(f"missing required keys: {', '.join(missing)}")
    return data


async def structured_llm_call(
    llm: BaseChatModel | FallbackModel,
    messages: Sequence[BaseMessage],
    schema: dict[str, Any] | type[BaseModel],
    *,
    abilities: ModelAbilities | dict[str, Any] | None = None,
    parse_fn: Callable[[Any], Any] | None = None,
    default_value: Any = _UNSET,
    regex_fallback: Callable[[str], dict[str, Any] | None] | None = None,
    config: RunnableConfig | None = None,
    reformat_retries: int = 1,
    fallbacks: Sequence[Any] = (),
) -> StructuredCallResult:
    """Get a value matching ``schema`` from the model (SPEC §4).

    Args:
        llm: Any LangChain chat model, or a :class:`~reactgraph.FallbackModel` (its
            abilities used when ``abilities`` is ``None``, its breaker counting its failures).
        messages: The conversation asking for the data.
        schema: A JSON schema dict (its ``required`` keys are checked) or a pydantic
            model class (fully validated; the value is the model instance).
        abilities: The model's abilities; resolved from its profile when ``None``
            (see :func:`~reactgraph.providers.abilities.resolve_abilities`). ``tool_call`` enables
            level 1, ``json_mode`` or ``schema_output`` level 2 (``schema_output`` sends
            ``schema`` with the request); level 3 always runs.
        parse_fn: Turns the validated value into a domain object; an exception it raises
            counts as a failure of that level.
        default_value: Returned (with ``level=None``) when every level fails.
        regex_fallback: At level 3, called with the raw text when no JSON object was
            found; returns a dict or ``None``.
        config: RunnableConfig for the model calls (they are tagged to stay out of token
            streams).
        reformat_retries: Reformat requests per text level after an unparseable reply
            (default 1, R4.3, R4.4; the graph's nodes pass ``AgentSettings.parse_retries``).
            The call counts of R4.5 are for the default.
        fallbacks: Models to go on with when a model call fails as the fallback policy
            says: chat models, ``(model, abilities)`` pairs or
            :class:`~reactgraph.FallbackModel`\\ s. Models whose breaker is open are
            skipped; a ``model_switch`` event is emitted inside a graph run.

    Returns:
        The :class:`StructuredCallResult`; ``calls``, ``usage`` count every model's calls.

    Raises:
        StructuredOutputError: Every level failed and no ``default_value`` was given.
        TypeError: ``schema`` is neither a dict nor a pydantic model class.
    """
    first = llm if isinstance(llm, FallbackModel) else FallbackModel(llm, abilities)
    models = [first if abilities is None else FallbackModel(first.llm, abilities, first.name, first.breaker),
              *map(as_fallback, fallbacks)]
    live = [model for model in models if model.breaker is None or model.breaker.allows()] or models[:1]
    spent = StructuredCallResult()
    for position, model in enumerate(live):
        last = position == len(live) - 1
        try:
            result = await _structured_call(
                model.llm, messages, schema, abilities=model.abilities, parse_fn=parse_fn, default_value=default_value,
                regex_fallback=regex_fallback, config=config, reformat_retries=reformat_retries, hand_on=not last)
        except _ModelFailed as failed:
            if model.breaker is not None:
                model.breaker.record_failure()
            spent.calls, spent.usage = spent.calls + failed.args[1].calls, sum_usage(spent.usage, failed.args[1].usage)
            switch(model.label, live[position + 1].label, failed.args[0], "structured", failed.args[2])
            continue
        except StructuredOutputError as exc:
            exc.result.calls, exc.result.usage = exc.result.calls + spent.calls, sum_usage(exc.result.usage, spent.usage)
            raise
        if model.breaker is not None:
            model.breaker.record_success()
        answered(model.label)
        result.calls, result.usage = result.calls + spent.calls, sum_usage(result.usage, spent.usage)
        return result
    raise AssertionError("the last model never hands on")  # pragma: no cover


async def _structured_call(
    llm: BaseChatModel,
    messages: Sequence[BaseMessage],
    schema: dict[str, Any] | type[BaseModel],
    *,
    abilities: ModelAbilities | dict[str, Any] | None,
    parse_fn: Callable[[Any], Any] | None,
    default_value: Any,
    regex_fallback: Callable[[str], dict[str, Any] | None] | None,
    config: RunnableConfig | None,
    reformat_retries: int,
    hand_on: bool,
) -> StructuredCallResult:
    """:func:`structured_llm_call` with one model. ``hand_on``: a call that fails as the
    fallback policy says raises ``_ModelFailed(exc, result so far, profile)`` instead of
    trying the next level."""
    resolved = resolve_abilities(llm, abilities)
    profile = select_profile(llm, resolved.provider)
    llm = adapt_model(llm, profile)  # the provider's request fixes (SPEC R13.2)
    json_schema, name, description = _schema_dict(schema)
    schema_text = json.dumps(json_schema, ensure_ascii=False)
    result = StructuredCallResult()
    call_config: RunnableConfig = {**(config or {}), "tags": [*(config or {}).get("tags", []), TAG_NOSTREAM]}
    base = list(messages)

    def accept(data: Any, level: int) -> bool:
        try:
            value = _check_against(schema, data)
            if parse_fn is not None:
                value = parse_fn(value)
        except Exception as exc:  # a failed check or parse_fn fails the level
            result.error = f"level {level}: {type(exc).__name__}: {exc}"
            return False
        result.value, result.level, result.error = value, level, None
        return True

    async def invoke(model: Any, prompt: list[BaseMessage], level: int) -> AIMessage:
        result.calls += 1
        try:
            response = await call_model(model, prompt, call_config)
        except Exception as exc:  # the provider refused this request format: next level
            result.error = f"level {level}: request failed: {type(exc).__name__}: {exc}"
            result.usage = sum_usage(result.usage, {"model_calls": 1})
            if hand_on and profile.falls_back(exc):  # the model is down: the next model's levels
                raise _ModelFailed(exc, result, profile) from exc
            raise _LevelFailed from exc
        result.usage = sum_usage(result.usage, usage_of(response))
        return response

    # Level 1: one forced function whose parameters are the schema.
    if resolved.tool_call:
        function = {"type": "function", "function": {"name": name, "description": description, "parameters": json_schema}}
        try:
            model = llm.bind_tools([function], tool_choice=name)
            response = await invoke(model, base, 1)
            calls = response.tool_calls
            result.raw = safe_json(calls[0]["args"]) if calls else message_text(response)
            data = calls[0]["args"] if calls else extract_json(message_text(response))
            if data is None:
                result.error = "level 1: the model returned no function call"
            elif accept(data, 1):
                return result
        except _LevelFailed:
            pass
        except NotImplementedError as exc:  # this chat model class has no tool calling: next level
            result.error = f"level 1: {type(exc).__name__}: {exc}"

    instruction = HumanMessage(STRUCTURED_INSTRUCTION.format(schema=schema_text))

    async def text_level(level: int, model: Any, fallback: Any = None) -> bool:
        """``1 + reformat_retries`` calls at most; when the first call's request fails and
        ``fallback`` is given, the second call is made with ``fallback`` on the same prompt."""
        prompt = [*base, instruction]
        for attempt in range(1 + max(reformat_retries, 0)):
            try:
                response = await invoke(model, prompt, level)
            except _LevelFailed:
                if fallback is None or attempt:
                    raise
                model, fallback = fallback, None
                continue
            raw = message_text(response)
            result.raw = raw
            data = extract_json(raw)
            result.error = f"level {level}: no JSON object in the reply"
            if data is None and level == 3 and regex_fallback is not None:
                try:
                    data = regex_fallback(raw)
                except Exception as exc:  # a broken fallback is a failed attempt
                    result.error = f"level 3: regex_fallback raised {type(exc).__name__}: {exc}"
            if data is not None and accept(data, level):
                return True
            if attempt < reformat_retries:
                prompt = [*prompt, AIMessage(content=raw), HumanMessage(reformat_request(
                    f"only one JSON object that matches this schema, and nothing else:\n{schema_text}",
                    f" matching the schema ({result.error})"))]
        return False

    # Level 2: JSON mode (with the schema when the provider takes one), one reformat retry.
    constrained = schema_response_format(resolved.schema_output, json_schema, name=name)
    plain = llm.bind(response_format={"type": "json_object"}) if resolved.json_mode else None
    if constrained is not None or plain is not None:
        try:
            if constrained is not None:
                if await text_level(2, llm.bind(response_format=constrained), plain):
                    return result
            elif await text_level(2, plain):
                return result
        except _LevelFailed:
            pass
    # Level 3: plain text, regex fallback, one reformat retry.
    try:
        if await text_level(3, llm):
            return result
    except _LevelFailed:
        pass
    if default_value is not _UNSET:
        result.value, result.level = default_value, None
        return result
    raise StructuredOutputError(result)
