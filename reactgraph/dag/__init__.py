"""DAG mode (SPEC §9): plan → one ReAct subgraph per plan step, on the model its
``model_hint`` resolves to → analyze → re-plan or synthesize.

Modules: :mod:`~reactgraph.dag.state` (the state), :mod:`~reactgraph.dag.plan` (planner),
:mod:`~reactgraph.dag.executor` (scheduling and the step subgraphs),
:mod:`~reactgraph.dag.analyze` (analyzer and the re-plan decision),
:mod:`~reactgraph.dag.synthesize` (the answer), :mod:`~reactgraph.dag.graph` (wiring),
:mod:`~reactgraph.dag.followups` (follow-ups during a run), :mod:`~reactgraph.dag.budget`
(run-wide usage limits), :mod:`~reactgraph.dag.agent` (the facade, with resume and approval).
"""

from reactgraph.dag.agent import DAGAgent, DAGResult, StepOutcome
from reactgraph.dag.graph import create_dag_graph, is_dag_thread
from reactgraph.dag.settings import DAGSettings

__all__ = ["DAGAgent", "DAGResult", "DAGSettings", "StepOutcome", "create_dag_graph", "is_dag_thread"]
