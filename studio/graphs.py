"""The graphs LangGraph Studio serves (``langgraph dev`` in this directory).

One line per graph: :func:`reactgraph.demo.studio.studio_graph` turns a graph builder into a
LangGraph server factory that builds the graph over the demo plant's tools and the model
from the environment (or the embedded one), with the run's configuration form
(:class:`reactgraph.demo.studio.StudioContext`). List each here and in ``langgraph.json``.
"""

from reactgraph import ModelRegistry, create_dag_graph, create_react_graph
from reactgraph.demo.studio import studio_graph


def dag_graph(llm, tools, *, use_native_tools=True, abilities=None, settings=None):
    """DAG mode (SPEC §9) in Studio: the form's model is the ``general`` role; further roles
    come from ``REACTGRAPH_MODEL_<ROLE>`` (see the README's DAG section)."""
    registry = ModelRegistry.from_env(llm, abilities=abilities)
    return create_dag_graph(registry, tools, use_native_tools=use_native_tools, settings=settings)


react = studio_graph(create_react_graph)
dag = studio_graph(dag_graph)
