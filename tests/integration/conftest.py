"""Integration fixtures: the real embedded model behind the real llama.cpp HTTP server."""

from __future__ import annotations

import pytest

from reactgraph.models import LocalModelServer


@pytest.fixture(scope="session")
def local_server():
    """One embedded SmolLM2 server for the whole session (started once, stopped at the end)."""
    server = LocalModelServer()
    server.start(timeout=180)
    try:
        yield server
    finally:
        server.stop()
