"""Running tools and what surrounds a call: the runner, ranking, approval, hooks, artifacts, MCP connectors."""
