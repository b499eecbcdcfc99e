"""reactgraph: a two-phase ReAct agent engine built as a LangGraph state machine.

Public API only; see the README for a tour.
"""

from reactgraph.abilities import ModelAbilities, resolve_abilities
from reactgraph.actions import PARSE_FAILURE_SENTINEL, Action, parse_action
from reactgraph.agent import ReActAgent
from reactgraph.approval import Decision, DecisionError, PendingCall
from reactgraph.artifacts import Artifact
from reactgraph.checkpointing import NothingToResumeError, Persistence, open_checkpointer, open_persistence
from reactgraph.config import _TOOL_SELECTION_MAX, COMPACTION_HINTS, TOOL_SELECTION_THRESHOLD, AgentSettings
from reactgraph.context import ContextGuard, GuardResult, TokenCounter, context_budget
from reactgraph.dag import DAGAgent, DAGResult, DAGSettings, StepOutcome, create_dag_graph
from reactgraph.events import AgentEvent
from reactgraph.graph.react import create_react_graph
from reactgraph.hooks import ToolRejection
from reactgraph.interrupts import (
    FollowUpLimitError,
    FollowUpLimits,
    InMemoryInterruptQueue,
    InterruptQueue,
    NoActiveRunError,
    ThreadBusyError,
)
from reactgraph.jsonparse import extract_json
from reactgraph.limits import ModelPrice, UsageLimits
from reactgraph.models.registry import ModelRegistry, RegisteredModel
from reactgraph.protocol import ProtocolError, check_protocol
from reactgraph.result import AgentResult, Step, Usage
from reactgraph.structured import StructuredCallResult, StructuredOutputError, structured_llm_call

__all__ = [
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
    "ModelAbilities",
    "ModelRegistry",
    "NoActiveRunError",
    "NothingToResumeError",
    "Persistence",
    "ProtocolError",
    "ReActAgent",
    "RegisteredModel",
    "Step",
    "StepOutcome",
    "StructuredCallResult",
    "StructuredOutputError",
    "ThreadBusyError",
    "TokenCounter",
    "Usage",
    "check_protocol",
    "context_budget",
    "create_dag_graph",
    "create_react_graph",
    "extract_json",
    "open_checkpointer",
    "open_persistence",
    "parse_action",
    "resolve_abilities",
    "structured_llm_call",
]
