"""Graph builders: wiring only. Nodes live in :mod:`reactgraph.nodes`."""
