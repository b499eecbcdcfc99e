"""ReAct graphs that pause for a person, served by ``langgraph dev`` in ``test_studio.py``.
``graph``: the tool asks with its own ``interrupt()``. ``policy_graph``: the
agent's approval policy asks before a plain tool runs (SPEC R13.3). A scripted
model calls the tool once, then answers; the server supplies the checkpointer."""

from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.types import interrupt

from reactgraph import AgentSettings, ModelAbilities, create_react_graph
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
graph = create_react_graph(model, [stop_machine], abilities=ModelAbilities(tool_call=True),
                           settings=AgentSettings(synthesis="always"))  # a synthesis call writes the answer


@tool
def create_work_order(equipment_id: str, task: str) -> str:
    """Create a maintenance work order (the agent's policy asks a person first)."""
    return f"work order created for {equipment_id}: {task}"


policy_model = ScriptedChatModel(
    responses=[AIMessage(content="", tool_calls=[tool_call("create_work_order", {"equipment_id": "CNC-003", "task": "bearing"},
                                                           "call_wo")]),
               "The work order is created."],
    synthesis="Work order created for CNC-003.",
)
policy_graph = create_react_graph(policy_model, [create_work_order], abilities=ModelAbilities(tool_call=True),
                                  settings=AgentSettings(approval={"create_work_order": "always"}, synthesis="always"))
