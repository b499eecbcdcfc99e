"""A profile applied to an OpenAI-client chat model (``ChatOpenAI`` and its subclasses).

``ChatOpenAI`` targets OpenAI's own API: it drops fields other servers add to a reply
(``reasoning_content``) and can send nothing but OpenAI's message fields. To apply a
:class:`~reactgraph.providers.profile.ProviderProfile`, the engine uses a copy of the
caller's model whose class is a subclass of the model's own class with three hooks:

* ``_get_request_payload``: the profile's request adaptations
  (:meth:`ProviderProfile.adapt_request`), with the reasoning kept on each message;
* ``_create_chat_result``: the reasoning of a reply kept under
  :data:`~reactgraph.providers.reasoning.REASONING_KEY`;
* ``_convert_chunk_to_generation_chunk``: the same for each streamed delta.

Everything else (client, bindings, tools, streaming) is the caller's model unchanged; the
copy is made once per agent, so every call of a run still uses one instance (SPEC R2.1).
"""

from __future__ import annotations

import copy
import sys
import threading
from typing import Any

from langchain_core.messages import AIMessage

from reactgraph.providers.profile import ProviderProfile
from reactgraph.providers.reasoning import REASONING_KEY, kept_reasoning, reasoning_field

_lock = threading.Lock()
_subclasses: dict[tuple[type, str], type] = {}
_origin: dict[type, tuple[type, ProviderProfile]] = {}


def _openai_client_base() -> type | None:
    """``BaseChatOpenAI`` when langchain-openai is loaded, else ``None``. A model of that
    family cannot exist before its module is imported, so a process that never imported it
    has nothing to adapt and does not pay for the import (about a second)."""
    return getattr(sys.modules.get("langchain_openai.chat_models.base"), "BaseChatOpenAI", None)


def _choices(response: Any) -> list[Any]:
    choices = response.get("choices") if isinstance(response, dict) else getattr(response, "choices", None)
    return list(choices or [])


def _message_of(choice: Any) -> Any:
    return choice.get("message") if isinstance(choice, dict) else getattr(choice, "message", None)


def _subclass(base: type, profile: ProviderProfile) -> type:
    """The subclass of ``base`` applying ``profile`` (made once per pair)."""
    key = (base, profile.name)
    with _lock:
        if key in _subclasses:
            return _subclasses[key]

        def _get_request_payload(self: Any, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict:
            payload = base._get_request_payload(self, input_, stop=stop, **kwargs)
            sent = payload.get("messages")
            if not isinstance(sent, list):  # the Responses API: not a Chat Completions body
                return payload
            messages = self._convert_input(input_).to_messages()
            reasoning = [kept_reasoning(m) for m in messages] if len(messages) == len(sent) else [None] * len(sent)
            return profile.adapt_request(payload, reasoning)

        def _create_chat_result(self: Any, response: Any, generation_info: dict | None = None) -> Any:
            result = base._create_chat_result(self, response, generation_info)
            for generation, choice in zip(result.generations, _choices(response), strict=False):
                raw = _message_of(choice)
                thought = reasoning_field(raw) if raw is not None else ""
                if thought and isinstance(generation.message, AIMessage):
                    generation.message.additional_kwargs[REASONING_KEY] = thought
            return result

        def _convert_chunk_to_generation_chunk(
            self: Any, chunk: dict, default_chunk_class: type, base_generation_info: dict | None
        ) -> Any:
            generation = base._convert_chunk_to_generation_chunk(self, chunk, default_chunk_class, base_generation_info)
            choices = chunk.get("choices") or []
            delta = choices[0].get("delta") if choices and isinstance(choices[0], dict) else None
            thought = reasoning_field(delta) if isinstance(delta, dict) else ""
            if generation is not None and thought:
                generation.message.additional_kwargs[REASONING_KEY] = thought
            return generation

        sub = type(base.__name__, (base,), {
            "__module__": base.__module__,
            "__qualname__": base.__qualname__,
            "__doc__": base.__doc__,
            "_get_request_payload": _get_request_payload,
            "_create_chat_result": _create_chat_result,
            "_convert_chunk_to_generation_chunk": _convert_chunk_to_generation_chunk,
        })
        _subclasses[key] = sub
        _origin[sub] = (base, profile)
        return sub


def applied_profile(llm: Any) -> ProviderProfile | None:
    """The profile :func:`adapt_model` applied to ``llm``, ``None`` for a model it did not make."""
    origin = _origin.get(type(llm))
    return origin[1] if origin else None


def adapt_model(llm: Any, profile: ProviderProfile) -> Any:
    """``llm`` with ``profile`` applied, when it speaks through the OpenAI client.

    Args:
        llm: A chat model. ``ChatOpenAI``, ``AzureChatOpenAI`` and other
            ``BaseChatOpenAI`` subclasses are adapted; anything else (other chat model
            classes, bindings) is returned as is.
        profile: The provider profile.

    Returns:
        A copy of ``llm`` (same settings and HTTP clients) whose requests and replies go
        through ``profile`` (see the module docstring); ``llm`` itself when it already
        has that profile or is not an OpenAI-client model. ``llm`` is not modified.
    """
    base_class = _openai_client_base()
    if base_class is None or not isinstance(llm, base_class):
        return llm
    origin = _origin.get(type(llm))
    if origin is not None and origin[1] == profile:
        return llm
    base = origin[0] if origin is not None else type(llm)
    adapted = copy.copy(llm)
    object.__setattr__(adapted, "__class__", _subclass(base, profile))
    return adapted
