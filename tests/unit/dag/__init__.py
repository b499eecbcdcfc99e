"""Unit tests of DAG mode."""
