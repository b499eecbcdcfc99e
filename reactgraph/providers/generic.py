"""Any other OpenAI-compatible server, and any chat model that is not an OpenAI client.

Nothing is assumed (SPEC R2.2): no tool calls, no JSON mode, no schemas unless the model's
LangChain profile or the settings say so. What every server accepts is sent: ``""`` for an
empty assistant content, ``max_tokens`` for the cap, no reasoning field. Calls written in
the content are read; an HTTP 500 to a schema format counts as a refusal.
"""

from reactgraph.providers.profile import ProviderProfile

PROFILE = ProviderProfile(
    name="openai_compatible",
    title="Any other OpenAI-compatible server or chat model",
    null_content=False,
    schema_refusal_statuses=frozenset({500}),
)
