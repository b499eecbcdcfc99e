"""Two server processes on one Postgres ("what it must show"; SPEC R7.5): a run
started on one is injected into and read from the other; a run interrupted on one (its
process killed) is resumed on the other.

Each server is ``python -m tests.crash_run serve``: the real HTTP app (``create_app``) on
``open_persistence(<Postgres URL>)``, with the scripted model and counting tools of
``tests/crash_run.py``. Needs ``$REACTGRAPH_TEST_DATABASE_URL``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import uuid
from collections import Counter
from pathlib import Path

import httpx
import pytest

from reactgraph import open_persistence
from tests import crash_run
from tests.processes import REPO, calls, helper, wait_for_saved_result
from tests.serving import parse_sse, read_events

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


def start_server(postgres_url: str, counter: Path, slow: float) -> tuple[subprocess.Popen, str]:
    """Start one server process; returns it and its base URL."""
    process = subprocess.Popen(helper("serve", postgres_url, "-", counter, slow=slow), cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.wait(timeout=30)
        raise AssertionError(f"the server did not start: {process.stderr.read() if process.stderr else ''}")
    return process, json.loads(line)["url"]


def iteration_starts(events: list[tuple[str, dict]]) -> list[str]:
    return [data["tool_call_id"] for channel, data in events
            if channel == "step" and data.get("type") == "iteration" and data["status"] == "start"]


async def test_two_server_processes_share_runs_through_postgres(postgres_url, tmp_path):
    counter = tmp_path / "calls.db"
    servers = [start_server(postgres_url, counter, slow) for slow in (3, 3, 120)]
    (one, one_url), (two, two_url), (doomed, doomed_url) = servers
    try:
        async with (httpx.AsyncClient(base_url=one_url, timeout=120) as a,
                    httpx.AsyncClient(base_url=two_url, timeout=120) as b,
                    httpx.AsyncClient(base_url=doomed_url, timeout=120) as c):
            # 1. A run started on server one is injected into and read from server two.
            thread = f"two-servers-{uuid.uuid4().hex}"
            events: list[tuple[str, dict]] = []
            async with a.stream("POST", f"/threads/{thread}/runs", json={"message": crash_run.QUERY}) as response:
                assert response.status_code == 200
                async for channel, data in read_events(response):
                    events.append((channel, data))
                    if channel == "step" and data.get("type") == "iteration" and data["status"] == "start" \
                            and data["tool_call_id"] == "call-slow-3":  # slow_check now sleeps on server one
                        seen = (await b.get(f"/threads/{thread}")).json()
                        assert seen["running"] is True and seen["status"] == "running"
                        assert seen["messages"][0]["content"] == crash_run.QUERY
                        busy = await b.post(f"/threads/{thread}/runs", json={"message": "a second run"})
                        assert busy.status_code == 409
                        sent = await b.post(f"/threads/{thread}/inject", json={"message": "also CNC-009"})
                        assert sent.status_code == 202
            assert ("inject", {"type": "inject", "content": "also CNC-009"}) in events
            assert iteration_starts(events)[-1] == "call-fast-9"  # server one's loop acted on it
            assert events[-1][0] == "done" and events[-1][1]["answer"] == crash_run.SYNTHESIS
            final = (await b.get(f"/threads/{thread}")).json()
            assert final["status"] == "idle" and final["running"] is False
            assert final["result"]["answer"] == crash_run.SYNTHESIS
            assert "[USER INTERRUPT] also CNC-009" in [m["content"] for m in final["messages"]]

            # 2. A run interrupted on the third server (killed mid tool batch) is resumed on server two.
            thread = f"two-servers-{uuid.uuid4().hex}"
            async with open_persistence(postgres_url) as persistence:
                async with c.stream("POST", f"/threads/{thread}/runs", json={"message": crash_run.QUERY}) as response:
                    assert response.status_code == 200
                    await wait_for_saved_result(persistence.checkpointer, thread, "call-fast-2")
                    doomed.send_signal(signal.SIGKILL)
                    doomed.wait(timeout=30)
                    with pytest.raises(httpx.HTTPError):  # the stream breaks off with its server
                        async for _ in response.aiter_bytes():
                            pass
            assert (await b.get(f"/threads/{thread}")).json()["status"] == "interrupted"
            resumed = await b.post(f"/threads/{thread}/resume")
            assert resumed.status_code == 200
            events = parse_sse(resumed.text)
            assert iteration_starts(events) == ["call-slow-3"]  # the finished fast call was not run again
            assert events[-1][0] == "done" and events[-1][1]["answer"] == crash_run.SYNTHESIS
            assert events[-1][1]["thread_id"] == thread
            rows = calls(counter)  # scenario 1 ran its tools on server one, scenario 2 on the killed one and two
            fast = Counter(call_id for tool, call_id, _, pid in rows if tool == "fast_count" and pid in (doomed.pid, two.pid))
            assert fast == {"call-fast-1": 1, "call-fast-2": 1}  # each ran exactly once
            assert [row[:3] for row in rows if row[3] == two.pid] == [
                ("slow_check", "call-slow-3", "start"), ("slow_check", "call-slow-3", "done")]
            assert (await a.get(f"/threads/{thread}")).json()["status"] == "idle"
    finally:
        for process, _ in servers:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=30)
