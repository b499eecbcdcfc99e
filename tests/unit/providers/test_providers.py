"""Provider profiles (SPEC R13.2): how one is chosen, the abilities it gives, its
request adaptations and response repairs, reasoning replay over real HTTP."""

from __future__ import annotations

import httpx
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import AzureChatOpenAI, ChatOpenAI

from reactgraph import AgentSettings, ModelAbilities, ReActAgent, resolve_abilities
from reactgraph.models import LocalModelServer
from reactgraph.models.env import abilities_from_env
from reactgraph.providers import ENV_PROVIDER, adapt_model, detect_profile, get_profile, select_profile
from reactgraph.providers.reasoning import REASONING_KEY
from reactgraph.testing import ScriptedChatModel
from tests.fakeproviders import fake_provider


def _openai(model: str = "some-model", base_url: str | None = None) -> ChatOpenAI:
    return ChatOpenAI(model=model, api_key="k", base_url=base_url)


@pytest.mark.parametrize(("base_url", "model", "expected"), [
    (None, "gpt-4o-mini", "openai"),
    ("https://api.openai.com/v1", "gpt-4o", "openai"),
    ("https://myco.openai.azure.com/openai", "gpt-4o", "openai"),
    ("https://api.deepseek.com/v1", "deepseek-chat", "deepseek"),
    ("http://gpu-box:8000/v1", "Qwen/Qwen2.5-7B-Instruct", "vllm"),
    ("http://vllm.internal/v1", "served-name", "vllm"),
    ("http://localhost:11434/v1", "mistral", "ollama"),
    ("http://box:9999/v1", "llama3.1:8b", "ollama"),
    ("http://localhost:1234/v1", "mistral-nemo", "lmstudio"),
    ("http://127.0.0.1:8081/v1", "Qwen2.5-7B-Q4_K_M.gguf", "llamacpp"),
    ("http://127.0.0.1:8000/v1", "gpt-4o-mini", "openai_compatible"),
])
def test_profile_is_detected_from_base_url_and_model_name(base_url, model, expected, monkeypatch):
    monkeypatch.delenv(ENV_PROVIDER, raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert detect_profile(_openai(model, base_url)).name == expected
    assert detect_profile(_openai(model, base_url).bind(temperature=0)).name == expected


def test_profile_from_the_class_and_for_any_other_chat_model(monkeypatch):
    monkeypatch.delenv(ENV_PROVIDER, raising=False)
    azure = AzureChatOpenAI(azure_endpoint="https://x.example.com", api_key="k", api_version="2024-06-01",
                            azure_deployment="d")
    assert detect_profile(azure).name == "openai"
    assert detect_profile(ScriptedChatModel()).name == "openai_compatible"


def test_an_explicit_choice_wins_env_then_abilities(monkeypatch):
    llm = _openai("llama3.1:8b", "http://box:9999/v1")
    monkeypatch.setenv(ENV_PROVIDER, "vLLM")
    assert select_profile(llm).name == "vllm"
    assert resolve_abilities(llm).provider == "vllm"
    assert resolve_abilities(llm, {"provider": "lm-studio"}).provider == "lmstudio"
    assert abilities_from_env({ENV_PROVIDER: "llama.cpp"}) == {"provider": "llamacpp"}
    with pytest.raises(ValueError, match="REACTGRAPH_PROVIDER"):
        abilities_from_env({ENV_PROVIDER: "nonesuch"})
    with pytest.raises(ValueError, match="unknown provider"):
        ModelAbilities(provider="nonesuch")


def test_ability_defaults_per_profile(monkeypatch):
    monkeypatch.delenv(ENV_PROVIDER, raising=False)
    vllm = resolve_abilities(_openai("Qwen/Qwen3-8B", "http://h:8000/v1"))
    assert (vllm.tool_call, vllm.json_mode, vllm.schema_output) == (True, True, "json_schema")
    lmstudio = resolve_abilities(_openai("m", "http://localhost:1234/v1"))
    assert (lmstudio.json_mode, lmstudio.schema_output) == (False, "json_schema")  # json_object is refused there
    generic = resolve_abilities(_openai("m", "http://h:8000/v1"))
    assert (generic.tool_call, generic.json_mode, generic.schema_output) == (False, False, "none")
    openai = resolve_abilities(_openai("gpt-4o-mini"))
    assert (openai.tool_call, openai.schema_output, openai.provider) == (True, "json_schema", "openai")
    explicit = resolve_abilities(_openai("Qwen/Qwen3-8B", "http://h:8000/v1"), {"tool_call": False})
    assert (explicit.tool_call, explicit.json_mode) == (False, True)


def test_the_embedded_server_uses_the_llamacpp_profile():
    server = LocalModelServer(command=["true"])
    assert server.abilities.provider == "llamacpp" and server.abilities.schema_output == "json_object_schema"
    assert server.abilities.tool_call is False


def test_request_adaptations():
    def payload():
        return {"max_completion_tokens": 64, "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "reasoning": "stale",
             "tool_calls": [{"id": "a", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "r"}]}

    kept = [None, "I should call t", None]
    deepseek = get_profile("deepseek").adapt_request(payload(), kept)
    assert deepseek["messages"][1]["reasoning_content"] == "I should call t" and "reasoning" not in deepseek["messages"][1]
    assert deepseek["max_tokens"] == 64 and "max_completion_tokens" not in deepseek
    openai = get_profile("openai").adapt_request(payload(), kept)
    assert "reasoning_content" not in openai["messages"][1] and "reasoning" not in openai["messages"][1]
    assert openai["messages"][1]["content"] is None and openai["max_completion_tokens"] == 64
    ollama = get_profile("ollama").adapt_request(payload(), kept)
    assert ollama["messages"][1]["content"] == "" and "reasoning_content" not in ollama["messages"][1]


@pytest.mark.parametrize(("status", "transient"), [(429, True), (408, True), (500, True), (503, True), (400, False),
                                                   (401, False), (404, False)])
def test_retryable_failures(status, transient):
    response = httpx.Response(status, request=httpx.Request("POST", "http://x"))
    exc = httpx.HTTPStatusError("x", request=response.request, response=response)
    assert get_profile("openai").is_transient(exc) is transient
    assert get_profile("openai").is_transient(ConnectionError()) is True
    assert get_profile("openai").is_transient(ValueError()) is False


def test_adapting_keeps_the_callers_model_and_is_idempotent():
    llm = _openai("deepseek-chat", "https://api.deepseek.com/v1")
    adapted = adapt_model(llm, get_profile("deepseek"))
    assert adapted is not llm and type(llm) is ChatOpenAI and isinstance(adapted, ChatOpenAI)
    assert adapt_model(adapted, get_profile("deepseek")) is adapted
    assert detect_profile(adapt_model(llm, get_profile("vllm"))).name == "vllm"
    assert adapted.model_name == "deepseek-chat" and adapted.async_client is llm.async_client
    scripted = ScriptedChatModel()
    assert adapt_model(scripted, get_profile("deepseek")) is scripted


# reasoning replay over HTTP ------------------------------------------------------------------

CALLS = [[("lookup", {"key": "a"})], [("lookup", {"key": "b"})], [("lookup", {"key": "c"})], "a, b and c found."]


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def _client(url: str, model: str) -> ChatOpenAI:
    return ChatOpenAI(model=model, base_url=url, api_key="k", max_retries=0,
                      http_async_client=httpx.AsyncClient(trust_env=False))


async def test_deepseek_run_of_three_tool_iterations_sends_every_reasoning_back():
    server = fake_provider("deepseek", plan=CALLS, synthesis="done")
    async with server.serving() as url:
        agent = ReActAgent(_client(url, "deepseek-reasoner"), [lookup], settings=AgentSettings(model_attempts=1))
        result = await agent.run("find a, b, c")
    assert server.refused == [] and [s.tool_args["key"] for s in result.steps] == ["a", "b", "c"]
    loop = [body for body in server.requests if body.get("tools")]
    assert len(loop) == 4
    for n, body in enumerate(loop):
        sent = [m.get("reasoning_content") for m in body["messages"] if m["role"] == "assistant"]
        assert sent == [f"thinking about call {i + 1}" for i in range(n)]
    stored = [m for m in result.messages if isinstance(m, AIMessage)]
    assert [m.additional_kwargs.get(REASONING_KEY) for m in stored] == [f"thinking about call {i}" for i in range(1, 5)]
    assert result.answer == "a, b and c found."


async def test_a_deepseek_server_refuses_the_loop_without_replay():
    server = fake_provider("deepseek", plan=CALLS)
    async with server.serving() as url:
        plain = _client(url, "deepseek-reasoner")
        history = [HumanMessage("find a"),
                   AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"key": "a"}, "id": "c1"}],
                             additional_kwargs={REASONING_KEY: "think"}),
                   ToolMessage("value of a", tool_call_id="c1")]
        with pytest.raises(Exception, match="reasoning_content"):
            await plain.bind_tools([lookup]).ainvoke(history)  # ChatOpenAI alone does not send it back
        adapted = adapt_model(plain, get_profile("deepseek"))
        reply = await adapted.bind_tools([lookup]).ainvoke(history)
    assert reply.additional_kwargs[REASONING_KEY] == "thinking about call 2"


async def test_openai_profile_run_sends_no_reasoning_back():
    server = fake_provider("openai", plan=CALLS, reasoning_field="reasoning_content", synthesis="done")
    async with server.serving() as url:
        agent = ReActAgent(_client(url, "gpt-4o-mini"), [lookup], abilities={"provider": "openai"},
                           settings=AgentSettings(model_attempts=1))
        result = await agent.run("find a, b, c")
    assert server.refused == [] and len(result.steps) == 3
    loop = [body for body in server.requests if body.get("tools")]
    assert len(loop) == 4
    assert all("reasoning_content" not in m for body in loop for m in body["messages"])
    assert any(m.additional_kwargs.get(REASONING_KEY) for m in result.messages if isinstance(m, AIMessage))


@pytest.mark.parametrize(("synthesis", "answer"), [("always", "Only the answer."), ("auto", "The answer.")])
async def test_reasoning_is_never_in_the_answer_stream(synthesis, answer):
    """Whichever call writes the answer — a synthesis call, or the loop's own (``auto``, the
    default of a model not marked small) — its reasoning is never streamed as the answer."""
    server = fake_provider("deepseek", plan=["The answer."], synthesis="Only the answer.")
    async with server.serving() as url:
        agent = ReActAgent(_client(url, "deepseek-reasoner"), [lookup],
                           settings=AgentSettings(model_attempts=1, synthesis=synthesis))
        events = [e async for e in agent.astream_events("q")]
    deltas = [e.data["content"] for e in events if e.channel == "answer" and e.data.get("status") == "delta"]
    assert "".join(deltas) == answer and not any("thinking" in d for d in deltas)
    if synthesis == "always":
        requests = [b for b in server.requests if b.get("stream")]
        assert requests and requests[0]["messages"][0]["role"] == "system"


async def test_a_transient_status_is_retried_per_profile():
    server = fake_provider("vllm", plan=["fine"])
    failures = iter([503])

    def flaky(body):
        return next(failures, None) and "server overloaded"

    server.rules.append(flaky)
    server.status = 503
    async with server.serving() as url:
        agent = ReActAgent(_client(url, "Qwen/Qwen3-8B"), [lookup],
                           settings=AgentSettings(model_attempts=2, retry_initial_delay=0.01, synthesize=False))
        result = await agent.run("q")
    assert server.refused == ["server overloaded"] and result.answer == "fine"
