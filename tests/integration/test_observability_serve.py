"""``reactgraph serve --workers 2 --otel --log-format json`` on Postgres: 20
concurrent runs, ``/metrics`` scraped during and after them (Prometheus' parser; the two
workers' counts added up in multiprocess mode, whichever worker answers), the spans exported
over OTLP/HTTP to a receiver in the test that decodes the protobuf, and the JSON log lines
carrying the spans' ids.

The command is the real CLI on the demo plant's tools with a scripted model
(``python -m tests.scripted_cli``). No OpenTelemetry collector is installable here, so the
receiver is an OTLP/HTTP endpoint (``POST /v1/traces``, ``application/x-protobuf``) made with
the standard library and ``opentelemetry-proto``. Needs ``$REACTGRAPH_TEST_DATABASE_URL``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.test_workers import client, free_port, workers_of
from tests.processes import REPO
from tests.serving import parse_sse

pytestmark = pytest.mark.integration

RUNS = 20
SCRIPT = {"by_message": {"tool": "get_equipment_status", "arg": "equipment_id"}, "delay": 0.5}


class Receiver:
    """An OTLP/HTTP trace endpoint on a free loopback port: every exported span, decoded."""

    def __init__(self) -> None:
        self.spans: list[dict] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                assert self.path == "/v1/traces" and self.headers["Content-Type"] == "application/x-protobuf"
                receiver.add(request)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def add(self, request: ExportTraceServiceRequest) -> None:
        for resource_spans in request.resource_spans:
            resource = {item.key: item.value.string_value for item in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    attributes = {}
                    for item in span.attributes:
                        kind = item.value.WhichOneof("value")
                        attributes[item.key] = getattr(item.value, kind) if kind != "array_value" else [
                            value.string_value for value in item.value.array_value.values]
                    with self.lock:
                        self.spans.append({"name": span.name, "trace_id": span.trace_id.hex(),
                                           "span_id": span.span_id.hex(), "parent": span.parent_span_id.hex(),
                                           "attributes": attributes, "resource": resource,
                                           "scope": scope_spans.scope.name})

    def named(self, prefix: str) -> list[dict]:
        with self.lock:
            return [span for span in self.spans if span["name"].startswith(prefix)]


def scrape(text: str) -> dict[tuple[str, tuple], float]:
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def start_json_serve(tmp_path, port: int, options: list[str], env: dict[str, str], workers: int = 1,
                     ) -> tuple[subprocess.Popen, list[str]]:
    """``serve --log-format json`` with the scripted model, once it takes connections (as
    its JSON lines on stderr say); returns the process and the stderr lines read so far."""
    env = {**os.environ, "REACTGRAPH_HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO), **env}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    env.pop("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.scripted_cli", json.dumps(SCRIPT), "serve", "--workers", str(workers),
         "--port", str(port), "--db", str(tmp_path / "plant.db"), "--log-format", "json", *options],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[str] = []
    # a worker of --workers takes connections on the supervisor's socket once it said its page;
    # a lone server once uvicorn listens
    while (sum('"page: http' in line for line in seen) < workers if workers > 1
           else not any("Uvicorn running on" in line for line in seen)):
        line = process.stderr.readline()
        if not line:
            process.wait(timeout=30)
            raise AssertionError(f"serve did not start: {''.join(seen)}{process.stderr.read()}")
        seen.append(line)
    return process, seen


def json_lines(*outputs: str) -> list[dict]:
    """Every line of the outputs, each parsed as one JSON object (a line that is not fails)."""
    lines = [line for output in outputs for line in output.splitlines()]
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"not a JSON line: {line!r}") from None
    assert all(isinstance(item, dict) and {"ts", "level", "logger", "pid"} <= set(item) for item in parsed)
    return parsed


def start_serve(postgres_url: str, tmp_path, port: int, receiver: Receiver) -> tuple[subprocess.Popen, list[str]]:
    return start_json_serve(tmp_path, port, ["--checkpoints", postgres_url, "--otel"], {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": "plant-agents",
        "OTEL_BSP_SCHEDULE_DELAY": "100", "REACTGRAPH_API_KEY": "observe-key"}, workers=2)


async def test_every_line_serve_prints_under_log_format_json_is_json(tmp_path):
    """uvicorn's start-up, access and shutdown lines, reactgraph's own start-up lines and the
    request and run_end lines: one JSON object each, on stdout and stderr alike."""
    port = free_port()
    serve, started = start_json_serve(tmp_path, port, ["--checkpoints", str(tmp_path / "threads.db")], {})
    try:
        async with client(f"http://127.0.0.1:{port}") as http:
            answer = await http.post("/threads/json-1/runs", json={"message": "CNC-001 status?"})
            assert parse_sse(answer.text)[-1][1]["finish_reason"] == "final_answer"
            assert (await http.get("/metrics")).status_code == 200
            assert (await http.get("/no-such-page")).status_code == 404
    finally:
        serve.terminate()
        stdout, stderr = serve.communicate(timeout=60)
    lines = json_lines("".join(started), stderr, stdout)
    by_logger = {}
    for line in lines:
        by_logger.setdefault(line["logger"], []).append(line)
    said = [line["message"] for line in by_logger["reactgraph.serve"]]
    assert any(text.startswith("model: ") for text in said) and any(text.startswith("page: http") for text in said)
    uvicorn_said = " ".join(line["message"] for line in by_logger["uvicorn.error"])
    assert "Uvicorn running on" in uvicorn_said or "Started server process" in uvicorn_said
    assert "Shutting down" in uvicorn_said
    access = {(line["method"], line["path"], line["status"]) for line in by_logger["uvicorn.access"]}
    assert {("POST", "/threads/json-1/runs", 200), ("GET", "/metrics", 200), ("GET", "/no-such-page", 404)} <= access
    [run_end] = by_logger["reactgraph.runs"]
    assert run_end["event"] == "run_end" and run_end["thread_id"] == "json-1"
    assert {line["route"] for line in by_logger["reactgraph.requests"]} >= {"/threads/{thread_id}/runs", "/metrics"}
    assert {line["pid"] for line in lines} == {serve.pid}


@pytest.mark.postgres
async def test_twenty_runs_on_two_workers_export_spans_metrics_and_json_logs(postgres_url, tmp_path):
    receiver = Receiver()
    port = free_port()
    serve, said = start_serve(postgres_url, tmp_path, port, receiver)
    key = {"Authorization": "Bearer observe-key"}
    prefix = uuid.uuid4().hex[:8]
    try:
        assert len(workers_of(serve.pid)) == 2
        async with client(f"http://127.0.0.1:{port}") as http:
            before = scrape((await http.get("/metrics", headers=key)).text)
            runs = [asyncio.create_task(http.post(f"/threads/{prefix}-{i}/runs", headers=key,
                                                  json={"message": f"CNC-{i % 3 + 1:03d} status?"}))
                    for i in range(RUNS)]
            for _ in range(200):  # during: every run started, some still going
                during = scrape((await http.get("/metrics", headers=key)).text)
                started = value(during, "reactgraph_runs_started_total", kind="start") - value(
                    before, "reactgraph_runs_started_total", kind="start")
                if started == RUNS:
                    break
                await asyncio.sleep(0.05)
            finished = value(during, "reactgraph_runs_finished_total", finish_reason="final_answer") - value(
                before, "reactgraph_runs_finished_total", finish_reason="final_answer")
            assert started == RUNS and finished < RUNS
            assert value(during, "reactgraph_runs_running") == RUNS - finished
            answers = await asyncio.gather(*runs)
            assert all(parse_sse(answer.text)[-1][1]["finish_reason"] == "final_answer" for answer in answers)
            afters = [scrape((await http.get("/metrics", headers=key)).text) for _ in range(4)]
            assert (await http.get("/metrics")).status_code == 401
    finally:
        serve.terminate()
        stdout, stderr = serve.communicate(timeout=60)

    for after in afters:  # whichever worker answered, the whole server's counts
        grew = lambda name, **labels: value(after, name, **labels) - value(before, name, **labels)  # noqa: E731
        assert grew("reactgraph_runs_finished_total", finish_reason="final_answer") == RUNS
        assert value(after, "reactgraph_runs_running") == 0
        assert grew("reactgraph_model_calls_total", phase="tool_loop", outcome="ok") == 2 * RUNS
        assert grew("reactgraph_tool_calls_total", tool="get_equipment_status", outcome="ok") == RUNS
        assert grew("reactgraph_http_requests_total", method="POST", route="/threads/{thread_id}/runs",
                    status="200") == RUNS

    lines = json_lines("".join(said), stderr, stdout)  # every line of the supervisor and both workers
    ends = {line["thread_id"]: line for line in lines if line.get("event") == "run_end"}
    assert len(ends) == RUNS and len({line["pid"] for line in ends.values()}) == 2  # both workers ran some
    requests = [line for line in lines if line.get("event") == "request" and line.get("run_id")]
    assert {line["run_id"] for line in requests} == {line["run_id"] for line in ends.values()}

    deadline = time.monotonic() + 20
    while len(receiver.named("invoke_agent")) < RUNS and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    runs_seen = {span["attributes"]["gen_ai.conversation.id"]: span for span in receiver.named("invoke_agent")}
    assert set(runs_seen) == set(ends)
    for thread, span in runs_seen.items():
        # the run is a child of the HTTP request's span (FastAPI's own instrumentation), in its trace
        [request_span] = [other for other in receiver.spans if other["span_id"] == span["parent"]]
        assert request_span["scope"] == "fastapi" and request_span["trace_id"] == span["trace_id"]
        assert any(other["name"] == "POST /threads/{thread_id}/runs" and other["trace_id"] == span["trace_id"]
                   for other in receiver.spans)
        assert span["resource"]["service.name"] == "plant-agents"
        assert span["scope"] == "reactgraph" and span["attributes"]["gen_ai.operation.name"] == "invoke_agent"
        assert span["trace_id"] == ends[thread]["trace_id"] and span["span_id"] == ends[thread]["span_id"]
        assert span["attributes"]["reactgraph.run.id"] == ends[thread]["run_id"]
        assert span["attributes"]["reactgraph.finish_reason"] == "final_answer"
        in_trace = [other for other in receiver.spans if other["trace_id"] == span["trace_id"]]
        tools = [other for other in in_trace if other["name"] == "execute_tool get_equipment_status"]
        assert len(tools) == 1 and tools[0]["parent"] == span["span_id"]
        chats = [other for other in in_trace if other["attributes"].get("gen_ai.operation.name") == "chat"]
        assert [chat["attributes"]["reactgraph.phase"] for chat in chats].count("tool_loop") == 2
        assert all("gen_ai.input.messages" not in other["attributes"] for other in in_trace)


async def test_serve_otel_says_where_spans_go_and_once_that_nobody_receives_them(tmp_path):
    """``serve --otel`` with no OTLP receiver at the endpoint: its start-up lines name the
    endpoint, and the failed exports of several runs (and of the shutdown's flush) make one
    warning line, not one (or more) per batch."""
    closed = free_port()  # nothing listens there
    port = free_port()
    serve, started = start_json_serve(tmp_path, port, ["--checkpoints", "memory", "--otel"], {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{closed}", "OTEL_BSP_SCHEDULE_DELAY": "50",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "1"})
    try:
        async with client(f"http://127.0.0.1:{port}") as http:
            for index in range(3):
                answer = await http.post(f"/threads/otel-{index}/runs", json={"message": f"CNC-00{index + 1} status?"})
                assert parse_sse(answer.text)[-1][1]["finish_reason"] == "final_answer"
    finally:
        serve.terminate()
        stdout, stderr = serve.communicate(timeout=60)
    lines = json_lines("".join(started), stderr, stdout)
    said = [line["message"] for line in lines if line["logger"] == "reactgraph.serve"]
    assert f"traces: OpenTelemetry spans go to http://127.0.0.1:{closed}/v1/traces (OTLP/HTTP)" in said
    warnings = [line for line in lines if line["logger"] == "reactgraph.otel"]
    assert len(warnings) == 1 and warnings[0]["level"] == "warning"
    assert f"could not be sent to http://127.0.0.1:{closed}/v1/traces" in warnings[0]["message"]
    assert not [line for line in lines if line["logger"].startswith("opentelemetry")]
