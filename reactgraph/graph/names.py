"""The names of the graphs' nodes, defined once: the builders add the nodes under these names,
and the code that reads a run by its nodes (the event adapter, the observer's spans, the kinds
of model call, trace names) refers to them here. This module imports nothing, so any layer may
read it without importing the graph builders."""

from __future__ import annotations

# The ReAct graph (reactgraph.graph.react); the DAG's steps run it too.
START_TURN = "start_turn"
"""Starts a turn: the question, the turn's counters reset."""
SELECT_TOOLS = "select_tools"
"""The tool-selection call before the loop (SPEC R5.1)."""
GUARD_CONTEXT = "guard_context"
"""The context guard: compacts the history when it outgrows the window (SPEC §6)."""
LLM_CALL_NATIVE = "llm_call_native"
"""A loop model call in native mode (tool calls through the provider's API)."""
LLM_CALL_JSON = "llm_call_json"
"""A loop model call in JSON mode (actions as JSON text)."""
EXECUTE_TOOLS = "execute_tools"
"""Runs one tool call; its saved update carries the call's step record."""
FALLBACK = "fallback"
"""Ends a loop the iteration cap or a usage limit stopped."""
SYNTHESIZE = "synthesize"
"""The streamed answer synthesis (both graphs)."""
STRUCTURED_RESPONSE = "structured_response"
"""The structured answer of a run given a ``response_format``."""

LOOP_NODES = (LLM_CALL_NATIVE, LLM_CALL_JSON)
"""The loop's model-call nodes, one per mode."""

LOOP_NODE_MODES = {LLM_CALL_NATIVE: "native", LLM_CALL_JSON: "json"}
"""The loop nodes and the mode (SPEC R2.2) of their calls."""

# The DAG graph (reactgraph.dag.graph).
START_DAG = "start_dag"
"""Starts a DAG run: the goal, the run's state reset."""
PLAN = "plan"
"""The planner: makes (or remakes) the round's plan."""
SCHEDULE = "schedule"
"""Sends the steps whose dependencies are done."""
RUN_STEP = "run_step"
"""Runs one plan step (a ReAct loop)."""
ANALYZE = "analyze"
"""Judges whether the round achieved the goal."""
