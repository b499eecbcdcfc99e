"""reactgraph.testing: the scripted model tells the kinds of call apart by how
the engine makes them, so ``by_kind`` replies reach the right calls whatever the prompts say."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool

from reactgraph import AgentResult, AgentSettings, ModelAbilities, ReActAgent, structured_llm_call
from reactgraph.testing import ScriptedChatModel, tool_call


def hub(count: int) -> list[StructuredTool]:
    def make(i: int) -> StructuredTool:
        return StructuredTool.from_function(lambda machine: f"connector {i}: {machine}", name=f"connector_{i:02d}",
                                            description=f"Reads connector {i} data for one machine.")
    return [make(i) for i in range(count)]


async def test_each_kind_of_call_gets_its_own_replies():
    model = ScriptedChatModel(
        by_kind={"selection": [AIMessage("", tool_calls=[tool_call("select_tools", {"tools": ["connector_03"]}, "s1")])]},
        responses=[AIMessage("", tool_calls=[tool_call("connector_03", {"machine": "CNC-003"}, "c1")]), "CNC-003: ok"],
        synthesis="CNC-003 is ok.",
    )
    agent = ReActAgent(model, hub(13), abilities=ModelAbilities(tool_call=True),
                       settings=AgentSettings(synthesis="always", tool_selection=True))  # a synthesis call too
    events = [event async for event in agent.astream_events("CNC-003 connector 3?")]
    assert model.kinds == ["selection", "tool_loop", "tool_loop", "synthesis"]
    assert events[-1].data["answer"] == "CNC-003 is ok."
    assert [s["tool_name"] for s in [e.data for e in events if e.data.get("type") == "iteration" and e.data["status"] == "done"]] == ["connector_03"]


async def test_outside_a_graph_structured_calls_and_synthesis_are_told_apart():
    model = ScriptedChatModel(by_kind={"structured": ['{"ok": true}']}, synthesis="streamed")
    result = await structured_llm_call(model, [], {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
                                       abilities=ModelAbilities(), default_value=None)
    agent = ReActAgent(model, hub(1), abilities=ModelAbilities(tool_call=True))
    text = "".join([chunk async for chunk in agent.stream_answer("q", AgentResult("draft"))])
    assert result.value == {"ok": True} and text == "streamed"
    assert model.kinds == ["structured", "synthesis"]
