"""Unit tests of the exceptions, usage and limits, settings, bounds, redaction."""
