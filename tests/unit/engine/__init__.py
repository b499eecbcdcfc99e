"""Unit tests of what the nodes of one graph share: dual mode, the history fold, fallback models."""
