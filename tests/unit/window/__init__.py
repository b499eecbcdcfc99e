"""Unit tests of the context guard."""
