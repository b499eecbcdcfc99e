"""Integration tests: the real SmolLM2-135M GGUF behind llama.cpp's own server (xllamacpp).

Needs the ``[local]`` extra (xllamacpp); the model file is downloaded on first use. Start-up takes about a second, a
short completion well under one on an idle 2-core machine.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from typing import Annotated

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage
from langchain_core.tools import tool
from pydantic import Field

from reactgraph.providers.abilities import ModelAbilities
from reactgraph.models import (
    DEFAULT_LOCAL_MODEL,
    EMBEDDED_MODELS,
    GGUF_FILENAME,
    LocalModelServer,
    find_gguf,
    find_smollm2_gguf,
    open_model,
)

pytestmark = pytest.mark.integration


@tool
def get_equipment_status(equipment_id: str) -> str:
    """Return the status of one piece of factory equipment, e.g. CNC-003."""
    return f"{equipment_id}: normal"


@tool
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return "sunny"


SYSTEM = SystemMessage("You are a factory assistant. Use the tools when they help.")


@pytest.fixture(scope="module")
def server() -> Iterator[LocalModelServer]:
    with LocalModelServer() as started:
        yield started


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie still answers kill(0); treat it as gone
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True


def _wait_until(predicate: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def test_the_model_file_is_the_real_smollm2_weights(server: LocalModelServer) -> None:
    path = find_smollm2_gguf()
    assert path == server.model_path and path.name == GGUF_FILENAME
    assert path.stat().st_size > 50_000_000  # the real weights, not a pointer file
    with path.open("rb") as f:
        assert f.read(4) == b"GGUF"


async def test_open_model_keeps_the_embedded_server_log_under_the_data_directory(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("REACTGRAPH_HOME", str(tmp_path))  # a fresh data directory; the model cache stays
    async with open_model(environ={}) as resolved:
        log = resolved.server.log_path
        assert log.parent == tmp_path / "logs"
    assert log.is_file() and log.stat().st_size > 0


def test_server_is_up(server: LocalModelServer) -> None:
    assert server.running
    assert server.startup_seconds is not None and server.startup_seconds < 120
    assert _port_open(server.port)
    assert server.abilities == ModelAbilities(
        tool_call=False, json_mode=True, context_window=8192, max_output_tokens=512,
        schema_output="json_object_schema", provider="llamacpp", small=True,
    )


def test_plain_chat_returns_text_and_usage(server: LocalModelServer) -> None:
    reply = server.chat_model().invoke("Say hello in one short sentence.")
    assert isinstance(reply, AIMessage)
    assert isinstance(reply.content, str) and reply.content.strip()
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["input_tokens"] > 0
    assert reply.usage_metadata["output_tokens"] > 0
    assert reply.response_metadata["model_name"] == server.model_name


def test_max_tokens_caps_the_completion(server: LocalModelServer) -> None:
    reply = server.chat_model(max_tokens=5).invoke("Write a long essay about machines.")
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["output_tokens"] <= 5
    assert reply.response_metadata["finish_reason"] == "length"


@tool
def get_machine(equipment_id: Annotated[str, Field(pattern=r"^[A-Z]{2,5}-\d{3}$")]) -> str:
    """Status of one machine, e.g. CNC-003."""
    return "ok"


def test_tools_bound_come_back_as_text_and_the_server_survives_patterns(server: LocalModelServer) -> None:
    """SmolLM2's chat template has no tool support: with tools bound (a regex ``pattern`` in
    their schema included) the reply is plain text, which is why the embedded profile runs
    JSON mode."""
    llm = server.chat_model(max_tokens=32).bind_tools([get_machine, get_weather], tool_choice="required")
    reply = llm.invoke([SYSTEM, HumanMessage("Status of CNC-003?")])
    assert isinstance(reply, AIMessage)
    assert not reply.tool_calls
    assert isinstance(reply.content, str) and reply.content.strip()
    assert server.running


def test_json_object_response_format_parses(server: LocalModelServer) -> None:
    llm = server.chat_model().bind(response_format={"type": "json_object"})
    reply = llm.invoke(
        [
            SystemMessage("Answer with a JSON object."),
            HumanMessage("Give the name and age of Ann, who is 31."),
        ]
    )
    assert isinstance(reply.content, str)
    assert isinstance(json.loads(reply.content), dict)


@pytest.mark.parametrize("shape", ["json_schema", "json_object_schema"])
def test_schema_response_formats_are_schema_constrained(server: LocalModelServer, shape: str) -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                       "machine": {"type": "string", "enum": ["CNC-001", "CNC-003"]},
                       "code": {"type": "string", "pattern": r"^[A-Z]-\d{4}$"}},
        "required": ["name", "age", "machine", "code"],
    }
    response_format = (
        {"type": "json_schema", "json_schema": {"name": "person", "schema": schema, "strict": True}}
        if shape == "json_schema"
        else {"type": "json_object", "schema": schema}
    )
    reply = server.chat_model(max_tokens=96).bind(response_format=response_format).invoke(
        "Ann is 31 years old and runs CNC-003. Describe her."
    )
    assert isinstance(reply.content, str)
    data = json.loads(reply.content)
    assert isinstance(data["name"], str) and isinstance(data["age"], int)
    assert data["machine"] in ("CNC-001", "CNC-003")


@pytest.mark.asyncio
async def test_astream_yields_several_chunks(server: LocalModelServer) -> None:
    chunks = [c async for c in server.chat_model().astream("Count from one to five in words.")]
    assert len(chunks) > 1
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    text = "".join(c.content for c in chunks if isinstance(c.content, str))
    assert text.strip()


@pytest.mark.asyncio
async def test_concurrent_streams_queue_instead_of_truncating(server: LocalModelServer) -> None:
    async def stream(prompt: str) -> AIMessageChunk:
        total: AIMessageChunk | None = None
        async for chunk in server.chat_model(max_tokens=40).astream(prompt):
            total = chunk if total is None else total + chunk
        assert total is not None
        return total

    answers = await asyncio.gather(stream("Count from one to ten in words."), stream("Name five colours."))
    for answer in answers:
        assert answer.response_metadata.get("finish_reason") in ("stop", "length")
        assert isinstance(answer.content, str) and answer.content.strip()


@pytest.mark.asyncio
async def test_stop_closes_port_and_ends_process() -> None:
    async with LocalModelServer(n_ctx=2048) as own:
        port, pid = own.port, own.pid
        assert pid is not None
        assert _port_open(port)
        reply = await own.chat_model(max_tokens=8).ainvoke("Hi")
        assert isinstance(reply, AIMessage)
    assert not own.running
    assert _process_gone(pid)
    assert not _port_open(port)
    await asyncio.to_thread(own.stop)  # idempotent


@pytest.mark.asyncio
async def test_open_model_starts_and_stops_the_embedded_model() -> None:
    env = {"REACTGRAPH_MAX_OUTPUT_TOKENS": "16"}
    async with open_model(environ=env, local_n_ctx=2048) as resolved:
        assert resolved.server is not None
        assert resolved.description.startswith("embedded SmolLM2-135M (llama.cpp on 127.0.0.1:")
        assert resolved.abilities == ModelAbilities(
            tool_call=False, json_mode=True, context_window=2048, max_output_tokens=16,
            schema_output="json_object_schema", provider="llamacpp", small=True,
        )
        reply = await resolved.llm.ainvoke("Write a long story about a lathe.")
        assert isinstance(reply.content, str) and reply.content.strip()
        assert reply.usage_metadata is not None and reply.usage_metadata["output_tokens"] <= 16
        port, pid = resolved.server.port, resolved.server.pid
    assert pid is not None and _process_gone(pid)
    assert not _port_open(port)


@pytest.mark.asyncio
async def test_with_nothing_chosen_the_default_catalogue_model_starts_on_the_threads_asked_for() -> None:
    """.4: the catalogue leaves the default as it was; the thread count reaches llama.cpp."""
    async with open_model(environ={"REACTGRAPH_LOCAL_THREADS": "1"}, local_n_ctx=2048) as resolved:
        server = resolved.server
        assert server is not None and server.embedded is EMBEDDED_MODELS[DEFAULT_LOCAL_MODEL]
        assert server.model_path == find_gguf(DEFAULT_LOCAL_MODEL) == find_smollm2_gguf()
        assert hashlib.sha256(server.model_path.read_bytes()).hexdigest() == server.embedded.sha256
        assert server.n_threads == 1 and server.command[-2:] == ["1", "SmolLM2-135M-Instruct"]
        assert resolved.description.startswith("embedded SmolLM2-135M (llama.cpp on 127.0.0.1:")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{server.base_url}/models", timeout=10) as response:
            assert [model["id"] for model in json.load(response)["data"]] == ["SmolLM2-135M-Instruct"]
        reply = await resolved.llm.ainvoke("Say hello.")
        assert isinstance(reply.content, str) and reply.content.strip()


def test_server_ignores_environment_variables_named_like_its_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # llama.cpp's command line reads LLAMA_ARG_* variables; the embedded server takes its
    # settings from the parent only, so none of these may move it or demand a key.
    monkeypatch.setenv("LLAMA_ARG_PORT", "1")
    monkeypatch.setenv("LLAMA_ARG_HOST", "0.0.0.0")
    monkeypatch.setenv("LLAMA_API_KEY", "secret")
    monkeypatch.setenv("LLAMA_ARG_CTX_SIZE", "64")
    with LocalModelServer(n_ctx=2048) as own:
        reply = own.chat_model(max_tokens=8).invoke("Hi")
        assert isinstance(reply, AIMessage)


def test_server_exits_when_its_parent_is_killed(tmp_path: object) -> None:
    """SIGKILL leaves no chance for atexit; the child's watchdog must end the server."""
    script = textwrap.dedent(
        """
        import sys, time
        from reactgraph.models import LocalModelServer
        server = LocalModelServer(n_ctx=2048)
        server.start()
        print(server.pid, server.port, server.log_path.parent, flush=True)
        time.sleep(600)
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline()
        assert line, "the parent failed to start the server"
        pid_text, port_text, log_dir = line.split()
        pid, port = int(pid_text), int(port_text)
        assert _port_open(port)
        assert os.path.isdir(log_dir)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        assert _wait_until(lambda: _process_gone(pid), timeout=10.0), "orphan server left"
        assert _wait_until(lambda: not _port_open(port), timeout=10.0), "the server's port is still open"
        assert _wait_until(lambda: not os.path.exists(log_dir), timeout=10.0), "temporary log directory left behind"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
