"""vLLM and SGLang serving a Hugging Face model (``Org/Model`` names).

Tool calls need the server's tool parser (``--enable-auto-tool-choice --tool-call-parser``);
when the model writes a format the parser misses, the call comes back in the content and is
read there. ``json_object`` and ``json_schema`` formats are constrained by the server's
guided decoding. A reasoning parser returns the thinking as ``reasoning_content`` (newer
versions: ``reasoning``); several chat templates need it back in a tool loop, so it is
replayed.
"""

from reactgraph.providers.profile import ProviderProfile

PROFILE = ProviderProfile(
    name="vllm",
    title="vLLM and SGLang",
    abilities={"tool_call": True, "json_mode": True, "schema_output": "json_schema"},
    reasoning_field="reasoning_content",
    hosts=("vllm", "sglang"),
    model_markers=("/",),
)
