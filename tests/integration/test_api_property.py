"""Property-based API tests generated from the server's own OpenAPI schema (
SPEC R13.5): for every operation, path parameters and JSON bodies are drawn from the
schema (``hypothesis-jsonschema``) and mixed with hostile ones (any JSON, non-standard
numbers, lone surrogates, line separators, bytes that are not UTF-8, junk headers), sent
over HTTP to a real uvicorn server whose scripted agent echoes the message through a tool
into its answer. No request may answer 5xx or hang, and every run's stream ends with
``done`` or ``error``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import ModelAbilities, ReActAgent
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.serving import parse_sse, server_thread

pytestmark = pytest.mark.integration  # a real uvicorn server on a loopback socket


@tool
def echo(text: str) -> str:
    """Return the text as the tool's observation."""
    return f"echo: {text}"


def echo_then_answer(messages: list[BaseMessage]) -> AIMessage | str:
    """Call ``echo`` with the question, then answer with the observation."""
    question = next(m for m in reversed(messages) if isinstance(m, HumanMessage)).content
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not results or not isinstance(messages[-1], ToolMessage):
        return AIMessage(content="", tool_calls=[tool_call("echo", {"text": question}, f"c{len(results)}")])
    return f"The tool said: {results[-1].content}"


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, dict[str, Any]]]:
    """A real uvicorn server in a thread; yields its URL and its OpenAPI schema."""
    model = ScriptedChatModel(responses=[echo_then_answer], repeat_last=True, synthesis=lambda m: m[-1].content[-300:])
    agent = ReActAgent(model, [echo], abilities=ModelAbilities(tool_call=True), checkpointer=InMemorySaver())
    app = create_app(agent, ServerSettings(api_key="", max_body_bytes=16_384, max_message_chars=2_000))
    with server_thread(app) as url:
        yield url, app.openapi()


def resolve(schema: dict[str, Any], openapi: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$ref`` to ``#/components/schemas/...`` replaced."""
    if "$ref" in schema:
        return openapi["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


HOSTILE_TEXT = st.lists(st.sampled_from(
    ["a", " ", "\n", "\r", "\u0000", "\u0001", "\u0085", "\u2028", "\u2029", "\ud800", "\udcff", "\ufeff", "한",
     "\U0001F600", "data:", "\\", '"', "<script>", "[x](", "javascript:"]), max_size=40).map("".join)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | HOSTILE_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(HOSTILE_TEXT, inner, max_size=4), max_leaves=12)
RAW_BODIES = st.sampled_from([
    b'{"message": NaN}', b'{"message": Infinity}', b'{"message": 1e999}', b'{"message": "\\ud800x"}',
    b'{"message": "\xff"}', b"", b"{", b"null", b'{"message": "ok"', b'{"message": "' + b"x" * 20_000 + b'"}',
])


def from_object_schema(schema: dict[str, Any], openapi: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values of a JSON schema: objects built member by member from their properties'
    schemas and arrays item by item (hypothesis-jsonschema draws the leaves; its own object
    strategy does not run on this Hypothesis), ``$ref`` and ``anyOf`` followed, anything
    else by hypothesis-jsonschema."""
    schema = resolve(schema, openapi)
    if "anyOf" in schema:
        return st.one_of([from_object_schema(sub, openapi) for sub in schema["anyOf"]])
    if schema.get("type") == "array" and "items" in schema:
        return st.lists(from_object_schema(schema["items"], openapi), min_size=schema.get("minItems", 0), max_size=3)
    if schema.get("type") != "object":
        return from_schema(schema)
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    return st.fixed_dictionaries(
        {name: from_object_schema(sub, openapi) for name, sub in properties.items() if name in required},
        optional={name: from_object_schema(sub, openapi) for name, sub in properties.items() if name not in required})


def bodies(operation: dict[str, Any], openapi: dict[str, Any]) -> st.SearchStrategy[bytes | None]:
    """Bodies for an operation: schema-valid ones, any JSON, and raw hostile bytes."""
    content = (operation.get("requestBody") or {}).get("content", {}).get("application/json")
    schema_valid = from_object_schema(content["schema"], openapi) if content else st.none()
    as_json = st.one_of(schema_valid, JSON_VALUES).map(
        lambda value: None if value is None else json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass"))
    return st.one_of(as_json, RAW_BODIES)


def thread_ids(operation: dict[str, Any]) -> st.SearchStrategy[str]:
    parameter = next(p for p in operation["parameters"] if p["name"] == "thread_id")
    return st.one_of(from_schema(parameter["schema"]), HOSTILE_TEXT.filter(lambda text: "/" not in text and text))


def check(response: httpx.Response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500])
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        events = parse_sse(response.text)
        assert events and events[-1][0] in ("done", "error"), events[-3:]
    elif response.status_code >= 400:
        assert "detail" in response.json()


OPERATIONS = [("/threads/{thread_id}/runs", "post"), ("/threads/{thread_id}/inject", "post"),
              ("/threads/{thread_id}/resume", "post"), ("/threads/{thread_id}/approvals", "post"),
              ("/threads/{thread_id}/cancel", "post"), ("/threads/{thread_id}", "get"),
              ("/threads/{thread_id}", "delete")]


def test_the_schema_has_exactly_the_operations_exercised_here(server):
    _url, openapi = server
    assert {(path, method) for path, methods in openapi["paths"].items() for method in methods
            if "{thread_id}" in path} == set(OPERATIONS)


@pytest.mark.parametrize(("path", "method"), OPERATIONS)
def test_an_operation_holds_against_generated_and_hostile_requests(server, path, method):
    url, openapi = server
    operation = openapi["paths"][path][method]
    statuses: set[int] = set()

    with httpx.Client(base_url=url, timeout=30) as client:
        @settings(max_examples=60, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
        @given(thread_id=thread_ids(operation), body=bodies(operation, openapi),
               authorization=st.one_of(st.none(), st.sampled_from(["Bearer x", "Basic", "Bearer \u00ff", ""])))
        def exercise(thread_id: str, body: bytes | None, authorization: str | None) -> None:
            headers: dict[str, Any] = {"Content-Type": "application/json"}
            if authorization is not None:
                headers["Authorization"] = authorization.encode("utf-8")  # raw bytes, non-ASCII included
            segment = quote(thread_id.encode("utf-8", "surrogatepass"), safe="")
            response = client.request(method.upper(), path.replace("{thread_id}", segment), content=body, headers=headers)
            check(response)
            statuses.add(response.status_code)

        exercise()
    assert statuses <= {200, 202, 400, 404, 405, 409, 413, 422, 429}, statuses
    assert 422 in statuses or 404 in statuses  # generated thread ids and bodies do hit the refusals
    if path.endswith("/runs"):
        assert 200 in statuses  # and schema-valid bodies do start runs
