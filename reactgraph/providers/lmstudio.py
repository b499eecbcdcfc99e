"""LM Studio's local server (``http://localhost:1234/v1``).

It refuses ``response_format={"type": "json_object"}`` (only ``json_schema`` and ``text``
are accepted), so JSON mode is off and schemas go as ``json_schema``. Models it cannot
parse write their calls in the content (Mistral's ``[TOOL_CALLS]``), read there.
"""

from reactgraph.providers.profile import ProviderProfile

PROFILE = ProviderProfile(
    name="lmstudio",
    title="LM Studio",
    abilities={"tool_call": True, "json_mode": False, "schema_output": "json_schema"},
    hosts=("lmstudio", "lm-studio"),
    ports=(1234,),
)
