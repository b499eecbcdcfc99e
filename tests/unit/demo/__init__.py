"""Unit tests of the demo plant and the Studio graphs."""
