"""schemathesis over the server's own ``/openapi.json`` (SPEC R13.5): its generated
requests (examples, coverage and fuzzing phases; positive and negative data) against a real
uvicorn server, with every check schemathesis has, find no schema-conformance failure: every
answer's status, content type, headers and body (each event of a stream included) match the
schema, bodies the schema allows are taken and bodies it forbids are refused, and a server with
an API key refuses requests without it. Run once keyless and once with a key.

schemathesis runs as its own process from a directory of its own (:mod:`tests.pytools`).
Its configuration counts 413 as a refusal and as an answer to an allowed body: the byte limit
of a body (``ServerSettings.max_body_bytes``) is no JSON Schema keyword, and 413 is in the
schema's responses of every endpoint that takes a body."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from reactgraph import ModelAbilities, ReActAgent
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel
from tests.integration.test_api_property import echo, echo_then_answer
from tests.pytools import python_tool, tools_cache_dir
from tests.serving import server_thread

pytestmark = pytest.mark.integration  # a real uvicorn server on a loopback socket, schemathesis from PyPI

SCHEMATHESIS = "4.32.5"

CONFIG = """
[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429]

[checks.positive_data_acceptance]
expected-statuses = ["2XX", 401, 403, 404, 409, 413, 429]
"""


@pytest.fixture(scope="module")
def schemathesis_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return python_tool("schemathesis", SCHEMATHESIS, tools_cache_dir(tmp_path_factory.mktemp("pytools")))


@pytest.fixture(params=["", "the-key"], ids=["keyless", "with-key"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """A real uvicorn server in a thread whose scripted agent echoes the message through a
    tool; yields its URL and its API key."""
    model = ScriptedChatModel(responses=[echo_then_answer], repeat_last=True, synthesis=lambda m: m[-1].content[-300:])
    agent = ReActAgent(model, [echo], abilities=ModelAbilities(tool_call=True), checkpointer=InMemorySaver())
    app = create_app(agent, ServerSettings(api_key=request.param, max_body_bytes=16_384, max_message_chars=2_000))
    with server_thread(app) as url:
        yield url, request.param


def test_schemathesis_finds_no_schema_conformance_failure(server, schemathesis_env, tmp_path: Path):
    url, key = server
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "--no-color", "run",
               f"{url}/openapi.json", "--checks", "all", "--workers", "1", "--max-examples", "25", "--seed", "37",
               "--continue-on-failure"]
    if key:
        command += ["--header", f"Authorization: Bearer {key}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=schemathesis_env, cwd=tmp_path)
    report = done.stdout + done.stderr
    summary = report[report.rfind("SUMMARY"):]
    assert done.returncode == 0 and "Failures:" not in summary and "Errors:" not in summary, report[-12_000:]
    assert "Tested: 11" in summary and " passed" in summary, summary  # every operation ran and was checked
