"""Unit tests of the benches' scoring rules."""
