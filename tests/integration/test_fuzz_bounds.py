"""Fuzzing what a model, a client and a config can put into the engine: tool
arguments, approval edits, AG-UI inputs and MCP configs drawn with deep nesting, lone
surrogates and line separators, against a real uvicorn server on a real SQLite or Postgres
checkpointer. Every request answers below 500 within the client's timeout (a hang fails
it), every run's stream read by a line-splitting client ends with ``done`` / ``error``
(``RUN_FINISHED`` / ``RUN_ERROR`` on AG-UI) in whole JSON lines, and every thread a run
stored reads back (``GET /threads/{id}`` answers 200, and a next run on it ends)."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from reactgraph import AgentSettings, MCPConfigError, ModelAbilities, ReActAgent, open_persistence
from reactgraph.tools.mcp import parse_mcp_config
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.conftest import require_postgres_url

pytestmark = pytest.mark.integration

REQUEST_BOUND_SECONDS = 60
"""The client's timeout: far longer than any of these requests takes; a run past it hangs."""

ODD = ["a", " ", "\n", "\u0085", "\u2028", "\u2029", "\ud800", "\udcff", "\udbff", "한", "\\", '"', "{", "["]
TEXT = st.lists(st.sampled_from(ODD), max_size=12).map("".join)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | TEXT
SHALLOW = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                       max_leaves=8)


class Deep:
    """A value nested ``depth`` levels around ``leaf``, built when used: Hypothesis prints
    the values it draws, and its printer recurses."""

    def __init__(self, depth: int, leaf: Any) -> None:
        self.depth, self.leaf = depth, leaf

    def __repr__(self) -> str:
        return f"Deep({self.depth}, {self.leaf!r})"

    def build(self) -> Any:
        value = self.leaf
        for level in range(self.depth):
            value = {"k": value} if level % 2 else [value]
        return value


def built(value: Any) -> Any:
    """``value`` with its :class:`Deep` parts built."""
    if isinstance(value, Deep):
        return value.build()
    if isinstance(value, dict):
        return {key: built(item) for key, item in value.items()}
    if isinstance(value, list):
        return [built(item) for item in value]
    return value


DEEP = st.builds(Deep, st.sampled_from([1, 60, 63, 64, 65, 130, 254, 300, 1200, 3000]), SCALARS)
VALUES = SHALLOW | DEEP
ARGUMENTS = st.dictionaries(TEXT, VALUES, max_size=3) | st.builds(lambda value: {"document": value}, VALUES)

PLANS: dict[str, tuple[Any, str]] = {}
"""The scripted model's move per question token: the tool call's arguments, then the answer."""
TOKENS = itertools.count()
SESSION = uuid.uuid4().hex[:8]
"""Thread ids of this session (the Postgres database keeps earlier sessions' threads)."""


@tool
def store(document: Any = None) -> str:
    """Store a document (approval required)."""
    return f"stored {str(document)[:40]}"


def planned(messages: list[BaseMessage]) -> AIMessage | str:
    question = next(m for m in messages if isinstance(m, HumanMessage) and "plan-" in str(m.content))
    token = str(question.content).split("plan-", 1)[1].split(" ", 1)[0]
    arguments, answer = PLANS.get(token, ({}, "no plan"))
    if isinstance(messages[-1], ToolMessage) or any(isinstance(m, ToolMessage) for m in messages[-3:]):
        return answer
    return AIMessage(content="", tool_calls=[tool_call("store", arguments, f"call-{token}")])


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def server(request, tmp_path_factory) -> Iterator[str]:
    """A real uvicorn server in a thread of its own, its agent on a real checkpointer."""
    url = str(tmp_path_factory.mktemp("fuzz") / "checkpoints.db") if request.param == "sqlite" else \
        require_postgres_url()
    started: dict[str, Any] = {}

    async def serve() -> None:
        async with open_persistence(url) as persistence:
            model = ScriptedChatModel(responses=[planned], repeat_last=True, synthesis=lambda m: "synthesized")
            agent = ReActAgent(model, [store], abilities=ModelAbilities(tool_call=True),
                               checkpointer=persistence.checkpointer, interrupt_queue=persistence.interrupt_queue,
                               settings=AgentSettings(approval={"store": "always"}, max_iterations=3))
            instance = uvicorn.Server(uvicorn.Config(create_app(agent, ServerSettings(api_key="")), host="127.0.0.1",
                                                     port=0, log_level="warning", lifespan="off"))
            started["server"] = instance
            await instance.serve()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    while "server" not in started or not started["server"].started:
        assert thread.is_alive()
        time.sleep(0.01)
    yield f"http://127.0.0.1:{started['server'].servers[0].sockets[0].getsockname()[1]}"
    started["server"].should_exit = True
    thread.join(timeout=30)


def body_of(value: Any) -> bytes:
    """JSON a client could send for ``value``: \\uXXXX escapes for lone surrogates, NaN as
    Python writes it (the encoder recurses: room for the deepest drawn value)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    try:
        return json.dumps(value, allow_nan=True).encode()
    finally:
        sys.setrecursionlimit(limit)


def stream_lines(client: httpx.Client, path: str, body: bytes) -> tuple[int, list[dict[str, Any]]]:
    """POST ``body``; the status and, for a stream, its ``data:`` payloads read with
    ``iter_lines`` (which splits at U+2028, U+2029 and U+0085 too)."""
    with client.stream("POST", path, content=body, headers={"Content-Type": "application/json"}) as response:
        if response.status_code != 200:
            return response.status_code, [json.loads(response.read())]
        lines = list(response.iter_lines())
    data = [json.loads(line[len("data: "):]) for line in lines if line.startswith("data: ")]
    assert all(line == "" or line.startswith(("data: ", "event: ", ":")) for line in lines), lines
    return 200, data


def ended(data: list[dict[str, Any]], agui: bool = False) -> bool:
    if agui:
        return bool(data) and data[-1].get("type") in ("RUN_FINISHED", "RUN_ERROR")
    return bool(data) and ("answer" in data[-1] and "finish_reason" in data[-1] or set(data[-1]) == {"message", "kind"})


def thread_reads_back(client: httpx.Client, thread: str) -> None:
    state = client.get(f"/threads/{thread}")
    assert state.status_code in (200, 404), state.text  # 404: nothing was stored (a refused message)
    if state.status_code == 200:
        assert state.json()["status"] in ("waiting", "idle", "interrupted")


FUZZ = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))


PLAIN = st.lists(st.sampled_from(["a", " ", "한", "\u2028", "?"]), max_size=8).map("".join)
"""Questions a run takes (TEXT's lone surrogates get 422 before a run starts)."""


@FUZZ
@given(arguments=ARGUMENTS, answer=TEXT, question=PLAIN | TEXT, edit=ARGUMENTS | VALUES)
@example(arguments={"document": Deep(300, 1)}, answer="ok", question="", edit={"a": 1})  # the probe's hang
@example(arguments={"k\udcff": 1}, answer="a\udcff", question="", edit={"k": 2**70})
@example(arguments={"n": 2**70}, answer="\u2028", question="", edit={"a": Deep(100, 1)})
def test_tool_arguments_answers_and_approval_edits(server, arguments, answer, question, edit):
    token = str(next(TOKENS))
    arguments, edit = built(arguments), built(edit)
    PLANS[token] = (arguments, answer or "ok")
    thread = f"fuzz-{SESSION}-{token}"
    with httpx.Client(base_url=server, timeout=REQUEST_BOUND_SECONDS) as client:
        status, data = stream_lines(client, f"/threads/{thread}/runs", body_of({"message": f"plan-{token} {question}"}))
        assert status < 500
        if status != 200:
            return
        assert ended(data), data[-1:]
        thread_reads_back(client, thread)
        if data[-1].get("finish_reason") == "waiting":
            decision = {"tool_call_id": f"call-{token}", "type": "edit", "args": edit}
            status, data = stream_lines(client, f"/threads/{thread}/approvals", body_of({"decisions": [decision]}))
            assert status < 500
            if status == 422:  # refused: it still waits, and an approval goes through
                approve = {"decisions": [{"tool_call_id": f"call-{token}", "type": "approve"}]}
                status, data = stream_lines(client, f"/threads/{thread}/approvals", body_of(approve))
            assert status == 200 and ended(data), data[-1:]
        thread_reads_back(client, thread)
        status, data = stream_lines(client, f"/threads/{thread}/runs", body_of({"message": f"plan-{token} again"}))
        assert status == 200 and ended(data), (status, data[-1:])


@FUZZ
@given(thread=TEXT | st.sampled_from(["abc\n", "t" * 129, "ok-thread"]), run=TEXT | st.sampled_from(["r1", "r" * 5000]),
       content=PLAIN | TEXT, state=VALUES, extra=VALUES)
@example(thread="ok-thread", run="r\u2028", content="\u2029", state=None, extra={"x": "\u0085"})
@example(thread="ok-thread", run="r1", content="a", state=None, extra=Deep(300, 1))
def test_agui_inputs(server, thread, run, content, state, extra):
    token = str(next(TOKENS))
    state, extra = built(state), built(extra)
    PLANS[token] = ({"document": extra}, content or "ok")
    body = {"threadId": f"{thread}{SESSION}{token}", "runId": run, "state": state, "forwardedProps": extra,
            "messages": [{"id": "u1", "role": "user", "content": f"plan-{token} {content}"}]}
    with httpx.Client(base_url=server, timeout=REQUEST_BOUND_SECONDS) as client:
        status, data = stream_lines(client, "/agui", body_of(body))
        assert status < 500
        if status == 200:
            assert ended(data, agui=True), data[-1:]
            thread_reads_back(client, f"{thread}{SESSION}{token}")


@FUZZ
@given(entry=VALUES, args=st.lists(VALUES, max_size=2), url=TEXT)
def test_mcp_configs_are_read_or_refused_in_one_line(tmp_path_factory, entry, args, url):
    entry, args = built(entry), built(args)
    for config in ({"mcpServers": {"x": entry}}, {"mcpServers": {"x": {"command": "srv", "args": args}}},
                   {"mcpServers": {"x": {"url": f"https://h/{url}", "headers": {"k": entry}}}}):
        path = tmp_path_factory.mktemp("mcp") / "mcp.json"
        path.write_bytes(body_of(config))
        for source in (config, path):
            try:
                parse_mcp_config(source)
            except MCPConfigError as exc:
                assert "\n" not in str(exc)
