"""Unit tests of running tools: approval, hooks and usage limits, MCP connectors."""
