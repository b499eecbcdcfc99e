"""A ReAct graph whose tool asks a human for approval with ``interrupt()``, served by
``langgraph dev`` in ``test_studio.py`` (issue 21). A scripted model calls the tool once,
then answers; the server supplies the checkpointer."""

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.types import interrupt

from reactgraph import ModelAbilities, create_react_graph
from reactgraph.testing import ScriptedChatModel, tool_call


@tool
def stop_machine(machine: str) -> str:
    """Stop a machine, once a human approved it."""
    approval = interrupt({"action": "stop_machine", "machine": machine})
    return f"{machine} stopped ({approval})"


model = ScriptedChatModel(
    responses=[AIMessage(content="", tool_calls=[tool_call("stop_machine", {"machine": "CNC-003"}, "call_stop")]),
               "CNC-003 is stopped."],
    synthesis="CNC-003 has been stopped.",
)
graph = create_react_graph(model, [stop_machine], abilities=ModelAbilities(tool_call=True))
