"""reactgraph: a two-phase ReAct agent engine built as a LangGraph state machine.

The public API is what this module exports (``__all__``), plus the documented modules
``reactgraph.testing`` (scripted models for users' tests), ``reactgraph.server`` and
``reactgraph.window``. Modules whose name starts with ``_`` are internal and may change
without notice. See docs/architecture.md for what lives where.
"""

from reactgraph.providers.abilities import ModelAbilities, resolve_abilities
from reactgraph.protocol.actions import PARSE_FAILURE_SENTINEL, Action, parse_action
from reactgraph.agents.react import ReActAgent
from reactgraph.tools.approval import Decision, DecisionError, PendingCall
from reactgraph.tools.artifacts import Artifact
from reactgraph.persistence.checkpointing import Persistence, open_checkpointer, open_persistence
from reactgraph.core.config import COMPACTION_HINTS, TOOL_SELECTION_MAX, TOOL_SELECTION_THRESHOLD, AgentSettings
from reactgraph.dag import DAGAgent, DAGResult, DAGSettings, StepOutcome, create_dag_graph
from reactgraph.core.errors import (
    FollowUpLimitError,
    LocalModelError,
    MCPConfigError,
    ModelTimeoutError,
    NoActiveRunError,
    NothingToResumeError,
    PlanError,
    ProtocolError,
    ReactGraphError,
    StructuredOutputError,
    SyncRunError,
    ThreadBusyError,
)
from reactgraph.events import AgentEvent
from reactgraph.engine.fallbacks import CircuitBreaker, FallbackModel
from reactgraph.graph.react import create_react_graph
from reactgraph.tools.hooks import ToolRejection
from reactgraph.persistence.interrupts import FollowUpLimits, InMemoryInterruptQueue, InterruptQueue
from reactgraph.protocol.jsonparse import extract_json
from reactgraph.core.limits import ModelPrice, UsageLimits
from reactgraph.tools.mcp import MCPTools, load_mcp_tools
from reactgraph.models.registry import ModelRegistry, RegisteredModel
from reactgraph.protocol.messages import check_protocol
from reactgraph.agents.result import AgentResult, Step
from reactgraph.protocol.structured import StructuredCallResult, structured_llm_call
from reactgraph.core.usage import Usage
from reactgraph.window import ContextGuard, GuardResult, TokenCounter, context_budget

_TOOL_SELECTION_MAX = TOOL_SELECTION_MAX
"""Most tools a selection keeps (:data:`reactgraph.core.config.TOOL_SELECTION_MAX`), under the name
the public API has always exported."""

__all__ = [
    "CircuitBreaker",
    "FallbackModel",
    "UsageLimits",
    "ModelPrice",
    "ToolRejection",
    "PendingCall",
    "DecisionError",
    "Decision",
    "TOOL_SELECTION_THRESHOLD",
    "_TOOL_SELECTION_MAX",
    "PARSE_FAILURE_SENTINEL",
    "Action",
    "AgentEvent",
    "AgentResult",
    "AgentSettings",
    "Artifact",
    "COMPACTION_HINTS",
    "ContextGuard",
    "DAGAgent",
    "DAGResult",
    "DAGSettings",
    "FollowUpLimitError",
    "FollowUpLimits",
    "GuardResult",
    "InMemoryInterruptQueue",
    "InterruptQueue",
    "LocalModelError",
    "MCPConfigError",
    "ModelTimeoutError",
    "MCPTools",
    "ModelAbilities",
    "ModelRegistry",
    "NoActiveRunError",
    "NothingToResumeError",
    "Persistence",
    "PlanError",
    "ProtocolError",
    "ReActAgent",
    "ReactGraphError",
    "RegisteredModel",
    "Step",
    "StepOutcome",
    "StructuredCallResult",
    "StructuredOutputError",
    "SyncRunError",
    "ThreadBusyError",
    "TokenCounter",
    "Usage",
    "check_protocol",
    "context_budget",
    "create_dag_graph",
    "create_react_graph",
    "extract_json",
    "load_mcp_tools",
    "open_checkpointer",
    "open_persistence",
    "parse_action",
    "resolve_abilities",
    "structured_llm_call",
]
