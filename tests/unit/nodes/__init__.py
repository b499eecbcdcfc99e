"""Unit tests of the tool loop."""
