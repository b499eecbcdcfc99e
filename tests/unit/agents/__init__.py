"""Unit tests of the agent facades."""
