"""The graphs LangGraph Studio serves (``langgraph dev`` in this directory).

One line per graph: :func:`reactgraph.studio.studio_graph` turns a graph builder into a
LangGraph server factory that builds the graph over the demo plant's tools and the model
from the environment (or the embedded one), with the run's configuration form
(:class:`reactgraph.studio.StudioContext`). List each here and in ``langgraph.json``.
"""

from reactgraph import create_react_graph
from reactgraph.studio import studio_graph

react = studio_graph(create_react_graph)
