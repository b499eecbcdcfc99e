"""DeepSeek's API (``deepseek-chat``, ``deepseek-reasoner``).

Native tool calls and ``json_object``; no schema formats. In thinking mode every reply
carries ``reasoning_content``, and the next request of a tool loop is refused with HTTP 400
unless each assistant message carries its reasoning back, so it is replayed.
"""

from reactgraph.providers.profile import ProviderProfile

PROFILE = ProviderProfile(
    name="deepseek",
    title="DeepSeek",
    abilities={"tool_call": True, "json_mode": True, "schema_output": "none"},
    reasoning_field="reasoning_content",
    hosts=("deepseek.com",),
    class_names=("ChatDeepSeek",),
    model_markers=("deepseek-chat", "deepseek-reasoner"),
)
