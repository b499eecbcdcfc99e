"""Unit tests of provider profiles and conformance against fake providers."""
