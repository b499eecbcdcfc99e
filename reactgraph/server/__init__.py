"""The HTTP server of SPEC §8/§10: a FastAPI app that streams runs as server-sent events
and serves the web page (extra ``[server]``).

``create_app(agent)`` builds the app around any :class:`~reactgraph.ReActAgent` (for
embedding in another ASGI deployment); ``reactgraph serve`` runs it under uvicorn with the
demo plant's tools, the configured model and the SQLite checkpointer.
"""

from reactgraph.server.app import create_app
from reactgraph.server.runs import (
    API_KEY_ENV,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_MESSAGE_CHARS,
    ServerSettings,
    stream_events,
)
from reactgraph.server.owners import API_KEYS_ENV, DEFAULT_PRINCIPAL, parse_api_keys
from reactgraph.server.serve import open_demo_agent, serve, tune_gc

__all__ = [
    "API_KEYS_ENV",
    "API_KEY_ENV",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_MESSAGE_CHARS",
    "DEFAULT_PRINCIPAL",
    "ServerSettings",
    "create_app",
    "open_demo_agent",
    "parse_api_keys",
    "serve",
    "stream_events",
    "tune_gc",
]
