"""DAG-mode settings (SPEC §9), in one dataclass."""

from __future__ import annotations

from dataclasses import dataclass

from reactgraph.core.config import check_at_least
from reactgraph.models.registry import DEFAULT_ROLE


@dataclass(frozen=True)
class DAGSettings:
    """Settings of :func:`~reactgraph.dag.create_dag_graph` / :class:`~reactgraph.DAGAgent`.

    The ReAct loop of every step takes its own knobs (``max_iterations``, ``tool_timeout`` …)
    from the :class:`~reactgraph.AgentSettings` given next to these.

    Attributes:
        max_rounds: Plan → execute → analyze rounds at most, the first included (default 3, R9.4).
        confidence_threshold: The analyzer's confidence below which a "not achieved" verdict
            starts another round (default 0.8, R9.4).
        max_concurrency: Steps running at once at most (default 5, R9.2).
        step_timeout: Seconds one step's ReAct loop may take before the step fails (default 600, R9.2).
        dependency_chars: Characters of each dependency result put in a step's context;
            a longer result is cut and ends with ``… [truncated]`` (default 4,000, R9.2).
        min_steps: Steps the planner is asked for at least (default 2; a one-step plan is
            still accepted, R9.1).
        max_steps: Steps a plan may have (default 6); further steps are dropped with a warning.
        planner_role: Registry role of the planner's model (default ``general``).
        analyzer_role: Registry role of the analyzer's model (default ``general``).
        synthesis_role: Registry role of the answer synthesis model (default ``general``).
        result_chars: Characters of each step result shown to the analyzer, the re-planner
            and the synthesis (default 2,000).
    """

    max_rounds: int = 3
    confidence_threshold: float = 0.8
    max_concurrency: int = 5
    step_timeout: float = 600.0
    dependency_chars: int = 4000
    min_steps: int = 2
    max_steps: int = 6
    planner_role: str = DEFAULT_ROLE
    analyzer_role: str = DEFAULT_ROLE
    synthesis_role: str = DEFAULT_ROLE
    result_chars: int = 2000

    def __post_init__(self) -> None:
        check_at_least(self, max_rounds=1, max_concurrency=1)
        if not 0.0 <= self.confidence_threshold <= 1.0:
            raise ValueError(f"confidence_threshold must be within 0..1, got {self.confidence_threshold}")
        if self.step_timeout <= 0:
            raise ValueError(f"step_timeout must be positive seconds, got {self.step_timeout}")
        if not 1 <= self.min_steps <= self.max_steps:
            raise ValueError(f"need 1 <= min_steps <= max_steps, got {self.min_steps} and {self.max_steps}")
        if self.dependency_chars < 100 or self.result_chars < 100:
            raise ValueError("dependency_chars and result_chars must be at least 100")

    @property
    def recursion_limit(self) -> int:
        """LangGraph supersteps of one DAG run: per round the planner, up to two per
        step (schedule and run; one step per wave at worst) and the analyzer, plus the
        entry and the synthesis."""
        return self.max_rounds * (2 * self.max_steps + 4) + 10
