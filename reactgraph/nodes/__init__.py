"""One module per graph node. Each node does one thing and returns a partial state update."""
