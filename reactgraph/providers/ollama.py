"""Ollama's OpenAI-compatible endpoint (``http://localhost:11434/v1``, ``name:tag`` models).

Tools, ``json_object`` and ``json_schema`` formats are accepted; models whose template
the server cannot parse write their calls in the content (``<tool_call>``, Llama 3.1's
``<|python_tag|>``), read there. Older servers refuse ``content: null`` on an assistant
message ("invalid message content type: <nil>"), so it is sent as ``""``; the output cap
goes as ``max_tokens``.
"""

from reactgraph.providers.profile import ProviderProfile

PROFILE = ProviderProfile(
    name="ollama",
    title="Ollama",
    abilities={"tool_call": True, "json_mode": True, "schema_output": "json_schema"},
    null_content=False,
    hosts=("ollama",),
    ports=(11434,),
    class_names=("ChatOllama",),
    model_markers=(":",),
)
