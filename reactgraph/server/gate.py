"""What a request must pass before the app reads its body (SPEC R13.5).

:class:`RequestGate` is an ASGI middleware in front of the whole app. For each HTTP
request, in this order and before any byte of the body is read:

1. **Host**: while the server has no API key, the ``Host`` header must name one of the
   allowed hosts (a page on another site that rebinds its DNS name to this server's
   address sends its own name): 400 otherwise.
2. **Key**: with an API key, every path but the open ones (the page, its static files,
   ``/healthz`` and the OpenAPI documents) needs ``Authorization: Bearer <key>``: 401
   otherwise, whatever the body. The key names the request's principal (several keys, each
   a principal; the single key's is :data:`~reactgraph.server.owners.DEFAULT_PRINCIPAL`), or
   a ``principal_of`` hook names it from the request's head (``None``: 401). The principal
   is left in the request's state (``request.state.principal``; the default one on a server
   without a key).
3. **Size**: a body is read only up to the limit: a ``Content-Length`` over it gets 413 at
   once, a streamed body gets 413 as soon as it passes the limit; the app then receives
   the body already read, so no endpoint can read more.
4. **Time**: a body that stops arriving (a client that sent part of it and waits) gets 408
   once no byte of it came for ``body_timeout`` seconds, and its connection is closed
   (200 stalled requests stayed open); a body dripped slowly, a byte now and
   then, gets the same 408 once reading it took ``body_deadline`` seconds in all.
5. **Depth**: a body that nests more than :data:`~reactgraph.core.bounds.MAX_NESTING_DEPTH`
   levels of JSON arrays and objects gets 422 before it is parsed (the bound on
   everything that enters from a client; a parser would recurse into it).

Every refusal, here and in the app, is one JSON body ``{"detail": ...}`` made by
:func:`error_response`, which never fails whatever the request held.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from reactgraph.core.bounds import MAX_NESTING_DEPTH, json_text_too_deep
from reactgraph.events import wire_json
from reactgraph.server.owners import DEFAULT_PRINCIPAL, checked_principal

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

OPEN_PATHS = frozenset({"/", "/favicon.ico", "/healthz", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})
"""Paths that hold no data and need no key (besides everything under ``/static/``)."""

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
"""The default allowed hosts of an unauthenticated server."""

PrincipalHook = Callable[[Request], "str | None | Awaitable[str | None]"]
"""A hook naming the principal of a request from its head (headers, path, client; the body
is not read yet): a principal's name, or ``None`` to refuse it with 401. It may be async."""


def error_response(status_code: int, detail: Any, headers: dict[str, str] | None = None) -> Response:
    """The JSON error answer ``{"detail": detail}`` of every refusal (4xx), rendered with
    :func:`reactgraph.events.wire_json`: NaN, infinities and lone surrogates an invalid
    request carried come back escaped or ``null``, never as a 500.

    Args:
        status_code: The HTTP status.
        detail: A string, or the list of validation errors (422).
        headers: Extra response headers (e.g. ``WWW-Authenticate``).

    Returns:
        A Starlette ``Response`` with ``application/json``.
    """
    return Response(wire_json({"detail": detail}).encode("utf-8"), status_code=status_code,
                    headers=headers, media_type="application/json")


def host_name(header: str) -> str:
    """The host of a ``Host`` header, lowercased, without its port and the brackets of
    an IPv6 address: ``"[::1]:8000"`` → ``"::1"``, ``"Example.com:80"`` → ``"example.com"``."""
    host = header.strip().lower()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class RequestGate:
    """ASGI middleware: the host, key and body-size checks of the module docstring.

    Args:
        app: The ASGI app behind the gate.
        api_key: The bearer token required on every path but :data:`OPEN_PATHS` and
            ``/static/``, its principal :data:`~reactgraph.server.owners.DEFAULT_PRINCIPAL`;
            empty: no authentication, and the host check is on (unless ``api_keys`` or
            ``principal_of`` authenticate).
        api_keys: More bearer tokens, each mapped to its principal.
        principal_of: A :data:`PrincipalHook` that names each request's principal instead
            of the keys.
        allowed_hosts: Host names accepted while ``api_key`` is empty (compared without
            port, case-insensitively); ``"*"`` accepts any host.
        max_body_bytes: Most bytes of a request body.
        body_timeout: Most seconds to wait for the next part of a body.
        body_deadline: Most seconds to read a whole body, from the first wait for it.
    """

    def __init__(self, app: ASGIApp, *, api_key: str, allowed_hosts: Iterable[str], max_body_bytes: int,
                 body_timeout: float = 30.0, body_deadline: float = 60.0, api_keys: Mapping[str, str] | None = None,
                 principal_of: PrincipalHook | None = None) -> None:
        self.app = app
        keys = {**(api_keys or {}), **({api_key: DEFAULT_PRINCIPAL} if api_key else {})}
        self.keys = [(key.encode(), principal) for key, principal in keys.items()]
        self.principal_of = principal_of
        self.authenticated = bool(self.keys) or principal_of is not None
        self.allowed_hosts = frozenset(host_name(host) for host in allowed_hosts)
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout
        self.body_deadline = body_deadline

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = await self._refusal(scope)
        if refusal is None:
            body, refusal = await self._read_body(scope, receive)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, _replay(body, receive), send)

    def _header(self, scope: Scope, name: bytes) -> str | None:
        for key, value in scope.get("headers") or []:
            if key.lower() == name:
                return value.decode("latin-1")
        return None

    async def _refusal(self, scope: Scope) -> Response | None:
        """The answer to a request refused on its host or key, else ``None`` (its principal
        then set in ``scope["state"]``)."""
        scope.setdefault("state", {})["principal"] = DEFAULT_PRINCIPAL
        if not self.authenticated:
            host = host_name(self._header(scope, b"host") or "")
            if "*" not in self.allowed_hosts and host not in self.allowed_hosts:
                return error_response(400, f"host {host!r} is not allowed: this server has no API key, so it answers "
                                      "only requests addressed to its allowed hosts (ServerSettings.allowed_hosts, "
                                      "reactgraph serve --allowed-host)")
            return None
        path = scope.get("path", "")
        if path in OPEN_PATHS or path.startswith("/static/"):
            return None
        principal = await self._principal(scope)
        if principal is None:
            return error_response(401, "missing or wrong API key: send 'Authorization: Bearer <REACTGRAPH_API_KEY>'",
                                  {"WWW-Authenticate": "Bearer"})
        scope["state"]["principal"] = principal
        return None

    async def _principal(self, scope: Scope) -> str | None:
        """The request's principal: the hook's answer, else the one of its bearer key
        (every key compared in constant time), else ``None`` (also for a hook's answer that
        is no principal's name, :func:`~reactgraph.server.owners.checked_principal`: logged,
        and the request refused rather than answered 500)."""
        if self.principal_of is not None:
            named = self.principal_of(Request(scope))
            if inspect.isawaitable(named):
                named = await named
            try:
                return None if named is None else checked_principal(named)
            except ValueError as exc:
                logger.warning("principal_of named no principal: %s", exc)
                return None
        scheme, _, token = (self._header(scope, b"authorization") or "").partition(" ")
        sent = token.strip().encode()
        found = None
        for key, principal in self.keys:
            if secrets.compare_digest(sent, key) and found is None:
                found = principal
        return found if scheme.lower() == "bearer" else None

    async def _read_body(self, scope: Scope, receive: Receive) -> tuple[bytes, Response | None]:
        """The whole body, or the 413 answer once it passes :attr:`max_body_bytes`, the 408
        answer once it stalls for :attr:`body_timeout` or its reading has taken
        :attr:`body_deadline` in all, or the 422 answer when it nests too deep."""
        too_large = error_response(413, f"the request body is larger than this server's limit of "
                                   f"{self.max_body_bytes} bytes (a body is parsed while the server answers "
                                   "nothing else, so its size is bounded)")
        declared = self._header(scope, b"content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                return b"", error_response(400, "invalid Content-Length header")
            if int(declared) > self.max_body_bytes:
                return b"", too_large
        chunks: list[bytes] = []
        size = 0
        loop = asyncio.get_running_loop()
        ends = loop.time() + self.body_deadline
        while True:
            left = ends - loop.time()
            try:
                message = await asyncio.wait_for(receive(), max(min(self.body_timeout, left), 0.0))
            except TimeoutError:
                reason = (f"no part of the request body came for {self.body_timeout:g} seconds" if self.body_timeout < left
                          else f"the request body did not arrive within {self.body_deadline:g} seconds")
                return b"", error_response(408, reason, {"Connection": "close"})
            if message["type"] == "http.disconnect":
                return b"", Response(status_code=400)  # nobody is left to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                return b"", too_large
            chunks.append(chunk)
            if not message.get("more_body", False):
                body = b"".join(chunks)
                if json_text_too_deep(body):
                    return b"", error_response(422, f"the request body nests more than {MAX_NESTING_DEPTH} levels "
                                                    "of arrays and objects deep")
                return body, None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the app ``body`` as one message, then the client's own
    messages (a disconnect, which a streaming response listens for)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
