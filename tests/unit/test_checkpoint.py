"""The graph state is checkpoint-serializable: a run on the SQLite checkpointer stores and
reloads every field, artifacts and step records included."""

from __future__ import annotations

import warnings

from langchain_core.messages import AIMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from reactgraph import ModelAbilities, ReActAgent
from reactgraph.testing import ScriptedChatModel, tool_call


async def test_state_round_trips_through_sqlite(tools, tmp_path):
    script = [AIMessage(content="", tool_calls=[tool_call("report", {"title": "oee"}, "c1"),
                                                 tool_call("as_dict", {"x": 3}, "c2")]),
              "Report ready.", "Second turn answer."]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unregistered type in state would warn on load
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.db")) as saver:
            agent = ReActAgent(ScriptedChatModel(responses=script), tools,
                               abilities=ModelAbilities(tool_call=True), checkpointer=saver)
            first = await agent.run("make the report", thread_id="plant-1")
            snapshot = await agent.graph.aget_state({"configurable": {"thread_id": "plant-1"}})
            values = snapshot.values
            assert values["answer"] == "Report ready." == first.answer
            assert [s["tool_name"] for s in values["steps"]] == ["report", "as_dict"]
            assert values["steps"][0]["artifact"]["filename"] == "oee.html"
            assert values["usage"]["model_calls"] == 2
            assert snapshot.next == ()
            second = await agent.run("and now?", thread_id="plant-1")
            assert second.answer == "Second turn answer."
            assert second.steps == [] and second.iterations == 1  # per-turn fields were reset
            assert [m.type for m in second.messages] == ["system", "human", "ai", "tool", "tool", "ai", "human", "ai"]
            history = [state async for state in agent.graph.aget_state_history({"configurable": {"thread_id": "plant-1"}})]
            answers = {state.values.get("answer") for state in history}
            assert {"Report ready.", "Second turn answer."} <= answers  # both turns' checkpoints are kept
