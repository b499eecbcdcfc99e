"""Unit tests of spans, metrics and run log lines."""
