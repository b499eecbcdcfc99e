"""llama.cpp's server (``llama-server``, llama-cpp-python, and the embedded ``xllamacpp``
server of :mod:`reactgraph.models.local`).

JSON mode and schemas in llama.cpp's own shape, ``json_object`` with a ``schema``. Older
servers answer a ``json_schema`` format with HTTP 500, which counts as a refusal. Native
tool calls need ``--jinja`` and a chat template with tools, so they are off unless set;
with a template but no parser the call comes back in the content (``<function=name>``),
read there. Some versions refuse ``content: null`` and ignore ``max_completion_tokens``.
"""

from reactgraph.providers.profile import ProviderProfile

PROFILE = ProviderProfile(
    name="llamacpp",
    title="llama.cpp (llama-server, llama-cpp-python, the embedded model)",
    abilities={"tool_call": False, "json_mode": True, "schema_output": "json_object_schema"},
    null_content=False,
    schema_refusal_statuses=frozenset({500}),
    hosts=("llamacpp", "llama-cpp", "llama.cpp"),
    model_markers=(".gguf",),
)
