"""Shared fixtures: tools with known behaviour for the unit tests."""

from __future__ import annotations

import asyncio
import time

import pytest
from langchain_core.tools import tool

from reactgraph import AgentSettings, Artifact


@tool
def get_status(equipment_id: str) -> str:
    """Return the status of one machine."""
    return f"{equipment_id}: normal"


@tool
async def slow_async(x: int) -> str:
    """Sleep half a second (async), then echo."""
    await asyncio.sleep(0.5)
    return f"async {x}"


@tool
def slow_sync(x: int) -> str:
    """Sleep half a second (in a worker thread), then echo."""
    time.sleep(0.5)
    return f"sync {x}"


@tool
def broken(x: int) -> str:
    """Always raises."""
    raise RuntimeError(f"sensor bus offline for {x}")


@tool
async def hangs(x: int) -> str:
    """Never returns in time."""
    await asyncio.sleep(30)
    return "late"


@tool
def as_dict(x: int) -> dict:
    """Returns a dict, not a string."""
    return {"value": x, "unit": "°C"}


@tool
def report(title: str) -> Artifact:
    """Returns an HTML artifact."""
    return Artifact(f"{title}.html", "<h1>" + "x" * 5000 + "</h1>")


@pytest.fixture
def tools():
    return [get_status, slow_async, slow_sync, broken, hangs, as_dict, report]


@pytest.fixture
def fast_settings():
    return AgentSettings(max_iterations=8, tool_timeout=0.3, retry_initial_delay=0.01, retry_max_delay=0.02)
