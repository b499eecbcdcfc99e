"""Plain words for a run's codes (reactgraph/agents/wording.py and the page's table), the command
line's banner and footer, and approval turned on from the command line or the environment."""

from __future__ import annotations

import json
import re

import pytest
from langchain_core.tools import tool

from reactgraph.cli.view import banner_line, footer_line
from reactgraph.demo.agent import approval_rules, approve_names
from reactgraph.events import Done
from reactgraph.agents.outcome import FINISH_REASONS
from reactgraph.agents.wording import ANSWER_SOURCE_WORDS, FINISH_WORDS, finish_words, policy_words, protocol_words, verdict_words
from tests.helpers import REPO

APP_JS = REPO / "reactgraph" / "server" / "static" / "app.js"


def page_table(name: str) -> dict[str, str]:
    """The page's table ``name`` (a ``const`` object of strings in app.js)."""
    table = re.search(rf"const {name} = \{{(.*?)\n  \}};", APP_JS.read_text(encoding="utf-8"), re.S).group(1)
    return {code: json.loads(text) for code, text in re.findall(r'^\s*(\w+): ("(?:[^"\\]|\\.)*"),', table, re.M)}


def test_every_finish_reason_has_words_here_and_on_the_page():
    assert set(FINISH_WORDS) == FINISH_REASONS
    assert page_table("FINISH_WORDS") == dict(FINISH_WORDS)
    assert page_table("ANSWER_SOURCE_WORDS") == dict(ANSWER_SOURCE_WORDS)


def test_codes_read_as_sentences():
    assert finish_words("covered") == "Answered from the tool results"
    assert finish_words("max_iterations").startswith("Stopped at the step limit")
    assert finish_words("something_new") == "Ended (something_new)" and finish_words(None) == "Ended"
    assert "small model" in policy_words("strict") and policy_words("permissive") == "standard checks"
    assert protocol_words("json") == "writes its tool calls as JSON in its replies"
    assert verdict_words(True, 0.5, False) == "The goal looks reached (fairly sure)."
    assert verdict_words(False, 0.2, True) == "The goal is not reached yet (unsure), so the agent plans again."


def test_the_banner_and_the_footer_say_what_happened_without_codes():
    banner = banner_line("embedded SmolLM2-135M", "json", 24, "strict", ("create_work_order",))
    assert banner == ("model: embedded SmolLM2-135M, which writes its tool calls as JSON in its replies · 24 tools · "
                      "extra checks for a small model (answers must come from the tool results) · "
                      "you approve each call of create_work_order")
    assert "mode:" not in banner and "safeguards:" not in banner
    assert "plans steps (DAG; models by role: general, fast)" in banner_line("m", "dag:general, fast", 3, "permissive")
    done = Done(answer="a", iterations=3, usage={"input_tokens": 900, "output_tokens": 60, "total_tokens": 960,
                                                 "model_calls": 4}, elapsed=1.25, finish_reason="covered",
                thread_id="t", model=None, model_usage={})
    assert footer_line(done, 3.75) == "Answered from the tool results in 3.8 s · 3 steps · 960 tokens (900 in, 60 out) in 4 model calls"
    auto = Done(answer="a", iterations=1, usage={"input_tokens": 5, "output_tokens": 2, "total_tokens": 7, "model_calls": 1},
                elapsed=0.5, finish_reason="final_answer", thread_id="t", answer_source="loop")
    assert footer_line(auto, 0.5).endswith(" in 1 model call · the answer is the model's reply in the tool loop")


@tool
def lock_valve(valve: str) -> str:
    """Lock a valve."""
    return f"{valve} locked"


@tool
def read_valve(valve: str) -> str:
    """Read a valve's position."""
    return f"{valve}: open"


def test_approve_names_come_from_the_options_else_the_environment():
    assert approve_names(["lock_valve", "read_valve, lock_valve", " "], environ={}) == ("lock_valve", "read_valve")
    assert approve_names(None, environ={"REACTGRAPH_APPROVE": "read_valve,,lock_valve"}) == ("read_valve", "lock_valve")
    assert approve_names(["lock_valve"], environ={"REACTGRAPH_APPROVE": "read_valve"}) == ("lock_valve",)
    assert approve_names(None, environ={}) == ()


def test_approval_rules_ask_for_each_named_tool_and_refuse_an_unknown_name():
    assert approval_rules(("lock_valve",), [lock_valve, read_valve]) == {"lock_valve": "always"}
    assert approval_rules(("*",), [lock_valve]) == {"*": "always"}
    with pytest.raises(ValueError, match=r"names no tool: lock_vale \(tools: lock_valve, read_valve\)"):
        approval_rules(("lock_vale",), [read_valve, lock_valve])
