"""Tool selection for large hubs (SPEC §5)."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool

from reactgraph import _TOOL_SELECTION_MAX, TOOL_SELECTION_THRESHOLD, AgentSettings, ModelAbilities, ReActAgent
from reactgraph.nodes.select_tools import settled_without_model
from reactgraph.tools.ranking import catalog_line
from reactgraph.policy.safeguards import resolve_settings
from reactgraph.testing import ScriptedChatModel, tool_call
from tests.helpers import NATIVE

TWO_PHASES = AgentSettings(synthesis="always", tool_selection=True)
SELECTING = AgentSettings(tool_selection=True)  # the selection call, whatever the policy's default
"""The loop, then a synthesis call: the calls these tests count (whatever the model's policy)."""


def make_tools(count: int) -> list[StructuredTool]:
    def make(i: int) -> StructuredTool:
        def run(machine_id: str) -> str:
            return f"tool{i} ran on {machine_id}"

        return StructuredTool.from_function(
            run, name=f"tool_{i:02d}",
            description=f"Reads connector {i} data for one machine, with a deliberately long first line that goes on.\n"
                        "Second line with details that must not reach the catalog.")
    return [make(i) for i in range(count)]


def selection(names):
    return AIMessage(content="", tool_calls=[{"name": "select_tools", "args": {"tools": names}, "id": "s1", "type": "tool_call"}])


def test_constants():
    assert (TOOL_SELECTION_THRESHOLD, _TOOL_SELECTION_MAX) == (12, 6)
    assert AgentSettings().tool_selection_threshold == 12 and AgentSettings().tool_selection_max is None  # the policy's
    assert resolve_settings(AgentSettings(), None).tool_selection_max == 6
    assert resolve_settings(AgentSettings(), ModelAbilities(small=True)).tool_selection_max == 1


async def test_twelve_tools_make_no_selection_call():
    model = ScriptedChatModel(responses=["answer"])
    agent = ReActAgent(model, make_tools(12), abilities=NATIVE, settings=TWO_PHASES)
    events = [e async for e in agent.astream_events("q")]
    assert "phase" not in [e.channel for e in events]
    assert len(model.call_kwargs[0]["tools"]) == 12
    assert len(model.calls) == 2  # loop + synthesis


async def test_thirteen_tools_make_one_selection_call_that_drives_the_loop():
    tools = make_tools(13)
    model = ScriptedChatModel(responses=[selection(["tool_03", "tool_07"]),
                                         AIMessage(content="", tool_calls=[tool_call("tool_07", {"machine_id": "M1"}, "c1")]),
                                         "done"])
    agent = ReActAgent(model, tools, abilities=NATIVE, settings=TWO_PHASES)
    events = [e async for e in agent.astream_events("check machine M1")]
    phase = [e.data for e in events if e.channel == "phase"]
    assert phase == [{"phase": "selecting_tools", "total_tools": 13}]
    assert events[0].channel == "phase"
    catalog = model.calls[0][-1].content
    lines = [line for line in catalog.splitlines() if line.startswith("- ")]
    assert len(lines) == 12 and all(len(line) <= 100 for line in lines)  # the lexical shortlist
    assert "Second line" not in catalog and "properties" not in catalog and "machine_id" not in catalog
    assert "check machine M1" in catalog
    assert model.call_kwargs[0]["tool_choice"] == "select_tools"
    bound = [t["function"]["name"] for t in model.call_kwargs[1]["tools"]]
    assert bound == ["tool_03", "tool_07"]
    assert events[-1].data["usage"]["model_calls"] == 4  # selection, two loop calls, synthesis


async def test_invalid_names_are_filtered_and_the_count_capped():
    names = ["nope", "tool_01", "tool_01", "tool_02", "tool_03", "tool_04", "tool_05", "tool_06", "tool_08", "bad"]
    model = ScriptedChatModel(responses=[selection(names), "done"])
    await ReActAgent(model, make_tools(20), abilities=NATIVE, settings=SELECTING).run("q")
    bound = [t["function"]["name"] for t in model.call_kwargs[1]["tools"]]
    assert bound == ["tool_01", "tool_02", "tool_03", "tool_04", "tool_05", "tool_06"]


@pytest.mark.parametrize("abilities", [NATIVE, ModelAbilities()])
async def test_garbage_selection_keeps_every_tool_and_the_run_answers(abilities):
    garbage = ["no idea", "still no idea", "nothing", "nope", "zilch"]
    model = ScriptedChatModel(responses=[*garbage[: 5 if abilities.tool_call else 2],
                                         json.dumps({"type": "final_answer", "answer": "fine"}) if not abilities.tool_call else "fine"])
    result = await ReActAgent(model, make_tools(14), abilities=abilities, settings=SELECTING).run("q")
    assert result.answer == "fine"
    if abilities.tool_call:
        assert len(model.call_kwargs[-1]["tools"]) == 14
    else:
        assert all(f"tool_{i:02d}" in model.calls[-1][0].content for i in range(14))


async def test_selection_naming_no_known_tool_keeps_every_tool():
    model = ScriptedChatModel(responses=[selection(["ghost"]), "fine"])
    await ReActAgent(model, make_tools(13), abilities=NATIVE, settings=SELECTING).run("q")
    assert len(model.call_kwargs[-1]["tools"]) == 13


async def test_a_call_to_an_unselected_tool_is_an_unknown_tool_observation():
    model = ScriptedChatModel(responses=[selection(["tool_01", "tool_02"]),
                                         AIMessage(content="", tool_calls=[tool_call("tool_09", {"machine_id": "M"}, "c1")]),
                                         "ok"])
    result = await ReActAgent(model, make_tools(13), abilities=NATIVE, settings=SELECTING).run("q")
    assert result.steps[0].error == "unknown tool 'tool_09'. Available tools: tool_01, tool_02"


async def test_settings_override_threshold_and_switch():
    model = ScriptedChatModel(responses=[selection(["tool_00"]), "ok"])
    await ReActAgent(model, make_tools(3), abilities=NATIVE, settings=AgentSettings(tool_selection=True, tool_selection_threshold=2)).run("q")
    assert [t["function"]["name"] for t in model.call_kwargs[1]["tools"]] == ["tool_00"]
    off = ScriptedChatModel(responses=["ok"])
    await ReActAgent(off, make_tools(30), abilities=NATIVE, settings=AgentSettings(tool_selection=False)).run("q")
    assert len(off.calls) == 1 and len(off.call_kwargs[0]["tools"]) == 30


def test_catalog_line_is_compact():
    (tool,) = make_tools(1)
    line = catalog_line(tool)
    assert len(line) == 80 and line.endswith("…") and line.startswith("- tool_00: Reads connector 0")


def test_a_long_lived_agent_keeps_its_per_query_caches_bounded():
    """Every distinct question may rank the tools in another order and name other values; the
    engine caches a bound model, a JSON prompt, an action schema and the ranking per such key.
    A server answering many questions keeps the most recent CACHE_SIZE of each, not all,
and still serves a recent entry from the cache."""
    from reactgraph.engine.bindings import CACHE_SIZE, Engine
    from reactgraph.providers.abilities import resolve_abilities

    model = ScriptedChatModel()
    tools = make_tools(3)
    abilities = ModelAbilities(json_mode=True, schema_output="json_schema", small=True)  # a small model: ranked per question
    engine = Engine.build(model, tools, resolve_abilities(model, abilities), AgentSettings(), True)
    for i in range(CACHE_SIZE + 50):
        query = f"status of machine M-{i:04d}"
        offered = engine.tools_for(None, query)
        named = (f"M-{i:04d}",)
        engine.native_model(offered, named)
        engine.json_system_prompt(offered, named=named)
        engine.action_format(offered, named)
    caches = (engine._per_query, engine._bound, engine._json_prompts, engine._action_formats)
    assert [len(cache) for cache in caches] == [CACHE_SIZE] * 4
    last = engine.native_model(offered, named)
    assert engine.native_model(offered, named) is last and len(engine._bound) == CACHE_SIZE


def test_words_are_stemmed_alike_from_many_threads_at_once():
    """Sync runs rank their questions on worker threads: each thread stems with a stemmer of
    its own (a Snowball stemmer keeps the word it works on), and the cached stems are the
    stemmer's own."""
    import itertools
    import threading

    import snowballstemmer

    from reactgraph.tools.ranking import stem, tokenize

    reference = snowballstemmer.stemmer("english")
    suffixes = ["ing", "ed", "s", "ation", "ness", "ly", "ful", "ies"]
    words = [f"{a}{b}{c}{suffix}" for a, b, c in itertools.product("bcdfglmprst", "aeiou", "nrst") for suffix in suffixes]
    stem.cache_clear()
    results: dict[int, list[str]] = {}

    def work(n: int) -> None:
        results[n] = [stem(word) for word in words[n::8]]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for n in range(8):
        assert results[n] == [reference.stemWord(word) for word in words[n::8]]
    assert tokenize("Running machines alarms failed") == ["run", "machin", "alarm", "fail"]
    assert stem("alarms", "en") == "alarm" and stem.cache_info().hits >= 1


async def test_a_selection_settled_by_a_clear_lexical_winner_makes_no_call():
    """with one tool to keep and a clear lexical winner, the model's pick cannot change
    the selection (the winner is always kept), so no selection call is made; a tie still asks."""
    tools = make_tools(12) + [StructuredTool.from_function(lambda machine_id: f"{machine_id}: warning",
                                                           name="equipment_status",
                                                           description="Current state of one machine.")]
    model = ScriptedChatModel(responses=["answer"])
    agent = ReActAgent(model, tools, abilities=NATIVE, settings=AgentSettings(tool_selection_max=1, synthesis="always"))
    events = [e async for e in agent.astream_events("What is the current state of machine M1?")]
    assert "phase" not in [e.channel for e in events] and model.kinds[0] == "tool_loop"
    assert [t["function"]["name"] for t in model.call_kwargs[0]["tools"]] == ["equipment_status"]
    tied = ScriptedChatModel(responses=[selection(["tool_03"]), "answer"])
    await ReActAgent(tied, make_tools(13), abilities=NATIVE, settings=AgentSettings(tool_selection=True, tool_selection_max=1)).run(
        "read connector data for machine M1")
    assert tied.kinds[0] == "selection"
    assert settled_without_model([("a", 2.0), ("b", 1.0)], 1) == ["a"]
    assert settled_without_model([("a", 2.0), ("b", 1.0)], 2) is None
    assert settled_without_model([("a", 0.0), ("b", 0.0)], 1) is None


def test_a_clitic_joined_by_an_apostrophe_is_no_search_word():
    """"What's" must not give an ``s`` token that every tool saying "status" or "sensors"
    shares; French elisions keep the word after them."""
    from reactgraph.tools.ranking import ToolRanker, tokenize

    assert tokenize("What's wrong with the pump, and don't you know it's late?", "en") == [
        "wrong", "pump", "don", "know", "late"]
    assert tokenize("Quel est l’état de la commande d'hier ?", "fr")[:3] == ["quel", "est", "etat"]
    assert tokenize("O'Brien's tickets", "en") == ["o", "brien", "ticket"]

    def pump_sensors(pump: str) -> str:
        """Readings of a pump's sensors over the last days."""
        return pump

    def pump_faults(pump: str) -> str:
        """What is wrong with a pump: its faults."""
        return pump

    ranker = ToolRanker([StructuredTool.from_function(pump_sensors), StructuredTool.from_function(pump_faults)])
    assert ranker.rank("What's wrong with pump 7?", "en")[0][0] == "pump_faults"
