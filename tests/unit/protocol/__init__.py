"""Unit tests of what is said to a model and read back: actions, the action schema, JSON parsing, structured calls."""
