"""Unit tests of typed events and their SSE wire format."""
