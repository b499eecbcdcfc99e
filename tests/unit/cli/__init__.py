"""Unit tests of the ``reactgraph`` command."""
