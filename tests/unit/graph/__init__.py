"""Unit tests of the compiled graph as a Runnable, its supersteps."""
