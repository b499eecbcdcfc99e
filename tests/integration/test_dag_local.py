"""DAG mode end to end on the real embedded model over HTTP: the planner, step
loops, analyzer and synthesis all talk to SmolLM2 through llama.cpp. Kept short (two
tools, one iteration per step, one round, a short synthesis on a custom ``writer`` role):
CI time matters and the model is tiny."""

from __future__ import annotations

import pytest

from reactgraph import AgentSettings, DAGAgent, DAGSettings, ModelRegistry
from reactgraph.demo.factory import DEMO_SYSTEM_PROMPT, build_factory_hub

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]


async def test_dag_run_plans_runs_steps_and_synthesizes(local_server, tmp_path):
    hub = [t for t in build_factory_hub(tmp_path / "factory.db") if t.name in ("get_equipment_status", "compare_equipment")]
    models = (ModelRegistry(local_server.chat_model(), abilities=local_server.abilities)
              .register("writer", local_server.chat_model(max_tokens=128), abilities=local_server.abilities))
    agent = DAGAgent(models, hub, settings=AgentSettings(max_iterations=1, system_prompt=DEMO_SYSTEM_PROMPT, tool_timeout=30),
                     dag_settings=DAGSettings(max_rounds=1, max_steps=3, step_timeout=300, synthesis_role="writer"))
    events = [event async for event in agent.astream_events("Compare CNC-001 and CNC-003")]
    channels = [event.channel for event in events]
    assert channels[:2] == ["phase", "plan"] and channels[-1] == "done", channels
    steps = events[1].data["steps"]
    assert 1 <= len(steps) <= 3 and all(step["task"].strip() for step in steps)
    started = [e.data for e in events if e.channel == "dag_step" and e.data["status"] == "started"]
    completed = [e.data for e in events if e.channel == "dag_step" and e.data["status"] == "completed"]
    assert {e["step_id"] for e in completed} == {step["id"] for step in steps}
    # Each step runs on the role its model hint names (the planner may name "writer"), else general.
    hints = {step["id"]: step.get("model_hint") for step in steps}
    assert started and all(e["model_role"] == (hints[e["step_id"]] if hints[e["step_id"]] in ("general", "writer")
                                               else "general") for e in started)
    assert [e.data["round"] for e in events if e.channel == "analysis"] == [1]
    answer = [e.data for e in events if e.channel == "answer"]
    assert answer[0] == {"status": "start"} and answer[-1] == {"status": "done"} and len(answer) > 2
    done = events[-1].data
    assert done["answer"].strip() and done["rounds"] == 1
    assert done["finish_reason"] in ("achieved", "not_achieved", "max_rounds")
    assert done["usage"]["model_calls"] >= 2 + len(started)  # planner, analyzer, one loop call per step at least
