"""Unit tests of the embedded models."""
