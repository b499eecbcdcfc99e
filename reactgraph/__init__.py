"""reactgraph: a two-phase ReAct agent engine built as a LangGraph state machine.

Public API only; see the README for a tour.
"""

from reactgraph.abilities import ModelAbilities, resolve_abilities
from reactgraph.actions import PARSE_FAILURE_SENTINEL, Action, parse_action
from reactgraph.agent import ReActAgent
from reactgraph.artifacts import Artifact
from reactgraph.config import AgentSettings
from reactgraph.events import AgentEvent
from reactgraph.graph.react import create_react_graph
from reactgraph.jsonparse import extract_json
from reactgraph.protocol import ProtocolError, check_protocol
from reactgraph.result import AgentResult, Step, Usage

__all__ = [
    "PARSE_FAILURE_SENTINEL",
    "Action",
    "AgentEvent",
    "AgentResult",
    "AgentSettings",
    "Artifact",
    "ModelAbilities",
    "ProtocolError",
    "ReActAgent",
    "Step",
    "Usage",
    "check_protocol",
    "create_react_graph",
    "extract_json",
    "parse_action",
    "resolve_abilities",
]
