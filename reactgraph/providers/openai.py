"""OpenAI's service and Azure OpenAI.

The model's LangChain profile describes these exactly, so abilities come from it, and a
model whose profile says ``structured_output`` takes strict ``json_schema`` formats. The
API rejects fields it does not know: reasoning is never sent back. Tool calls are parsed
by the service, so content is never read for calls. The output cap goes as
``max_completion_tokens`` (reasoning models refuse ``max_tokens``).
"""

from reactgraph.providers.profile import ProviderProfile

PROFILE = ProviderProfile(
    name="openai",
    title="OpenAI and Azure OpenAI",
    profile_schema_output="json_schema",
    max_tokens_field="max_completion_tokens",
    content_tool_calls=False,
    hosts=("api.openai.com", "openai.azure.com", "cognitiveservices.azure.com"),
    class_names=("AzureChatOpenAI",),
)
