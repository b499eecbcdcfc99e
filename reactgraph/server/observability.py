"""The server's part of observability: ``GET /metrics`` in Prometheus' text
format, the HTTP metrics and one ``request`` log line per request.

:func:`add_observability` (called by :func:`~reactgraph.server.create_app`) puts
:class:`RequestObserver` in front of the whole app and adds the ``/metrics`` route behind
the API's authentication (``ServerSettings.public_metrics`` answers it before the
authentication instead). A request's line is written when the last byte of its answer is
sent, so for a run's stream it carries what the run's observer wrote at the run's end:
its run id, finish reason, model calls and tokens (see :mod:`reactgraph.observability`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from starlette.responses import Response
from starlette.routing import Match

from reactgraph import observability
from reactgraph.observability.logs import REQUEST_LOGGER, log_fields
from reactgraph.observability.metrics import exposition, labelled, run_metrics
from reactgraph.observability.observer import RequestInfo
from reactgraph.server.gate import ASGIApp, Receive, Scope, Send
from reactgraph.server.routers import app_routes

METRICS_PATH = "/metrics"
"""Where the metrics are served."""

REQUEST_ID_HEADER = "x-request-id"
"""The request id a client may send (kept when it is a short token) and the server answers
with: it is the ``request_id`` of the request's and its run's log lines and of the run's span."""


def metrics_response() -> Response:
    """The metrics of the server (every worker's, under ``--workers``) as a response."""
    body, content_type = exposition()
    return Response(body, media_type=content_type, headers={"Cache-Control": "no-store"})


def _request_id(scope: Scope) -> str:
    for key, value in scope.get("headers") or []:
        if key.lower() == REQUEST_ID_HEADER.encode():
            given = value.decode("latin-1").strip()
            if 0 < len(given) <= 128 and given.replace("-", "").replace("_", "").replace(".", "").isalnum():
                return given
    return uuid.uuid4().hex


class RequestObserver:
    """ASGI middleware: times each HTTP request to the last byte of its answer, counts it in
    ``reactgraph_http_requests_total{method, route, status}`` (a follow-up refused with 429 in
    ``reactgraph_follow_ups_total{outcome="refused"}`` as well), writes its ``request`` log
    line, answers with its ``X-Request-ID``, and makes it the run's request
    (:data:`reactgraph.observability.current_request`).

    Args:
        app: The app behind it.
        routes: Gives the app's routes, to name the route of a request refused before
            routing (401, 413).
        public_metrics: Answer ``GET /metrics`` here, before any authentication.
    """

    def __init__(self, app: ASGIApp, *, routes: Callable[[], list[Any]], public_metrics: bool = False) -> None:
        self.app = app
        self.routes = routes
        self.public_metrics = public_metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.public_metrics and scope.get("path") == METRICS_PATH and scope.get("method") == "GET":
            await metrics_response()(scope, receive, send)
            return
        started = time.perf_counter()
        info = RequestInfo(request_id=_request_id(scope))
        token = observability.current_request.set(info)
        status = 500
        header = (REQUEST_ID_HEADER.encode(), info.request_id.encode())

        async def observed_send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", []), header]}
            await send(message)

        try:
            await self.app(scope, receive, observed_send)
        finally:
            observability.current_request.reset(token)
            self._record(scope, info, status, time.perf_counter() - started)

    def _route(self, scope: Scope) -> str:
        route = scope.get("route")
        if route is None:
            for candidate in app_routes(self.routes()):
                if candidate.matches(scope)[0] is Match.FULL:
                    route = candidate
                    break
        return getattr(route, "path", None) or "unmatched"

    def _record(self, scope: Scope, info: RequestInfo, status: int, seconds: float) -> None:
        route, method = self._route(scope), scope.get("method", "")
        metrics = run_metrics()
        labelled(metrics.http_requests, method, route, str(status)).inc()
        labelled(metrics.http_duration, method, route).observe(seconds)
        if status == 429 and route.endswith("/inject"):
            labelled(metrics.follow_ups, "refused").inc()
        log_fields(REQUEST_LOGGER, "request", {
            "method": method, "path": scope.get("path"), "route": route, "status": status,
            "seconds": round(seconds, 3), "request_id": info.request_id,
            "thread_id": (scope.get("path_params") or {}).get("thread_id"), "run_id": info.run_id,
            "finish_reason": info.finish_reason, "model_calls": info.model_calls, "input_tokens": info.input_tokens,
            "output_tokens": info.output_tokens, "trace_id": info.trace_id,
        })


def add_observability(app: FastAPI, *, public_metrics: bool = False, dependencies: list[Any] | None = None,
                      responses: dict[int | str, dict[str, Any]] | None = None) -> None:
    """Observe the app's requests and runs: turn on the run metrics for the process
    (keeping any tracing :func:`reactgraph.observability.instrument` set up), time the
    agent's checkpoint writes, add ``GET /metrics`` and :class:`RequestObserver`.

    Call it after the app's other middleware, so the observer sees every request first
    (refused ones too).

    Args:
        app: An app of :func:`~reactgraph.server.create_app` (``app.state.agent`` is read).
        public_metrics: ``/metrics`` needs no API key.
        dependencies: The route's dependencies (the bearer scheme, for the OpenAPI schema).
        responses: Its refusals, for the OpenAPI schema.
    """
    from reactgraph.observability.metrics import time_checkpoint_writes

    observability.enable_metrics()
    time_checkpoint_writes(getattr(app.state.agent, "checkpointer", None))

    @app.get(METRICS_PATH, dependencies=dependencies or [], summary="Prometheus metrics", response_class=Response,
             responses={200: {"content": {"text/plain": {}}, "description": "The metrics."}, **(responses or {})})
    async def metrics() -> Response:
        """The server's metrics in Prometheus' text format (docs/observability.md); under
        `--workers N`, all workers' added up."""
        return metrics_response()

    app.add_middleware(RequestObserver, routes=lambda: app.routes, public_metrics=public_metrics)
