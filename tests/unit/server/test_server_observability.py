"""The server's observability: ``GET /metrics`` read with Prometheus' parser
during and after 20 concurrent runs on a real uvicorn server, its authentication, and the
``request`` / ``run_end`` log lines with the same ids."""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import re

import httpx
import pytest
import uvicorn.config
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from prometheus_client.parser import text_string_to_metric_families

from reactgraph import AgentSettings, ModelAbilities, ReActAgent, observability
from reactgraph.cli.main import _server_settings
from reactgraph.cli.options import build_parser
from reactgraph.observability import metrics
from reactgraph.observability.logs import JsonFormatter, LogConsole, text_formatter, text_value, uvicorn_log_config
from reactgraph.server import ServerSettings, create_app
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.serving import parse_sse, running_server

RUNS = 20
USAGE = {"input_tokens": 7, "output_tokens": 2, "total_tokens": 9}


def scrape(text: str) -> dict[tuple[str, tuple], float]:
    """``/metrics`` as ``{(sample name, sorted labels): value}``."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def total(samples, name: str, **labels) -> float:
    """The sum over every series of ``name`` whose labels include ``labels``."""
    return sum(v for (sample, pairs), v in samples.items()
               if sample == name and all((key, val) in pairs for key, val in labels.items()))


class Gate:
    """A ``scan(machine)`` tool that waits until the test opens the gate; counts who waits."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.waiting = 0

        @tool
        async def scan(machine: str) -> str:
            """Scan a machine."""
            self.waiting += 1
            await self.open.wait()
            return f"{machine}: normal"

        self.tool = scan


def reply(messages) -> AIMessage:
    """Calls ``scan`` on the question's machine, then answers: the same script for any number
    of concurrent runs of one model."""
    if isinstance(messages[-1], ToolMessage):
        return AIMessage("Scanned.", usage_metadata=USAGE)
    machine = re.findall(r"M-\d+", " ".join(str(message.content) for message in messages))[-1]
    return AIMessage("", tool_calls=[tool_call("scan", {"machine": machine}, f"call-{machine}")], usage_metadata=USAGE)


@pytest.fixture(autouse=True)
def metrics_only(monkeypatch):
    """No tracing, and a fresh set of ``tool`` labels: a process that labelled
    ``MAX_TOOL_LABELS`` tool names before (the tests before these) counts further tools as
    ``other``."""
    observability.uninstrument()
    monkeypatch.setattr(metrics, "_tool_labels", set())
    yield
    observability.uninstrument()


async def test_metrics_during_and_after_twenty_concurrent_runs_add_up(caplog):
    gate = Gate()
    model = ScriptedChatModel(responses=[reply], repeat_last=True, synthesis="All scanned.")
    agent = ReActAgent(model, [gate.tool], abilities=ModelAbilities(tool_call=True), checkpointer=InMemorySaver(),
                       settings=AgentSettings(synthesis="always"))
    app = create_app(agent, ServerSettings(api_key=""))
    caplog.set_level(logging.INFO, logger="reactgraph.runs")
    caplog.set_level(logging.INFO, logger="reactgraph.requests")
    async with running_server(app) as base, httpx.AsyncClient(base_url=base, timeout=60) as http:
        before = scrape((await http.get("/metrics")).text)
        runs = [asyncio.create_task(http.post(f"/threads/obs-{i}/runs", json={"message": f"scan M-{i:03d}"},
                                              headers={"X-Request-ID": f"req-{i}"}))
                for i in range(RUNS)]
        while gate.waiting < RUNS:  # every run is inside its tool call
            await asyncio.sleep(0.01)
        during = scrape((await http.get("/metrics")).text)
        gate.open.set()
        answers = await asyncio.gather(*runs)
        after_response = await http.get("/metrics")
        after = scrape(after_response.text)

    grew = lambda samples, name, **labels: value(samples, name, **labels) - value(before, name, **labels)  # noqa: E731
    assert value(during, "reactgraph_runs_running") == RUNS
    assert grew(during, "reactgraph_runs_started_total", kind="start") == RUNS
    assert total(during, "reactgraph_runs_finished_total") == total(before, "reactgraph_runs_finished_total")

    assert after_response.headers["content-type"].startswith("text/plain")
    assert all(parse_sse(answer.text)[-1][1]["finish_reason"] == "final_answer" for answer in answers)
    assert value(after, "reactgraph_runs_running") == 0
    assert grew(after, "reactgraph_runs_finished_total", finish_reason="final_answer") == RUNS
    assert grew(after, "reactgraph_run_duration_seconds_count", finish_reason="final_answer") == RUNS
    assert grew(after, "reactgraph_model_calls_total", phase="tool_loop", outcome="ok") == 2 * RUNS
    assert grew(after, "reactgraph_model_calls_total", phase="synthesis", outcome="ok") == RUNS
    assert grew(after, "reactgraph_tokens_total", phase="tool_loop", type="input") == 2 * RUNS * 7
    assert grew(after, "reactgraph_tool_calls_total", tool="scan", outcome="ok") == RUNS
    assert grew(after, "reactgraph_tool_call_duration_seconds_count", tool="scan") == RUNS
    assert grew(after, "reactgraph_time_to_first_answer_token_seconds_count") == RUNS
    assert grew(after, "reactgraph_http_requests_total", method="POST", route="/threads/{thread_id}/runs",
                status="200") == RUNS
    assert grew(after, "reactgraph_http_requests_total", method="GET", route="/metrics", status="200") == 2
    assert total(after, "reactgraph_checkpoint_write_duration_seconds_count") > total(
        before, "reactgraph_checkpoint_write_duration_seconds_count")

    # one run_end line per run and one request line per request, with the same ids
    runs_logged = {record.reactgraph_fields["thread_id"]: record.reactgraph_fields
                   for record in caplog.records if record.name == "reactgraph.runs"}
    requests_logged = [json.loads(JsonFormatter().format(record)) for record in caplog.records
                       if record.name == "reactgraph.requests" and record.reactgraph_fields.get("thread_id")]
    assert len(runs_logged) == RUNS and len(requests_logged) == RUNS
    for line in requests_logged:
        run = runs_logged[line["thread_id"]]
        assert line["event"] == "request" and line["status"] == 200 and line["route"] == "/threads/{thread_id}/runs"
        assert line["request_id"] == run["request_id"] == f"req-{int(line['thread_id'].split('-')[1])}"
        assert line["run_id"] == run["run_id"] and line["finish_reason"] == run["finish_reason"] == "final_answer"
        assert line["model_calls"] == run["model_calls"] == 3 and line["input_tokens"] == run["input_tokens"] > 14
        assert line["seconds"] >= run["seconds"] > 0


async def test_metrics_are_behind_the_api_key_unless_public():
    agent = ReActAgent(ScriptedChatModel(responses=["fine"]), [], abilities=ModelAbilities(tool_call=True))
    async with running_server(create_app(agent, ServerSettings(api_key="k3y"))) as base:
        async with httpx.AsyncClient(base_url=base) as http:
            refused = await http.get("/metrics")
            assert refused.status_code == 401
            allowed = await http.get("/metrics", headers={"Authorization": "Bearer k3y"})
            assert allowed.status_code == 200 and "reactgraph_http_requests_total" in allowed.text
            assert allowed.headers["x-request-id"]
            samples = scrape(allowed.text)
            assert value(samples, "reactgraph_http_requests_total", method="GET", route="/metrics", status="401") >= 1
    public = create_app(agent, ServerSettings(api_key="k3y", public_metrics=True))
    async with running_server(public) as base, httpx.AsyncClient(base_url=base) as http:
        assert (await http.get("/metrics")).status_code == 200
        assert (await http.get("/threads/x")).status_code == 401  # the API is still behind the key


async def test_a_follow_up_refused_by_the_queue_limits_is_counted():
    gate = Gate()
    model = ScriptedChatModel(responses=[reply], repeat_last=True, synthesis="Done.")
    agent = ReActAgent(model, [gate.tool], abilities=ModelAbilities(tool_call=True),
                       settings=AgentSettings(max_message_chars=150))
    app = create_app(agent, ServerSettings(api_key=""))
    async with running_server(app) as base, httpx.AsyncClient(base_url=base, timeout=30) as http:
        before = scrape((await http.get("/metrics")).text)
        run = asyncio.create_task(http.post("/threads/limits/runs", json={"message": "scan M-001"}))
        while gate.waiting < 1:
            await asyncio.sleep(0.01)
        answers = [await http.post("/threads/limits/inject", json={"message": "x" * 90}) for _ in range(3)]
        gate.open.set()
        await run
        after = scrape((await http.get("/metrics")).text)
    refused = sum(answer.status_code == 429 for answer in answers)
    assert refused >= 1
    assert value(after, "reactgraph_follow_ups_total", outcome="refused") - value(
        before, "reactgraph_follow_ups_total", outcome="refused") == refused


async def test_serve_options_set_the_metrics_and_no_metrics_means_no_route_and_no_observer():
    defaults = _server_settings(build_parser().parse_args(["serve"]))
    assert (defaults.metrics, defaults.public_metrics) == (True, False)
    chosen = _server_settings(build_parser().parse_args(["serve", "--public-metrics"]))
    assert chosen.public_metrics is True
    off = _server_settings(build_parser().parse_args(["serve", "--no-metrics"]))
    assert off.metrics is False
    agent = ReActAgent(ScriptedChatModel(responses=["fine"]), [], abilities=ModelAbilities(tool_call=True))
    async with running_server(create_app(agent, off)) as base, httpx.AsyncClient(base_url=base) as http:
        assert (await http.get("/metrics")).status_code == 404
    assert observability.active is None and "callbacks" not in agent._config("t", synthesize=True)[0]


def test_uvicorn_access_records_and_serve_lines_become_json_lines(caplog):
    """Under ``serve --log-format json`` uvicorn's records go through :class:`JsonFormatter`
    (its access lines with their fields) and what ``serve`` prints is a ``reactgraph.serve``
    record without its terminal markup (the integration test reads a real server)."""
    config = uvicorn_log_config("json")
    assert config["disable_existing_loggers"] is False  # reactgraph's loggers keep working
    factory = config["formatters"]["json"]["()"]
    module, _, name = factory.rpartition(".")
    assert getattr(importlib.import_module(module), name) is JsonFormatter
    assert {handler["formatter"] for handler in config["handlers"].values()} == {"json"}
    assert set(config["loggers"]) == {"uvicorn", "uvicorn.error", "uvicorn.access"}
    assert uvicorn_log_config("text") is uvicorn.config.LOGGING_CONFIG

    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5000", "GET", "/metrics", "1.1", 200), None)
    line = json.loads(JsonFormatter().format(record))
    assert line["logger"] == "uvicorn.access" and line["event"] == "access" and line["status"] == 200
    assert (line["method"], line["path"], line["client"]) == ("GET", "/metrics", "127.0.0.1:5000")
    assert line["message"] == '127.0.0.1:5000 - "GET /metrics HTTP/1.1" 200'

    with caplog.at_level(logging.INFO, logger="reactgraph.serve"):
        LogConsole().print("[dim]model: scripted · tools: 3[/dim]\n[bold]page: http://127.0.0.1:8000/[/bold]")
    said = [record.getMessage() for record in caplog.records if record.name == "reactgraph.serve"]
    assert said == ["model: scripted · tools: 3", "page: http://127.0.0.1:8000/"]


FORGED = 'x%0A{"level":"ERROR","msg":"FAKELOG2"}%0A%1B[31m'
"""A thread id in a path that, written decoded, would make a log line of its own and color the terminal."""


async def test_a_forged_path_makes_exactly_one_log_line_without_a_raw_control_character(caplog):
    """Every value a request sends is escaped in the ``request`` line, in text and JSON: the
    forged path is refused, and its line is one line that reads back the decoded value."""
    caplog.set_level(logging.INFO, logger="reactgraph.requests")
    agent = ReActAgent(ScriptedChatModel(responses=["fine"]), [], abilities=ModelAbilities(tool_call=True))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(agent, ServerSettings(api_key=""))),
                                 base_url="http://localhost") as client:
        refused = await client.get(f"/threads/{FORGED}")
    assert refused.status_code == 422
    [record] = [r for r in caplog.records if r.name == "reactgraph.requests"]
    decoded = 'x\n{"level":"ERROR","msg":"FAKELOG2"}\n\x1b[31m'
    assert record.reactgraph_fields["thread_id"] == decoded  # the record keeps the value; its lines escape it
    text, as_json = text_formatter().format(record), JsonFormatter().format(record)
    for line in (text, as_json):
        assert len(line.splitlines()) == 1 and not re.search("[\x00-\x1f\x7f-\x9f\u2028\u2029]", line), line
    assert text.startswith("reactgraph.requests: request method=GET ")
    assert '\\n{\\"level\\":\\"ERROR\\",\\"msg\\":\\"FAKELOG2\\"}\\n\\x1b[31m"' in text
    assert re.search(r' status=422 ', text) and text.count(" status=") == 1
    fields = json.loads(as_json)
    assert fields["thread_id"] == fields["path"][len("/threads/"):] == decoded and fields["status"] == 422


def test_text_values_are_quoted_when_they_could_end_a_field_and_messages_are_escaped():
    assert [text_value(v) for v in ("plain", 42, "", "a b", "k=v", 'say "hi"', "日本語", "é\u2028")] == [
        "plain", "42", '""', '"a b"', '"k=v"', '"say \\"hi\\""', "日本語", '"é\\u2028"']
    record = logging.LogRecord("reactgraph.tools.mcp", logging.WARNING, __file__, 1, "tool %s failed: %s",
                               ("lecture", "bad\r\nINFO forged\x9b31m"), None)
    assert text_formatter().format(record) == "reactgraph.tools.mcp: tool lecture failed: bad\\r\\nINFO forged\\x9b31m"
