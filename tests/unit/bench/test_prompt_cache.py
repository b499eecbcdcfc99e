"""bench/prompt_cache.py reads llama.cpp's ``timings`` from the responses it passes through
unchanged (no model: a mock transport answers as llama.cpp's server does)."""

from __future__ import annotations

import importlib.util
import json
import sys

import httpx

from reactgraph.protocol.prompts import SELECTION_SYSTEM, SYNTHESIS_USER
from tests.helpers import REPO

_PATH = REPO / "bench" / "prompt_cache.py"
_SPEC = importlib.util.spec_from_file_location("bench_prompt_cache", _PATH)
pc = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = pc
_SPEC.loader.exec_module(pc)


def _timings(prompt_n: int, cache_n: int) -> dict:
    return {"prompt_n": prompt_n, "cache_n": cache_n, "predicted_n": 5, "prompt_ms": 40.0, "predicted_ms": 90.0}


def _llamacpp(request: httpx.Request) -> httpx.Response:
    """A completion as llama.cpp sends it: streamed, the timings on the last chunk; or whole."""
    body = json.loads(request.content)
    if body.get("stream"):
        chunks = [{"choices": [{"delta": {"content": "Bonjour"}}]},
                  {"choices": [{"delta": {}, "finish_reason": "stop"}], "timings": _timings(12, 300)}]
        text = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
        return httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})
    return httpx.Response(200, json={"choices": [{"message": {"content": "{}"}}], "timings": _timings(410, 7)})


def _messages(system: str, user: str) -> dict:
    return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}


async def test_async_calls_are_recorded_with_their_kind_and_bodies_pass_unchanged():
    recorder = pc.TimingsRecorder()
    async with httpx.AsyncClient(transport=recorder.async_transport(httpx.MockTransport(_llamacpp))) as client:
        whole = await client.post("http://llama/v1/chat/completions",
                                  json=_messages(SELECTION_SYSTEM.format(limit=2), "Request: Zugzeiten\n\nCatalog:\n- a"))
        async with client.stream("POST", "http://llama/v1/chat/completions",
                                 json={**_messages("Schreib die Antwort.", SYNTHESIS_USER.format(query="q", trace="t")),
                                       "stream": True}) as streamed:
            text = "".join([part async for part in streamed.aiter_text()])
    assert whole.json()["choices"][0]["message"]["content"] == "{}"
    assert "Bonjour" in text and text.endswith("data: [DONE]\n\n")
    assert [(c.kind, c.prompt_n, c.cache_n) for c in recorder.calls] == [("sel", 410, 7), ("syn", 12, 300)]


def test_sync_calls_are_recorded_and_a_response_without_timings_is_not():
    def handler(request: httpx.Request) -> httpx.Response:
        if b"plain" in request.content:
            return httpx.Response(200, json={"choices": []})
        return _llamacpp(request)

    recorder = pc.TimingsRecorder()
    with httpx.Client(transport=recorder.sync_transport(httpx.MockTransport(handler))) as client:
        client.post("http://llama/v1/chat/completions", json=_messages("Tu es un assistant.", "Quelle heure ?"))
        client.post("http://llama/v1/chat/completions", json=_messages("plain", "x"))
    assert [(c.kind, c.prompt_n, c.cache_n) for c in recorder.calls] == [("loop", 410, 7)]


def test_totals_count_the_questions_after_the_first():
    def cost(seconds: float, *calls: tuple[int, int]) -> pc.QuestionCost:
        return pc.QuestionCost("strict", "q", [pc.CallTiming("loop", p, c) for p, c in calls], seconds, True, True)

    totals = pc.summary([cost(30.0, (1000, 0)), cost(10.0, (200, 800), (50, 950)), cost(12.0, (150, 850))])
    assert totals["prompt_n_per_question_after_first"] == 200 and totals["cache_n_per_question_after_first"] == 1300
    assert round(totals["cached_share_after_first"], 3) == round(2600 / 3000, 3)
    assert totals["median_s"] == 12.0 and totals["median_s_after_first"] == 11.0 and totals["right_tool"] == 3
